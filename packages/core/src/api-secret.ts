// Secret (`v1`): typed secret data, stored base64-encoded in `data`. `stringData` is a write-only
// convenience: merged into `data` on every write (overwriting keys of the same name) and never stored.
import type { KubeObject, ObjectMeta } from './api-meta.js';

/** The secret types the API server knows; any other non-empty string is accepted as a custom type. */
export const SECRET_TYPES = {
  opaque: 'Opaque',
  serviceAccountToken: 'kubernetes.io/service-account-token',
  dockercfg: 'kubernetes.io/dockercfg',
  dockerConfigJson: 'kubernetes.io/dockerconfigjson',
  basicAuth: 'kubernetes.io/basic-auth',
  sshAuth: 'kubernetes.io/ssh-auth',
  tls: 'kubernetes.io/tls',
  bootstrapToken: 'bootstrap.kubernetes.io/token',
} as const;

/** Data keys and annotations that the typed secrets require. */
export const SECRET_KEYS = {
  serviceAccountName: 'kubernetes.io/service-account.name',
  serviceAccountUID: 'kubernetes.io/service-account.uid',
  token: 'token',
  caCrt: 'ca.crt',
  namespace: 'namespace',
  dockercfg: '.dockercfg',
  dockerConfigJson: '.dockerconfigjson',
  basicAuthUsername: 'username',
  basicAuthPassword: 'password',
  sshPrivateKey: 'ssh-privatekey',
  tlsCert: 'tls.crt',
  tlsKey: 'tls.key',
} as const;

/** Largest total size of a Secret's or ConfigMap's values, in bytes (the API server's MaxSecretSize). */
export const MAX_SECRET_SIZE = 1024 * 1024;

export interface Secret extends KubeObject {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: ObjectMeta;
  /** Values base64-encoded (RFC 4648 §4), as on the wire. */
  data?: Record<string, string>;
  /** Write-only: merged into `data` on write, never returned. */
  stringData?: Record<string, string>;
  type?: string;
  immutable?: boolean;
}

/**
 * What the API server does to a Secret on write: `stringData` entries are encoded into `data`,
 * overwriting the same keys, and `stringData` is dropped; `type` defaults to Opaque.
 */
export function prepareSecret(secret: Secret): void {
  if (secret.stringData !== undefined && secret.stringData !== null && typeof secret.stringData === 'object') {
    const entries = Object.entries(secret.stringData);
    if (entries.length) {
      secret.data = { ...(secret.data ?? {}) };
      for (const [k, v] of entries) secret.data[k] = Buffer.from(String(v), 'utf8').toString('base64');
    }
    delete secret.stringData;
  }
  if (secret.type === undefined || secret.type === '') secret.type = SECRET_TYPES.opaque;
}

/** Decoded bytes of one `data` value (standard base64 with padding, as Go's encoding/json reads []byte). */
export function secretValue(secret: Pick<Secret, 'data'>, key: string): Buffer | undefined {
  const v = secret.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64');
}
