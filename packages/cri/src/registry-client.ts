// Pulls an image from an OCI distribution (v2) registry into the content store: resolve the reference to a
// manifest (choosing this platform's entry from an index), then fetch the config and layers by digest.
// Every manifest and blob is verified against its digest; mirrors from hosts.toml are tried before the
// upstream, each host with its own auth.
import { readFile } from 'node:fs/promises';
import type { ContentStore } from './content-store.js';
import { checkDigest, sha256Digest } from './content-store.js';
import { basicAuth, type Credentials, parseWwwAuthenticate } from './registry-auth.js';
import { type HttpResponse, readBody, registryRequest } from './registry-http.js';
import { type RegistryHost, registryHosts } from './registry-hosts.js';
import type { ParsedRef } from './image-ref.js';

export const MT_OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const MT_OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
export const MT_DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';
export const MT_DOCKER_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json';
const INDEX_TYPES = new Set([MT_OCI_INDEX, MT_DOCKER_LIST]);
const MANIFEST_TYPES = new Set([MT_OCI_MANIFEST, MT_DOCKER_MANIFEST]);
/** The manifest size the distribution spec asks registries to accept; anything larger is refused. */
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

export function hostPlatform(): Platform {
  const arch = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x' }[process.arch as string] ?? process.arch;
  return { os: 'linux', architecture: arch };
}

export interface Descriptor {
  mediaType?: string;
  digest: string;
  size: number;
  platform?: Platform;
  annotations?: Record<string, string>;
}

export interface RegistryPullOptions {
  content: ContentStore;
  /** containerd-style hosts directory (`<dir>/<host>/hosts.toml`). */
  configPath?: string;
  credentials?: Credentials;
  platform?: Platform;
}

export interface PulledImage {
  manifestDigest: string;
  /** The index the reference resolved to, when it was one (the digest a repo digest names). */
  indexDigest?: string;
  manifestSize: number;
  configDigest: string;
  config: Buffer;
  layers: Descriptor[];
  /** The host URL the manifest came from (a mirror or the upstream). */
  endpoint: string;
}

/** A pull failure with the reason class the CRI error code is chosen from. */
export class RegistryError extends Error {
  constructor(
    message: string,
    readonly kind: 'not-found' | 'unauthorized' | 'unavailable' | 'invalid',
  ) {
    super(message);
  }
}

class HostSession {
  private authorization?: string;

  constructor(
    readonly host: RegistryHost,
    private readonly repo: string,
    private readonly registry: string,
    private readonly creds?: Credentials,
  ) {}

  url(kind: 'manifests' | 'blobs', ref: string): URL {
    const u = new URL(`${this.host.api.href}/${this.repo}/${kind}/${ref}`);
    if (!this.host.upstream) u.searchParams.set('ns', this.registry);
    return u;
  }

  async get(url: URL, accept?: string): Promise<HttpResponse> {
    const headers: Record<string, string> = {};
    if (accept) headers.Accept = accept;
    if (this.authorization) headers.Authorization = this.authorization;
    let res = await registryRequest(url, this.host, headers);
    if (res.status === 401) {
      const challenge = parseWwwAuthenticate(String(res.headers['www-authenticate'] ?? ''));
      res.body.resume();
      this.authorization = await this.authorize(challenge, url);
      res = await registryRequest(url, this.host, { ...headers, Authorization: this.authorization });
      if (res.status === 401) {
        res.body.resume();
        throw new RegistryError(`${url.href}: 401 Unauthorized${this.creds ? ' (credentials refused)' : ' (no credentials given)'}`, 'unauthorized');
      }
    }
    return res;
  }

  private async authorize(challenges: ReturnType<typeof parseWwwAuthenticate>, url: URL): Promise<string> {
    const bearer = challenges.find((c) => c.scheme === 'bearer');
    if (bearer) {
      if (this.creds?.registryToken) return `Bearer ${this.creds.registryToken}`;
      const realm = bearer.params.realm;
      if (!realm) throw new RegistryError(`${url.href}: bearer challenge without a realm`, 'unauthorized');
      const tokenUrl = new URL(realm);
      if (bearer.params.service) tokenUrl.searchParams.set('service', bearer.params.service);
      tokenUrl.searchParams.set('scope', bearer.params.scope ?? `repository:${this.repo}:pull`);
      const headers: Record<string, string> = {};
      if (this.creds?.username) headers.Authorization = basicAuth(this.creds);
      const res = await registryRequest(tokenUrl, this.host, headers);
      const body = await readBody(res, 1024 * 1024);
      if (res.status !== 200) {
        throw new RegistryError(`token request to ${tokenUrl.origin}${tokenUrl.pathname} failed: ${res.status} ${body.toString('utf8').slice(0, 200)}`, 'unauthorized');
      }
      const json = JSON.parse(body.toString('utf8')) as { token?: string; access_token?: string };
      const token = json.token ?? json.access_token;
      if (!token) throw new RegistryError(`token response from ${tokenUrl.origin} has no token`, 'unauthorized');
      return `Bearer ${token}`;
    }
    if (challenges.some((c) => c.scheme === 'basic')) {
      if (!this.creds?.username) throw new RegistryError(`${url.href}: 401 Unauthorized (basic auth required, no credentials given)`, 'unauthorized');
      return basicAuth(this.creds);
    }
    throw new RegistryError(`${url.href}: 401 Unauthorized with no usable challenge`, 'unauthorized');
  }

  /** GETs a manifest or index, verifying it against `expect` (a digest reference) when given. */
  async manifest(ref: string, expect?: string): Promise<{ bytes: Buffer; digest: string; mediaType: string }> {
    const url = this.url('manifests', ref);
    const res = await this.get(url, [MT_OCI_INDEX, MT_OCI_MANIFEST, MT_DOCKER_LIST, MT_DOCKER_MANIFEST].join(', '));
    if (res.status === 404) {
      res.body.resume();
      throw new RegistryError(`${url.origin}${url.pathname}: not found`, 'not-found');
    }
    if (res.status !== 200) {
      const body = await readBody(res, 64 * 1024).catch(() => Buffer.alloc(0));
      // Digest and format problems are 'invalid'; an HTTP failure of the host (a 400 from a TLS port spoken to
      // in plain HTTP, a 5xx) leaves the image unavailable from there.
      throw new RegistryError(`${url.origin}${url.pathname}: ${res.status} ${body.toString('utf8').trim().slice(0, 200)}`, res.status === 403 ? 'unauthorized' : 'unavailable');
    }
    const bytes = await readBody(res, MAX_MANIFEST_BYTES);
    const digest = sha256Digest(bytes);
    if (expect && digest !== expect) throw new RegistryError(`manifest digest mismatch for ${url.href}: expected ${expect}, got ${digest}`, 'invalid');
    const header = res.headers['docker-content-digest'];
    if (typeof header === 'string' && header.startsWith('sha256:') && header !== digest) {
      throw new RegistryError(`manifest from ${url.origin}${url.pathname} hashes to ${digest}, the registry says ${header}`, 'invalid');
    }
    let mediaType = String(res.headers['content-type'] ?? '').split(';')[0].trim();
    try {
      const parsed = JSON.parse(bytes.toString('utf8')) as { mediaType?: string; manifests?: unknown };
      if (parsed.mediaType) mediaType = parsed.mediaType;
      else if (!INDEX_TYPES.has(mediaType) && !MANIFEST_TYPES.has(mediaType)) mediaType = parsed.manifests ? MT_OCI_INDEX : MT_OCI_MANIFEST;
    } catch {
      throw new RegistryError(`manifest from ${url.href} is not JSON`, 'invalid');
    }
    return { bytes, digest, mediaType };
  }

  async blob(content: ContentStore, desc: Descriptor): Promise<void> {
    checkDigest(desc.digest, 'blob digest');
    if (content.has(desc.digest)) return;
    const url = this.url('blobs', desc.digest);
    const res = await this.get(url);
    if (res.status !== 200) {
      res.body.resume();
      throw new RegistryError(`${url.origin}${url.pathname}: ${res.status}`, res.status === 404 ? 'not-found' : 'unavailable');
    }
    await content.ingest(desc.digest, res.body, typeof desc.size === 'number' ? desc.size : undefined);
  }
}

function matchPlatform(list: Descriptor[], want: Platform): Descriptor | undefined {
  const ok = list.filter((d) => d.platform?.os === want.os && d.platform?.architecture === want.architecture);
  if (want.variant) return ok.find((d) => d.platform?.variant === want.variant) ?? ok[0];
  return ok.find((d) => !d.platform?.variant) ?? ok[0];
}

/** Splits `domain/path` into the registry host and the repository path on it. */
export function registryOf(repository: string): { registry: string; repo: string } {
  const slash = repository.indexOf('/');
  return { registry: repository.slice(0, slash), repo: repository.slice(slash + 1) };
}

export async function pullFromRegistry(ref: ParsedRef, opts: RegistryPullOptions): Promise<PulledImage> {
  const { registry, repo } = registryOf(ref.repository);
  const hosts = registryHosts(registry, opts.configPath);
  const platform = opts.platform ?? hostPlatform();
  const failures: string[] = [];
  let lastKind: RegistryError['kind'] = 'unavailable';
  for (const host of hosts) {
    if (!host.capabilities.has('pull') || (!ref.digest && !host.capabilities.has('resolve'))) continue;
    const s = new HostSession(host, repo, registry, opts.credentials);
    try {
      let m = await s.manifest(ref.digest ?? ref.tag ?? 'latest', ref.digest);
      await opts.content.put(m.bytes);
      let indexDigest: string | undefined;
      if (INDEX_TYPES.has(m.mediaType)) {
        indexDigest = m.digest;
        const index = JSON.parse(m.bytes.toString('utf8')) as { manifests?: Descriptor[] };
        const pick = matchPlatform(index.manifests ?? [], platform);
        if (!pick) {
          throw new RegistryError(
            `no manifest for platform ${platform.os}/${platform.architecture} in index ${m.digest} (has ${(index.manifests ?? []).map((d) => `${d.platform?.os}/${d.platform?.architecture}`).join(', ') || 'none'})`,
            'not-found',
          );
        }
        m = await s.manifest(checkDigest(pick.digest, 'index entry digest'), pick.digest);
        await opts.content.put(m.bytes);
      }
      if (!MANIFEST_TYPES.has(m.mediaType)) throw new RegistryError(`unsupported manifest media type ${JSON.stringify(m.mediaType)}`, 'invalid');
      const manifest = JSON.parse(m.bytes.toString('utf8')) as { config?: Descriptor; layers?: Descriptor[] };
      if (!manifest.config?.digest) throw new RegistryError(`manifest ${m.digest} has no config`, 'invalid');
      const layers = (manifest.layers ?? []).filter((l) => !String(l.mediaType ?? '').includes('nondistributable') && !String(l.mediaType ?? '').includes('foreign'));
      await s.blob(opts.content, manifest.config);
      for (const l of layers) await s.blob(opts.content, l);
      const config = await readFile(opts.content.path(manifest.config.digest));
      return { manifestDigest: m.digest, indexDigest, manifestSize: m.bytes.length, configDigest: manifest.config.digest, config, layers, endpoint: host.api.origin };
    } catch (err) {
      const kind = err instanceof RegistryError ? err.kind : 'unavailable';
      if (host.upstream || kind === 'invalid') lastKind = kind;
      failures.push(`${host.api.origin}: ${(err as Error).message}`);
      // A digest that does not verify is never retried elsewhere under the same name silently.
      if (kind === 'invalid' && host.upstream) break;
    }
  }
  if (failures.length === 0) throw new RegistryError(`no host configured for ${registry} can pull`, 'unavailable');
  throw new RegistryError(failures.join('; '), lastKind);
}
