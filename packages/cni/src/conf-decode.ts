import { invalidConfig } from './errors.js';

/**
 * How a network configuration is read: the way the reference plugins' JSON decoder matches object keys to
 * the fields it knows. A key names a field when it equals the field's name or folds to it case-insensitively
 * (`HostPort`, `hostport` and `HOSTPORT` all fill `hostPort`; so do the two non-ASCII letters whose case
 * fold is an ASCII one, U+212A KELVIN SIGN for `k` and U+017F LATIN SMALL LETTER LONG S for `s`). When
 * several keys name the same field, the last one in the document wins. Runtimes rely on this: containerd
 * sends `runtimeConfig.portMappings` as `[{"HostPort":80,"ContainerPort":80,"Protocol":"tcp","HostIP":""}]`.
 *
 * One limit of reading through `JSON.parse`: a key repeated with the very same spelling keeps its first
 * position, so its last value may lose to a differently spelled key that came between the two.
 */

/** The fields of a JSON object: a nested object's fields, a list's element (`[fields]`), or `true` for a leaf. */
export type ConfFields = { readonly [name: string]: ConfField };
export type ConfField = true | ConfFields | readonly [ConfField];

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

const ASCII_RE = /^[\x00-\x7f]*$/;

/** The case fold of a key as far as it can equal an ASCII field name. */
export function foldKey(key: string): string {
  // For ASCII text, toLowerCase changes exactly A-Z: the common case without a per-character loop.
  if (ASCII_RE.test(key)) return key.toLowerCase();
  let out = '';
  for (const ch of key) {
    if (ch >= 'A' && ch <= 'Z') out += ch.toLowerCase();
    else if (ch === '\u212a') out += 'k';
    else if (ch === '\u017f') out += 's';
    else out += ch;
  }
  return out;
}

/** The value of field `name` in `o`: the last key that names it, or undefined. */
export function field(o: Record<string, unknown>, name: string): unknown {
  if (!isObj(o)) return undefined;
  let v: unknown;
  const folded = foldKey(name);
  for (const k of Object.keys(o)) if (k === name || foldKey(k) === folded) v = o[k];
  return v;
}

/**
 * Each field set's names by their case fold, worked out once per set: field sets are fixed tables (a plugin's
 * merged set is made once and kept), and this map was otherwise rebuilt for every object of every config read.
 */
const foldedNamesOf = new WeakMap<ConfFields, ReadonlyMap<string, string>>();
function foldedNames(fields: ConfFields): ReadonlyMap<string, string> {
  let m = foldedNamesOf.get(fields);
  if (!m) {
    const byFold = new Map<string, string>();
    for (const f of Object.keys(fields)) byFold.set(foldKey(f), f);
    foldedNamesOf.set(fields, (m = byFold));
  }
  return m;
}

/**
 * A copy of `value` in which every key that names one of `fields` is spelled as the field is (recursively,
 * through nested objects and lists); keys that name no field stay as they are. Later keys win, as above.
 */
export function canonicalConf(value: unknown, fields: ConfField): unknown {
  if (fields === true) return value;
  if (Array.isArray(fields)) {
    return Array.isArray(value) ? value.map((v) => canonicalConf(v, fields[0] as ConfField)) : value;
  }
  if (!isObj(value)) return value;
  const byFold = foldedNames(fields as ConfFields);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const f = Object.hasOwn(fields, k) ? k : byFold.get(foldKey(k));
    if (f === undefined) out[k] = v;
    else out[f] = canonicalConf(v, (fields as ConfFields)[f] as ConfField);
  }
  return out;
}

/** Merges field sets (a plugin's own fields over the ones every config has). */
export function mergeFields(a: ConfFields, b: ConfFields): ConfFields {
  const out: Record<string, ConfField> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const have = out[k];
    out[k] = isObj(have) && isObj(v) ? mergeFields(have as ConfFields, v as ConfFields) : v;
  }
  return out;
}

const DNS_FIELDS: ConfFields = { nameservers: true, domain: true, search: true, options: true };

/** A result of any supported version (a `prevResult`, a delegate's output). */
export const RESULT_FIELDS: ConfFields = {
  cniVersion: true,
  interfaces: [{ name: true, mac: true, mtu: true, sandbox: true, socketPath: true, pciID: true }],
  ips: [{ version: true, interface: true, address: true, gateway: true }],
  routes: [{ dst: true, gw: true, mtu: true, advmss: true, priority: true, table: true, scope: true }],
  dns: DNS_FIELDS,
};

/** The fields every plugin's network configuration has (the spec's plugin configuration object). */
export const NETCONF_FIELDS: ConfFields = {
  cniVersion: true,
  name: true,
  type: true,
  capabilities: true,
  ipam: { type: true },
  dns: DNS_FIELDS,
  args: true,
  runtimeConfig: true,
  prevResult: RESULT_FIELDS,
  'cni.dev/valid-attachments': [{ containerID: true, ifname: true }],
};

/** Typed reads of one field; each failure names the key (code 7). Keys match as described above. */
export const conf = {
  str(o: Record<string, unknown>, key: string, def?: string): string | undefined {
    const v = field(o, key);
    if (v === undefined || v === null) return def;
    if (typeof v !== 'string') throw invalidConfig(`"${key}" must be a string, got ${JSON.stringify(v)}`);
    return v;
  },
  bool(o: Record<string, unknown>, key: string, def = false): boolean {
    const v = field(o, key);
    if (v === undefined || v === null) return def;
    if (typeof v !== 'boolean') throw invalidConfig(`"${key}" must be a boolean, got ${JSON.stringify(v)}`);
    return v;
  },
  int(o: Record<string, unknown>, key: string, min: number, max: number, def?: number): number | undefined {
    const v = field(o, key);
    if (v === undefined || v === null) return def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw invalidConfig(`"${key}" must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
    }
    return v;
  },
  obj(o: Record<string, unknown>, key: string): Record<string, unknown> | undefined {
    const v = field(o, key);
    if (v === undefined || v === null) return undefined;
    if (!isObj(v)) throw invalidConfig(`"${key}" must be an object`);
    return v;
  },
  list(o: Record<string, unknown>, key: string): unknown[] | undefined {
    const v = field(o, key);
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) throw invalidConfig(`"${key}" must be a list`);
    return v;
  },
};
