// A CRD version's additionalPrinterColumns as a Table printer, as the CRD table convertor upstream builds it:
// Name first, then the columns (Age when none are given); `date` cells shown as ages.
import type { KubeObject } from '@kemu/core';
import { age } from '../tables/human-duration.js';
import { type Cell, column, NAME_COLUMN, type Printer } from '../tables/table.js';
import { findAll, parseJsonPath } from './jsonpath.js';
import type { CustomResourceColumnDefinition } from './types.js';

const DEFAULT_COLUMNS: CustomResourceColumnDefinition[] = [
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Time since the object was created.' },
];

function cell(type: string, v: unknown, now: number): Cell {
  switch (type) {
    case 'date':
      return typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? age(v, now) : '<invalid>';
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v) ? v : null;
    case 'number':
      return typeof v === 'number' ? v : null;
    case 'boolean':
      return typeof v === 'boolean' ? v : null;
    default:
      return typeof v === 'string' ? v : JSON.stringify(v);
  }
}

export function printerFromColumns(defs: CustomResourceColumnDefinition[] | undefined): Printer {
  const cols = defs?.length ? defs : DEFAULT_COLUMNS;
  const paths = cols.map((c) => parseJsonPath(c.jsonPath));
  return {
    columns: [NAME_COLUMN, ...cols.map((c) => column(c.name, c.type === 'date' ? 'date' : c.type, c.description ?? '', c.priority ?? 0, c.format ?? ''))],
    row(obj: KubeObject, now: number): Cell[] {
      return [obj.metadata.name ?? '', ...cols.map((c, i) => {
        const found = findAll(obj, paths[i]);
        return found.length === 0 || found[0] === undefined ? null : cell(c.type, found[0], now);
      })];
    },
  };
}
