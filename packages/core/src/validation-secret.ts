// Validation of Secrets and of the data maps that Secrets and ConfigMaps share: keys, the 1 MiB limit,
// base64 values, the per-type required keys, and immutability on update.
import type { ConfigMap } from './api-core.js';
import { MAX_SECRET_SIZE, SECRET_KEYS, SECRET_TYPES, type Secret } from './api-secret.js';
import type { FieldErrors } from './field-errors.js';

const KEY_MESSAGE =
  "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
const STD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Problems of a config key (a ConfigMap, Secret or envFrom key): empty when valid. */
export function configKeyErrors(key: string): string[] {
  const out: string[] = [];
  if (key.length > 253) out.push('must be no more than 253 characters');
  if (!/^[-._a-zA-Z0-9]+$/.test(key)) out.push(KEY_MESSAGE);
  if (key === '.') out.push("must not be '.'");
  else if (key === '..') out.push("must not be '..'");
  else if (key.startsWith('..')) out.push("must not start with '..'");
  return out;
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Decoded length of standard base64, or -1 when it is not valid base64. */
function base64Length(v: unknown): number {
  if (typeof v !== 'string' || !STD_BASE64.test(v)) return -1;
  return (v.length / 4) * 3 - (v.endsWith('==') ? 2 : v.endsWith('=') ? 1 : 0);
}

export function validateConfigMapData(e: FieldErrors, cm: ConfigMap): void {
  let total = 0;
  for (const which of ['data', 'binaryData'] as const) {
    const m = cm[which] as unknown;
    if (m === undefined || m === null) continue;
    if (!isMap(m)) {
      e.invalid(which, m, 'must be a map of string to string');
      continue;
    }
    for (const [k, v] of Object.entries(m)) {
      e.check(`${which}[${k}]`, k, configKeyErrors(k));
      if (which === 'data') {
        if (typeof v !== 'string') e.invalid(`data[${k}]`, v, 'must be a string');
        else total += Buffer.byteLength(v, 'utf8');
      } else {
        if (cm.data && Object.hasOwn(cm.data, k)) e.invalid(`binaryData[${k}]`, k, 'duplicate of key present in data');
        const n = base64Length(v);
        if (n < 0) e.invalid(`binaryData[${k}]`, '<binary data>', 'must be base64-encoded (RFC 4648 §4)');
        else total += n;
      }
    }
  }
  if (total > MAX_SECRET_SIZE) e.tooLong('', MAX_SECRET_SIZE);
}

export function validateSecret(e: FieldErrors, s: Secret): void {
  const data = s.data as unknown;
  let total = 0;
  if (data !== undefined && data !== null && !isMap(data)) e.invalid('data', data, 'must be a map of string to string');
  const d: Record<string, unknown> = isMap(data) ? data : {};
  for (const [k, v] of Object.entries(d)) {
    e.check(`data[${k}]`, k, configKeyErrors(k));
    const n = base64Length(v);
    if (n < 0) e.invalid(`data[${k}]`, '<secret contents redacted>', 'must be base64-encoded (RFC 4648 §4)');
    else total += n;
  }
  if (total > MAX_SECRET_SIZE) e.tooLong('data', MAX_SECRET_SIZE);
  if (s.type !== undefined && typeof s.type !== 'string') e.invalid('type', s.type, 'must be a string');
  const has = (k: string) => Object.hasOwn(d, k);
  const decoded = (k: string) => Buffer.from(String(d[k]), 'base64').toString('utf8');
  switch (s.type) {
    case SECRET_TYPES.serviceAccountToken:
      if (!s.metadata?.annotations?.[SECRET_KEYS.serviceAccountName]) {
        e.required(`metadata.annotations[${SECRET_KEYS.serviceAccountName}]`);
      }
      break;
    case SECRET_TYPES.dockercfg:
    case SECRET_TYPES.dockerConfigJson: {
      const key = s.type === SECRET_TYPES.dockercfg ? SECRET_KEYS.dockercfg : SECRET_KEYS.dockerConfigJson;
      if (!has(key)) {
        e.required(`data[${key}]`);
        break;
      }
      try {
        JSON.parse(decoded(key));
      } catch (err) {
        e.invalid(`data[${key}]`, '<secret contents redacted>', (err as Error).message);
      }
      break;
    }
    case SECRET_TYPES.basicAuth:
      // Either may be empty, but one of the two must be there.
      if (!has(SECRET_KEYS.basicAuthUsername) && !has(SECRET_KEYS.basicAuthPassword)) {
        e.required(`data[${SECRET_KEYS.basicAuthUsername}]`);
        e.required(`data[${SECRET_KEYS.basicAuthPassword}]`);
      }
      break;
    case SECRET_TYPES.sshAuth:
      if (!has(SECRET_KEYS.sshPrivateKey) || !d[SECRET_KEYS.sshPrivateKey]) e.required(`data[${SECRET_KEYS.sshPrivateKey}]`);
      break;
    case SECRET_TYPES.tls:
      if (!has(SECRET_KEYS.tlsKey)) e.required(`data[${SECRET_KEYS.tlsKey}]`);
      if (!has(SECRET_KEYS.tlsCert)) e.required(`data[${SECRET_KEYS.tlsCert}]`);
      break;
  }
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** Update rules: `type` never changes; an immutable Secret keeps its data and stays immutable. */
export function secretUpdateErrors(e: FieldErrors, next: Secret, prev: Secret): void {
  if ((next.type ?? '') !== (prev.type ?? '')) e.invalid('type', next.type ?? '', 'field is immutable');
  if (prev.immutable === true) {
    if (!same(next.data, prev.data)) e.forbidden('data', 'field is immutable when `immutable` is set');
    if (next.immutable !== true) e.forbidden('immutable', 'field is immutable when `immutable` is set');
  }
}
