// Kubeconfig files for a cluster: one cluster (server URL + CA), one user (client certificate and key), one
// context, all named `kemu-<cluster>` as kind names its `kind-<cluster>`; and merging such a file into an
// existing kubeconfig (entries of the same name replaced, everything else kept, current-context switched).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';

export interface KubeconfigInput {
  /** The cluster's name; entries are named `kemu-<name>`. */
  name: string;
  /** https://host:port */
  server: string;
  caPem: string;
  /** Client credentials: a certificate and key, or a bearer token. */
  clientCertPem?: string;
  clientKeyPem?: string;
  token?: string;
  /** Name of the user entry (default `kemu-<name>`, or `kemu-<name>-<user>` when given). */
  user?: string;
  namespace?: string;
}

export interface Kubeconfig {
  apiVersion: 'v1';
  kind: 'Config';
  preferences: Record<string, unknown>;
  clusters: { name: string; cluster: Record<string, unknown> }[];
  users: { name: string; user: Record<string, unknown> }[];
  contexts: { name: string; context: Record<string, unknown> }[];
  'current-context': string;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

export function contextName(cluster: string): string {
  return `kemu-${cluster}`;
}

export function buildKubeconfig(input: KubeconfigInput): Kubeconfig {
  const name = contextName(input.name);
  const userName = input.user ? `${name}-${input.user}` : name;
  const user: Record<string, unknown> = {};
  if (input.clientCertPem) user['client-certificate-data'] = b64(input.clientCertPem);
  if (input.clientKeyPem) user['client-key-data'] = b64(input.clientKeyPem);
  if (input.token) user.token = input.token;
  const ctxName = input.user ? userName : name;
  return {
    apiVersion: 'v1',
    kind: 'Config',
    preferences: {},
    clusters: [{ name, cluster: { server: input.server, 'certificate-authority-data': b64(input.caPem) } }],
    users: [{ name: userName, user }],
    contexts: [{ name: ctxName, context: { cluster: name, user: userName, ...(input.namespace ? { namespace: input.namespace } : {}) } }],
    'current-context': ctxName,
  };
}

export function kubeconfigYaml(cfg: Kubeconfig): string {
  return YAML.stringify(cfg);
}

type Named = { name: string };

function upsert<T extends Named>(list: T[] | undefined, add: T[]): T[] {
  const out = [...(list ?? [])].filter((x) => x && typeof x === 'object' && !add.some((a) => a.name === x.name));
  return [...out, ...add];
}

/** `existing` (a kubeconfig's text, possibly empty) with `cfg`'s entries merged in and made current. */
export function mergeKubeconfig(existing: string, cfg: Kubeconfig): string {
  const doc = existing.trim() ? YAML.parse(existing) : {};
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new Error('the existing kubeconfig is not a YAML mapping');
  const merged = {
    apiVersion: 'v1',
    kind: 'Config',
    preferences: {},
    ...doc,
    clusters: upsert(doc.clusters, cfg.clusters),
    users: upsert(doc.users, cfg.users),
    contexts: upsert(doc.contexts, cfg.contexts),
    'current-context': cfg['current-context'],
  };
  return YAML.stringify(merged);
}

/** Removes the `kemu-<name>` entries again (on `kemu down`); the current context is cleared if it was ours. */
export function removeFromKubeconfig(existing: string, cluster: string): string {
  const doc = existing.trim() ? YAML.parse(existing) : {};
  if (doc === null || typeof doc !== 'object') return existing;
  const name = contextName(cluster);
  const keep = (x: Named) => !(x?.name === name || x?.name?.startsWith(`${name}-`));
  const out = {
    ...doc,
    clusters: (doc.clusters ?? []).filter(keep),
    users: (doc.users ?? []).filter(keep),
    contexts: (doc.contexts ?? []).filter(keep),
    'current-context': doc['current-context'] === name || String(doc['current-context'] ?? '').startsWith(`${name}-`) ? '' : doc['current-context'],
  };
  return YAML.stringify(out);
}

/** The kubeconfig path kubectl uses: $KUBECONFIG's first entry, else ~/.kube/config. */
export function defaultKubeconfigPath(env = process.env): string {
  const first = (env.KUBECONFIG ?? '').split(path.delimiter).find(Boolean);
  return first ?? path.join(os.homedir(), '.kube', 'config');
}

/** Writes a kubeconfig file owner-only (it holds a private key), atomically, never through a symlink. */
export function writeKubeconfigFile(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const st = fs.lstatSync(file, { throwIfNoEntry: false });
  if (st && !st.isFile()) throw new Error(`${file} is not a regular file; refusing to write a kubeconfig there`);
  const tmp = `${file}.kemu-${process.pid}-${Date.now()}`;
  const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o600);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}
