// Per-registry host configuration in containerd's `hosts.toml` layout: `<configPath>/<host[:port]>/hosts.toml`
// (or `_default/hosts.toml`) lists mirrors as `[host."URL"]` tables tried in order, then `server`, the
// upstream. A registry with no file is reached over HTTPS, except on loopback (`localhost`, 127.0.0.0/8, ::1),
// which is plain HTTP as Docker and containerd allow without configuration.
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';

export type HostCapability = 'pull' | 'resolve' | 'push';

export interface RegistryHost {
  /** Base URL of the v2 API, e.g. http://127.0.0.1:5000/v2 */
  api: URL;
  capabilities: Set<HostCapability>;
  /** PEM CA bundle(s) to trust for this host, beyond the system's. */
  ca?: Buffer[];
  skipVerify: boolean;
  headers: Record<string, string>;
  /** True for the upstream `server`, false for a mirror. */
  upstream: boolean;
}

export function isLoopbackHost(host: string): boolean {
  const name = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return name === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(name) || name === '::1';
}

function defaultServer(registry: string): string {
  if (registry === 'docker.io') return 'https://registry-1.docker.io';
  return `${isLoopbackHost(registry) ? 'http' : 'https'}://${registry}`;
}

function apiUrl(base: string, overridePath: boolean, file: string): URL {
  let u: URL;
  try {
    u = new URL(base);
  } catch {
    throw new Error(`${file}: host ${JSON.stringify(base)} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`${file}: host ${JSON.stringify(base)} must be http or https`);
  if (!overridePath) u.pathname = `${u.pathname.replace(/\/+$/, '')}/v2`;
  u.pathname = u.pathname.replace(/\/+$/, '');
  return u;
}

function caList(value: unknown, dir: string, file: string): Buffer[] | undefined {
  if (value === undefined) return undefined;
  const list = Array.isArray(value) ? value : [value];
  return list.map((p) => {
    if (typeof p !== 'string') throw new Error(`${file}: ca must be a path or a list of paths`);
    return fs.readFileSync(path.isAbsolute(p) ? p : path.join(dir, p));
  });
}

function hostFrom(url: string, table: Record<string, unknown>, upstream: boolean, dir: string, file: string): RegistryHost {
  const caps = (table.capabilities as string[] | undefined) ?? ['pull', 'resolve', 'push'];
  for (const c of caps) {
    if (c !== 'pull' && c !== 'resolve' && c !== 'push') throw new Error(`${file}: unknown capability ${JSON.stringify(c)} for ${url}`);
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries((table.header as Record<string, unknown>) ?? {})) {
    headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
  }
  return {
    api: apiUrl(url, table.override_path === true, file),
    capabilities: new Set(caps as HostCapability[]),
    ca: caList(table.ca, dir, file),
    skipVerify: table.skip_verify === true,
    headers,
    upstream,
  };
}

/** The hosts to try for `registry` (the domain of a normalised reference), mirrors first. */
export function registryHosts(registry: string, configPath?: string): RegistryHost[] {
  if (configPath) {
    for (const name of [registry.replace(/:/g, '_'), registry, '_default']) {
      if (name.includes('/') || name === '..' || name === '.') continue;
      const dir = path.join(configPath, name);
      const file = path.join(dir, 'hosts.toml');
      if (!fs.existsSync(file)) continue;
      let doc: Record<string, unknown>;
      try {
        doc = parseToml(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
      } catch (err) {
        throw new Error(`${file}: ${(err as Error).message.split('\n')[0]}`);
      }
      const hosts: RegistryHost[] = [];
      for (const [url, table] of Object.entries((doc.host as Record<string, Record<string, unknown>>) ?? {})) {
        hosts.push(hostFrom(url, table, false, dir, file));
      }
      const server = typeof doc.server === 'string' ? doc.server : name === '_default' ? defaultServer(registry) : defaultServer(registry);
      hosts.push(hostFrom(server, doc, true, dir, file));
      return hosts;
    }
  }
  return [hostFrom(defaultServer(registry), {}, true, '', 'default host')];
}
