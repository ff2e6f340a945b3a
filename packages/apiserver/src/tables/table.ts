// meta.k8s.io/v1 Table: what `kubectl get` asks for (Accept: application/json;as=Table;g=meta.k8s.io;v=v1)
// and prints as is. Each kind has a printer (columns + one row per object) registered here, as upstream's
// server-side printers are; kinds without one get the default Name / Created At table.
import type { KubeObject, ListMeta } from '@kemu/core';
import { BadRequestError } from '@kemu/core';

export interface TableColumnDefinition {
  name: string;
  /** OpenAPI type of the cells: string, integer, number, boolean, date. */
  type: string;
  /** `name` for the object's name column; `date` cells are RFC 3339. */
  format: string;
  description: string;
  /** 0: shown by default; higher: shown with `-o wide`. */
  priority: number;
}

export type Cell = string | number | boolean | null;

export interface TableRow {
  cells: Cell[];
  conditions?: { type: string; status: string }[];
  object?: unknown;
}

export interface Table {
  kind: 'Table';
  apiVersion: 'meta.k8s.io/v1';
  metadata: ListMeta;
  columnDefinitions: TableColumnDefinition[];
  rows: TableRow[];
}

/** A kind's columns and how one object fills them. */
export interface Printer {
  columns: TableColumnDefinition[];
  row(obj: KubeObject, now: number): Cell[];
  /** Extra row conditions (upstream marks finished pods `Completed`). */
  conditions?(obj: KubeObject): TableRow['conditions'];
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** One column; `priority` 1 is a `-o wide` column. */
export function column(name: string, type: string, description: string, priority = 0, format = ''): TableColumnDefinition {
  return { name, type, format, description, priority };
}

export const NAME_COLUMN = column('Name', 'string', 'Name of the object, unique in its namespace.', 0, 'name');

const printers = new Map<string, Printer>();

/** Register the printer of a kind (`apps/v1/Deployment` keyed as `Deployment` in its apiVersion). */
export function registerPrinter(apiVersion: string, kind: string, printer: Printer): void {
  printers.set(`${apiVersion}|${kind}`, printer);
}

export function unregisterPrinter(apiVersion: string, kind: string): void {
  printers.delete(`${apiVersion}|${kind}`);
}

const DEFAULT_PRINTER: Printer = {
  columns: [NAME_COLUMN, column('Created At', 'date', 'When the object was created.')],
  row: (o) => [o.metadata.name ?? '', o.metadata.creationTimestamp ?? null],
};

export function printerFor(apiVersion: string, kind: string): Printer {
  return printers.get(`${apiVersion}|${kind}`) ?? DEFAULT_PRINTER;
}

/** The `includeObject` query parameter: Metadata when absent, as upstream. */
export function parseIncludeObject(v: string | null | undefined): IncludeObject {
  if (v === null || v === undefined || v === '') return 'Metadata';
  if (v === 'None' || v === 'Metadata' || v === 'Object') return v;
  throw new BadRequestError(`includeObject: unsupported value "${v}", supported values: "None", "Metadata", "Object"`);
}

export interface TableOptions {
  includeObject?: IncludeObject;
  /** Leave columnDefinitions out (watch events after the first, as upstream). */
  noHeaders?: boolean;
  /** List metadata to carry (resourceVersion, continue). */
  listMeta?: ListMeta;
  now?: number;
}

/** A Table of objects of one kind (a list, one object, or one watch event's object). */
export function buildTable(apiVersion: string, kind: string, objects: readonly KubeObject[], opts: TableOptions = {}): Table {
  const printer = printerFor(apiVersion, kind);
  const now = opts.now ?? Date.now();
  const include = opts.includeObject ?? 'Metadata';
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: opts.listMeta ?? {},
    columnDefinitions: opts.noHeaders ? [] : printer.columns,
    rows: objects.map((o) => {
      const row: TableRow = { cells: printer.row(o, now) };
      const conditions = printer.conditions?.(o);
      if (conditions) row.conditions = conditions;
      if (include === 'Object') row.object = o;
      else if (include === 'Metadata') row.object = { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata };
      return row;
    }),
  };
}

/** Whether an Accept header asks for a Table (`as=Table;g=meta.k8s.io;v=v1` or `v1beta1`). */
export function acceptsTable(accept: string | undefined): 'v1' | 'v1beta1' | undefined {
  for (const part of (accept ?? '').split(',')) {
    const params = new Map(
      part
        .split(';')
        .slice(1)
        .map((p) => p.trim().split('=') as [string, string]),
    );
    if (params.get('as') === 'Table' && params.get('g') === 'meta.k8s.io') {
      const v = params.get('v');
      if (v === 'v1' || v === 'v1beta1') return v;
    }
  }
  return undefined;
}
