// Registry credentials for an image from the pod's imagePullSecrets, matched as the kubelet's docker
// keyring matches them: a key is a registry host (glob labels like `*.example.com` allowed, port must
// match) with an optional path prefix, `/v1/` and `/v2/` meaning the host itself; an image without a
// registry host is on Docker Hub (`index.docker.io`). Longer keys are tried first.
import type { Secret } from '@kemu/core';
import type { cri } from '@kemu/proto';

const DEFAULT_REGISTRY = 'index.docker.io';

interface Entry {
  username?: string;
  password?: string;
  auth?: string;
  identitytoken?: string;
  registrytoken?: string;
}

/** The `auths` of a dockerconfigjson secret or the map of a legacy dockercfg one; empty when unreadable. */
export function dockerConfigOf(secret: Secret): Record<string, Entry> {
  const raw = (key: string) => (secret.data?.[key] === undefined ? undefined : Buffer.from(secret.data[key], 'base64').toString('utf8'));
  try {
    if (secret.type === 'kubernetes.io/dockerconfigjson') return JSON.parse(raw('.dockerconfigjson') ?? '{}').auths ?? {};
    if (secret.type === 'kubernetes.io/dockercfg') return JSON.parse(raw('.dockercfg') ?? '{}');
  } catch {
    // validation refuses bad JSON on write; a secret that still does not parse contributes nothing
  }
  return {};
}

function parseSchemeless(s: string): { host: string; path: string } {
  const noScheme = s.replace(/^[a-z]+:\/\//i, '');
  const slash = noScheme.indexOf('/');
  return slash < 0 ? { host: noScheme, path: '' } : { host: noScheme.slice(0, slash), path: noScheme.slice(slash) };
}

/** The keyring key of a config entry: host plus path prefix, `/v1/` and `/v2/` dropped. */
function keyOf(loc: string): string {
  const { host, path } = parseSchemeless(loc);
  let p = path;
  if (p.startsWith('/v2/') || p.startsWith('/v1/')) p = p.slice(3);
  return p && p !== '/' ? host + p : host;
}

function globLabel(glob: string, label: string): boolean {
  const re = new RegExp(`^${glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^.]*').replace(/\?/g, '[^.]')}$`);
  return re.test(label);
}

function matches(key: string, image: string): boolean {
  const k = parseSchemeless(key);
  const t = parseSchemeless(image);
  const [kHost, kPort = ''] = k.host.split(':');
  const [tHost, tPort = ''] = t.host.split(':');
  if (kPort !== tPort) return false;
  const kl = kHost.split('.');
  const tl = tHost.split('.');
  if (kl.length !== tl.length || !kl.every((g, i) => globLabel(g, tl[i]))) return false;
  return t.path.startsWith(k.path);
}

/** Whether the image's registry is Docker Hub (no registry host in the name, or docker.io itself). */
export function isDefaultRegistry(image: string): boolean {
  const first = image.split('/')[0];
  const hasHost = image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  return !hasHost || first === 'docker.io' || first === DEFAULT_REGISTRY;
}

function authConfig(key: string, e: Entry): cri.AuthConfig {
  let { username, password } = e;
  if (e.auth) {
    const decoded = Buffer.from(e.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon >= 0) {
      username = decoded.slice(0, colon);
      password = decoded.slice(colon + 1);
    }
  }
  return {
    username: username ?? '',
    password: password ?? '',
    serverAddress: key,
    identityToken: e.identitytoken ?? '',
    registryToken: e.registrytoken ?? '',
  };
}

/** Every credential that applies to `image`, most specific key first; empty when none does. */
export function pullCredentials(image: string, secrets: Secret[]): cri.AuthConfig[] {
  const byKey = new Map<string, cri.AuthConfig[]>();
  for (const s of secrets) {
    for (const [loc, entry] of Object.entries(dockerConfigOf(s))) {
      const key = keyOf(loc);
      byKey.set(key, [...(byKey.get(key) ?? []), authConfig(key, entry)]);
    }
  }
  const keys = [...byKey.keys()].sort().reverse();
  const out = keys.filter((k) => matches(k, image)).flatMap((k) => byKey.get(k)!);
  if (out.length) return out;
  if (isDefaultRegistry(image)) return byKey.get(DEFAULT_REGISTRY) ?? byKey.get('docker.io') ?? [];
  return [];
}
