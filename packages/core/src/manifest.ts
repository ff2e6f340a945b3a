// Kubernetes manifests: multi-document YAML, JSON objects, JSON arrays and `List` kinds, checked against
// the kind registry and validated with field paths.
import { parseAllDocuments, stringify } from 'yaml';
import type { KubeObject } from './api-meta.js';
import { BadRequestError, InvalidError, type StatusCause } from './errors.js';
import { lookupKind } from './kinds.js';
import { applyDefaults } from './defaults.js';
import { validationErrors } from './validation.js';

export class ManifestError extends BadRequestError {
  constructor(
    message: string,
    readonly source: string,
    readonly document: number,
    readonly causes: StatusCause[] = [],
  ) {
    super(message);
    this.name = 'ManifestError';
  }
}

export interface ParseManifestOptions {
  /** Shown in messages, e.g. the file name. */
  source?: string;
  /** Check each object with defaulting + validation (default true). */
  validate?: boolean;
}

function flatten(doc: unknown, out: unknown[]): void {
  if (Array.isArray(doc)) for (const d of doc) flatten(d, out);
  else if (doc && typeof doc === 'object' && typeof (doc as KubeObject).kind === 'string' && (doc as KubeObject).kind.endsWith('List') && Array.isArray((doc as { items?: unknown }).items)) {
    for (const d of (doc as { items: unknown[] }).items) flatten(d, out);
  } else if (doc !== null && doc !== undefined) out.push(doc);
}

/**
 * Parse one or more objects. Throws ManifestError naming the source and document for syntax errors,
 * unknown kinds and invalid objects, before anything is returned (all or nothing).
 */
export function parseManifests(text: string, opts: ParseManifestOptions = {}): KubeObject[] {
  const source = opts.source ?? '<input>';
  const raw = parseRaw(text, source);
  const objs: KubeObject[] = [];
  raw.forEach((o, i) => objs.push(checkDocument(o, i, raw.length, source, opts)));
  return objs;
}

/**
 * Parse several objects and check each on its own, as `kubectl apply -f` treats a multi-document file: the
 * valid ones are returned, every invalid one is reported (unknown kind, missing fields, field errors worded
 * as the API server words them). Syntax errors still fail the whole input.
 */
export function parseManifestsEach(text: string, opts: ParseManifestOptions = {}): { objects: KubeObject[]; errors: ManifestError[] } {
  const source = opts.source ?? '<input>';
  const raw = parseRaw(text, source);
  const objects: KubeObject[] = [];
  const errors: ManifestError[] = [];
  raw.forEach((o, i) => {
    try {
      objects.push(checkDocument(o, i, raw.length, source, opts));
    } catch (e) {
      if (!(e instanceof ManifestError)) throw e;
      const obj = o as KubeObject;
      if (e.causes.length) {
        const detail = e.causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
        const joined = detail.length === 1 ? detail[0] : `[${detail.join(', ')}]`;
        errors.push(new ManifestError(`The ${obj.kind} "${obj.metadata?.name ?? obj.metadata?.generateName ?? ''}" is invalid: ${joined}`, source, i + 1, e.causes));
      } else errors.push(e);
    }
  });
  return { objects, errors };
}

function parseRaw(text: string, source: string): unknown[] {
  const raw: unknown[] = [];
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      flatten(JSON.parse(text), raw);
    } catch (e) {
      if (!(e instanceof SyntaxError)) throw e;
      // Not strict JSON: YAML is a superset, let the YAML parser report precisely.
      raw.length = 0;
      parseYaml(text, source, raw);
    }
  } else parseYaml(text, source, raw);
  return raw;
}

/** Check one document; throws ManifestError naming the source and document. */
function checkDocument(o: unknown, i: number, count: number, source: string, opts: ParseManifestOptions): KubeObject {
  const where = count > 1 ? `${source} (document ${i + 1})` : source;
  if (!o || typeof o !== 'object' || Array.isArray(o)) {
    throw new ManifestError(`error validating "${where}": expected an object, got ${Array.isArray(o) ? 'an array' : typeof o}`, source, i + 1);
  }
  const obj = o as KubeObject;
  if (!obj.apiVersion) throw new ManifestError(`error validating "${where}": apiVersion not set`, source, i + 1);
  if (!obj.kind) throw new ManifestError(`error validating "${where}": kind not set`, source, i + 1);
  const info = lookupKind(obj.kind);
  if (!info) {
    throw new ManifestError(`error: resource mapping not found for kind "${obj.kind}" in "${where}": no matches for kind "${obj.kind}" in version "${obj.apiVersion}"`, source, i + 1);
  }
  if (info.apiVersion !== obj.apiVersion) {
    throw new ManifestError(`error: resource mapping not found for kind "${obj.kind}" in "${where}": no matches for kind "${obj.kind}" in version "${obj.apiVersion}" (expected ${info.apiVersion})`, source, i + 1);
  }
  if (!obj.metadata || typeof obj.metadata !== 'object') {
    throw new ManifestError(`error validating "${where}": metadata not set`, source, i + 1);
  }
  if (opts.validate !== false) {
    const probe = JSON.parse(JSON.stringify(obj)) as KubeObject;
    if (info.namespaced) probe.metadata.namespace ||= 'default';
    if (!probe.metadata.name && probe.metadata.generateName) probe.metadata.name = `${probe.metadata.generateName}x`;
    applyDefaults(probe);
    const causes = validationErrors(probe);
    if (causes.length) {
      const inv = new InvalidError(obj.kind, obj.metadata.name ?? obj.metadata.generateName ?? '', info.group, causes);
      throw new ManifestError(`error validating "${where}": ${inv.message}`, source, i + 1, causes);
    }
  }
  return obj;
}

function parseYaml(text: string, source: string, out: unknown[]): void {
  const docs = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [docs];
  list.forEach((d, i) => {
    if (d.errors.length) {
      const err = d.errors[0];
      const line = err.linePos?.[0];
      const at = line ? ` line ${line.line} column ${line.col}` : '';
      throw new ManifestError(
        `error parsing "${source}"${list.length > 1 ? ` (document ${i + 1})` : ''}:${at}: ${err.message.split('\n')[0]}`,
        source,
        i + 1,
      );
    }
    flatten(d.toJS({ maxAliasCount: 100 }), out);
  });
}

/** Serialise objects as multi-document YAML. */
export function toYaml(objs: KubeObject | KubeObject[]): string {
  const list = Array.isArray(objs) ? objs : [objs];
  return list.map((o) => stringify(o, { lineWidth: 0 })).join('---\n');
}
