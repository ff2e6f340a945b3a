// Images from local OCI image layouts and image tarballs (OCI or `docker save` format) under the image
// dir, plus synthetic images. The image dir acts as the "registry": PullImage resolves references
// against it; pulled/removed state is kept in the state dir so it survives restarts.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { readFileBounded, resolveWithin, UnsafePathError } from '@kemu/safe-fs';
import * as tar from 'tar';
import { ContentStore } from './content-store.js';
import { invalidArgument, notFound, RpcError, unavailable } from './errors.js';
import { globMatch, isImageId, normalizeRef, parseImageRef } from './image-ref.js';
import type { Credentials } from './registry-auth.js';
import { pullFromRegistry, RegistryError } from './registry-client.js';
import { writeFileAtomicSync } from './state-store.js';
import * as grpc from '@grpc/grpc-js';
import type { ImageRecord } from './types.js';

export interface ImageStoreOptions {
  imageDir?: string;
  /** Where extracted tarballs, unpacked root filesystems and images.json live. */
  stateDir?: string;
  syntheticImages?: boolean;
  /** Glob patterns (on the normalised reference) that fail to pull like an unreachable registry. */
  failImages?: string[];
  /**
   * Pull from OCI distribution registries when the image dir does not have the reference. `configPath`
   * is a containerd-style hosts directory (`<configPath>/<host>/hosts.toml`).
   */
  registry?: { configPath?: string };
}

const MT_INDEX = new Set(['application/vnd.oci.image.index.v1+json', 'application/vnd.docker.distribution.manifest.list.v2+json']);

function sha256(data: Buffer | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

function userOf(user: string | undefined): { uid?: number; username: string } {
  if (!user) return { uid: 0, username: '' };
  const u = user.split(':')[0];
  if (/^\d+$/.test(u)) return { uid: Number(u), username: '' };
  return { username: u };
}

function blobPath(layoutDir: string, digest: string): string {
  const m = /^(sha256|sha512):([0-9a-f]+)$/.exec(digest);
  if (!m) throw new Error(`bad digest ${JSON.stringify(digest)} in ${layoutDir}`);
  return path.join(layoutDir, 'blobs', m[1], m[2]);
}

/**
 * Image metadata (index, manifests, configs) is read whole into memory whenever a pull rescans the image
 * dir, so each file is bounded: 4 MiB, the manifest size the OCI distribution spec asks registries to accept.
 */
export const MAX_IMAGE_METADATA_BYTES = 4 * 1024 * 1024;

const readMetadata = (file: string, what: string) => readFileBounded(file, MAX_IMAGE_METADATA_BYTES, what);

function readVerifiedBlob(layoutDir: string, digest: string): Buffer {
  const data = readMetadata(blobPath(layoutDir, digest), `image blob ${digest} at`);
  if (digest.startsWith('sha256:') && sha256(data) !== digest) {
    throw new Error(`blob ${digest} in ${layoutDir} does not match its digest`);
  }
  return data;
}

function defaultRepository(sourcePath: string): string {
  const base = path.basename(sourcePath).replace(/(\.tar\.gz|\.tgz|\.tar|\.oci)$/, '').toLowerCase();
  return base.replace(/[^a-z0-9._-]/g, '-') || 'image';
}

function nameFromAnnotation(value: string | undefined, sourcePath: string): string | undefined {
  if (!value) return undefined;
  if (value.includes('/') || value.includes(':') || value.includes('@')) {
    try {
      return normalizeRef(value);
    } catch {
      return undefined;
    }
  }
  return normalizeRef(`${defaultRepository(sourcePath)}:${value}`);
}

function imageFromConfig(
  configBytes: Buffer,
  manifestDigest: string | undefined,
  layers: { file: string; size: number }[],
  names: string[],
  source: ImageRecord['source'],
  sourcePath: string,
  manifestSize: number,
): ImageRecord {
  const config = JSON.parse(configBytes.toString('utf8'));
  const c = config.config ?? {};
  const { uid, username } = userOf(c.User);
  const repoTags = names.filter((n) => !n.includes('@'));
  const repoDigests = manifestDigest
    ? [...new Set(repoTags.map((t) => `${parseImageRef(t).repository}@${manifestDigest}`))]
    : [];
  return {
    id: sha256(configBytes),
    repoTags,
    repoDigests,
    size: configBytes.length + manifestSize + layers.reduce((a, l) => a + l.size, 0),
    uid,
    username,
    layers: layers.map((l) => l.file),
    source,
    sourcePath,
    manifestDigest,
    config: {
      env: c.Env,
      entrypoint: c.Entrypoint,
      cmd: c.Cmd,
      workingDir: c.WorkingDir,
      user: c.User,
      exposedPorts: c.ExposedPorts ? Object.keys(c.ExposedPorts) : undefined,
      labels: c.Labels ?? undefined,
      stopSignal: c.StopSignal ?? undefined,
    },
  };
}

/** Reads every image of an OCI image layout directory. */
export function loadOciLayout(dir: string, sourcePath = dir): ImageRecord[] {
  const index = JSON.parse(readMetadata(path.join(dir, 'index.json'), 'image index').toString('utf8'));
  const out: ImageRecord[] = [];
  for (const desc of index.manifests ?? []) {
    let manifestDesc = desc;
    if (MT_INDEX.has(desc.mediaType)) {
      const inner = JSON.parse(readVerifiedBlob(dir, desc.digest).toString('utf8'));
      const pick =
        inner.manifests?.find((m: any) => m.platform?.os === 'linux' && m.platform?.architecture === 'amd64') ??
        inner.manifests?.[0];
      if (!pick) continue;
      manifestDesc = { ...pick, annotations: { ...pick.annotations, ...desc.annotations } };
    }
    const manifestBytes = readVerifiedBlob(dir, manifestDesc.digest);
    const manifest = JSON.parse(manifestBytes.toString('utf8'));
    const configBytes = readVerifiedBlob(dir, manifest.config.digest);
    const ann = desc.annotations ?? {};
    const name =
      nameFromAnnotation(ann['io.containerd.image.name'], sourcePath) ??
      nameFromAnnotation(ann['org.opencontainers.image.ref.name'], sourcePath);
    const layers = (manifest.layers ?? []).map((l: any) => ({ file: blobPath(dir, l.digest), size: l.size ?? 0 }));
    out.push(
      imageFromConfig(configBytes, manifestDesc.digest, layers, name ? [name] : [], 'oci-layout', sourcePath, manifestBytes.length),
    );
  }
  return out;
}

/** A file named by an archive's manifest.json: it must stay inside the extracted archive, links included. */
function inArchive(dir: string, name: unknown): string {
  if (typeof name !== 'string' || name === '') throw new Error(`manifest.json in ${dir} names an empty file`);
  return resolveWithin(path.join(dir, name), [dir], { what: 'file named by manifest.json' }).real;
}

/** Reads a `docker save` archive that has been extracted to `dir`. */
export function loadDockerArchive(dir: string, sourcePath: string): ImageRecord[] {
  const manifest = JSON.parse(readMetadata(path.join(dir, 'manifest.json'), 'image manifest').toString('utf8'));
  return manifest.map((entry: any) => {
    const configBytes = readMetadata(inArchive(dir, entry.Config), 'image config');
    const layers = (entry.Layers ?? []).map((l: string) => {
      const file = inArchive(dir, l);
      return { file, size: fs.statSync(file).size };
    });
    const names = (entry.RepoTags ?? []).map((t: string) => normalizeRef(t));
    return imageFromConfig(configBytes, undefined, layers, names, 'docker-archive', sourcePath, 0);
  });
}

export function isImageTarball(name: string): boolean {
  return /\.(tar|tar\.gz|tgz)$/.test(name);
}

/** Extracts an image tarball once (keyed by path, size and mtime) and reads it. */
export async function loadImageTarball(file: string, cacheDir: string): Promise<ImageRecord[]> {
  const st = fs.statSync(file);
  const key = createHash('sha256').update(`${path.resolve(file)}\0${st.size}\0${st.mtimeMs}`).digest('hex').slice(0, 24);
  const dest = path.join(cacheDir, key);
  if (!fs.existsSync(path.join(dest, '.kemu-extracted'))) {
    fs.rmSync(dest, { recursive: true, force: true });
    fs.mkdirSync(dest, { recursive: true });
    await tar.x({ file, cwd: dest, strict: true });
    fs.writeFileSync(path.join(dest, '.kemu-extracted'), '');
  }
  if (fs.existsSync(path.join(dest, 'index.json')) && fs.existsSync(path.join(dest, 'oci-layout'))) {
    return loadOciLayout(dest, file);
  }
  if (fs.existsSync(path.join(dest, 'manifest.json'))) return loadDockerArchive(dest, file);
  throw new Error(`${file} is neither an OCI image layout nor a docker image archive`);
}

/** Loads whatever `source` is (layout dir or tarball); errors name the file and the reason. */
export async function loadImageSource(source: string, cacheDir: string): Promise<ImageRecord[]> {
  const st = fs.statSync(source);
  if (st.isDirectory()) {
    if (!fs.existsSync(path.join(source, 'oci-layout'))) throw new Error(`${source} is not an OCI image layout (no oci-layout file)`);
    return loadOciLayout(source);
  }
  if (isImageTarball(source)) return loadImageTarball(source, cacheDir);
  throw new Error(`${source} is not an image: expected an OCI layout directory or a .tar/.tar.gz archive`);
}

export function syntheticImage(reference: string): ImageRecord {
  const ref = parseImageRef(reference);
  const name = `${ref.repository}${ref.tag ? `:${ref.tag}` : ''}`;
  const config = JSON.stringify({
    architecture: 'amd64',
    os: 'linux',
    config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'] },
    rootfs: { type: 'layers', diff_ids: [] },
    'kemu.synthetic': ref.repository,
  });
  const id = sha256(config);
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: id, size: config.length },
    layers: [],
    annotations: { 'org.opencontainers.image.ref.name': name },
  });
  const manifestDigest = ref.digest ?? sha256(manifest);
  return {
    id,
    repoTags: ref.tag ? [name] : [],
    repoDigests: [`${ref.repository}@${manifestDigest}`],
    size: config.length + manifest.length,
    uid: 0,
    username: '',
    layers: [],
    source: 'synthetic',
    manifestDigest,
    config: { env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'] },
  };
}

interface PersistedImages {
  /** Images added by pulls that are not backed by the image dir (synthetic), by id. */
  pulled: ImageRecord[];
  /** Image-dir images removed with RemoveImage (hidden until pulled again). */
  removed: string[];
}

export class ImageStore {
  private dirImages: ImageRecord[] = [];
  /** Why the last scan skipped entries of the image dir, so a failed pull can say so. */
  private skipped: string[] = [];
  private pulled = new Map<string, ImageRecord>();
  private removed = new Set<string>();
  private readonly stateFile?: string;
  private readonly cacheDir?: string;
  private content?: ContentStore;

  constructor(private readonly opts: ImageStoreOptions = {}) {
    if (opts.stateDir) {
      this.stateFile = path.join(opts.stateDir, 'images.json');
      this.cacheDir = path.join(opts.stateDir, 'image-cache');
    }
  }

  async load(): Promise<void> {
    if (this.stateFile && fs.existsSync(this.stateFile)) {
      const s = JSON.parse(fs.readFileSync(this.stateFile, 'utf8')) as PersistedImages;
      this.pulled = new Map(s.pulled.map((i) => [i.id, i]));
      this.removed = new Set(s.removed);
    }
    await this.scan();
  }

  /** Re-reads the image dir; images that fail to load are reported and skipped, never fatal. */
  async scan(): Promise<void> {
    const dir = this.opts.imageDir;
    if (!dir || !fs.existsSync(dir)) return;
    const cache = this.cacheDir ?? path.join(dir, '.kemu-cache');
    const found: ImageRecord[] = [];
    const skipped: string[] = [];
    for (const name of fs.readdirSync(dir).sort()) {
      if (name.startsWith('.')) continue;
      const full = path.join(dir, name);
      const st = fs.statSync(full);
      if (!(st.isDirectory() && fs.existsSync(path.join(full, 'oci-layout'))) && !(st.isFile() && isImageTarball(name))) continue;
      try {
        found.push(...(await loadImageSource(full, cache)));
      } catch (err) {
        skipped.push(`${full}: ${(err as Error).message}`);
        process.emitWarning(`skipping image ${full}: ${(err as Error).message}`);
      }
    }
    this.dirImages = mergeById(found);
    this.skipped = skipped;
  }

  private persist(): void {
    if (!this.stateFile) return;
    const s: PersistedImages = { pulled: [...this.pulled.values()], removed: [...this.removed] };
    writeFileAtomicSync(this.stateFile, JSON.stringify(s));
  }

  list(): ImageRecord[] {
    const visible = this.dirImages.filter((i) => !this.removed.has(i.id));
    return mergeById([...visible, ...this.pulled.values()]);
  }

  /** Finds a present image by reference, image id, id prefix-free hex, or repo digest. */
  resolve(refOrId: string): ImageRecord | undefined {
    return findImage(this.list(), refOrId);
  }

  private contentStore(): ContentStore {
    const base = this.opts.stateDir ?? path.join(this.opts.imageDir ?? '/tmp', '.kemu-cache');
    this.content ??= new ContentStore(path.join(base, 'content'));
    return this.content;
  }

  /** Resolves `reference` on its registry (or a mirror), fetches what the content store lacks, records the image. */
  private async pullRegistry(reference: string, normalized: string, creds?: Credentials): Promise<ImageRecord> {
    const ref = parseImageRef(normalized);
    const content = this.contentStore();
    let pulled;
    try {
      pulled = await pullFromRegistry(ref, { content, configPath: this.opts.registry?.configPath, credentials: creds });
    } catch (err) {
      const msg = `failed to pull and unpack image ${JSON.stringify(normalized)}: ${(err as Error).message}`;
      if (err instanceof RegistryError) {
        const code = { 'not-found': grpc.status.NOT_FOUND, unauthorized: grpc.status.UNAUTHENTICATED, unavailable: grpc.status.UNAVAILABLE, invalid: grpc.status.FAILED_PRECONDITION }[err.kind];
        throw new RpcError(code, msg);
      }
      throw unavailable(msg);
    }
    const layers = pulled.layers.map((l) => ({ file: content.path(l.digest), size: l.size ?? 0 }));
    const names = ref.tag ? [`${ref.repository}:${ref.tag}`] : [];
    const img = imageFromConfig(pulled.config, pulled.manifestDigest, layers, names, 'registry', reference, pulled.manifestSize);
    img.repoDigests = [`${ref.repository}@${pulled.indexDigest ?? pulled.manifestDigest}`];
    img.contentDigests = [pulled.manifestDigest, pulled.configDigest, ...pulled.layers.map((l) => l.digest), ...(pulled.indexDigest ? [pulled.indexDigest] : [])];
    // A tag moves to the new image: drop it (and the digest) from whatever held it before.
    for (const other of this.pulled.values()) {
      if (other.id === img.id) continue;
      other.repoTags = other.repoTags.filter((t) => !img.repoTags.includes(t));
    }
    const prev = this.pulled.get(img.id);
    if (prev) {
      prev.repoTags = [...new Set([...prev.repoTags, ...img.repoTags])];
      prev.repoDigests = [...new Set([...prev.repoDigests, ...img.repoDigests])];
      prev.contentDigests = [...new Set([...(prev.contentDigests ?? []), ...img.contentDigests])];
    } else this.pulled.set(img.id, img);
    this.persist();
    return this.pulled.get(img.id)!;
  }

  /** Adds images read from an OCI layout or archive (`kemu-cri images import`): blobs go to the content store. */
  async importSource(source: string): Promise<ImageRecord[]> {
    const cache = this.cacheDir ?? path.join(this.opts.imageDir ?? '/tmp', '.kemu-cache');
    const found = await loadImageSource(source, cache);
    const content = this.contentStore();
    const out: ImageRecord[] = [];
    for (const img of found) {
      const digests: string[] = [];
      const layers: string[] = [];
      for (const file of img.layers) {
        const digest = await hashFile(file);
        await content.ingest(digest, fs.createReadStream(file));
        digests.push(digest);
        layers.push(content.path(digest));
      }
      const rec: ImageRecord = { ...img, layers, contentDigests: digests, sourcePath: source };
      const prev = this.pulled.get(rec.id);
      if (prev) {
        prev.repoTags = [...new Set([...prev.repoTags, ...rec.repoTags])];
        prev.repoDigests = [...new Set([...prev.repoDigests, ...rec.repoDigests])];
      } else this.pulled.set(rec.id, rec);
      this.removed.delete(rec.id);
      out.push(this.pulled.get(rec.id)!);
    }
    this.persist();
    return out;
  }

  async pull(reference: string, creds?: Credentials): Promise<ImageRecord> {
    const normalized = normalizeRef(reference);
    for (const pattern of this.opts.failImages ?? []) {
      if (globMatch(pattern, normalized) || globMatch(pattern, reference)) {
        const repo = parseImageRef(reference).repository;
        const host = repo.split('/')[0] === 'docker.io' ? 'registry-1.docker.io' : repo.split('/')[0];
        throw unavailable(
          `failed to pull and unpack image ${JSON.stringify(normalized)}: failed to resolve reference ${JSON.stringify(normalized)}: dial tcp: lookup ${host}: no such host`,
        );
      }
    }
    let img = findImage(this.dirImages, normalized);
    if (!img) {
      await this.scan();
      img = findImage(this.dirImages, normalized);
    }
    if (img) {
      if (this.removed.delete(img.id)) this.persist();
      return img;
    }
    if (this.opts.registry) return this.pullRegistry(reference, normalized, creds);
    const existing = findImage([...this.pulled.values()], normalized);
    if (existing) return existing;
    if (this.opts.syntheticImages) {
      const synthetic = syntheticImage(reference);
      const prev = this.pulled.get(synthetic.id);
      if (prev) {
        prev.repoTags = [...new Set([...prev.repoTags, ...synthetic.repoTags])];
        prev.repoDigests = [...new Set([...prev.repoDigests, ...synthetic.repoDigests])];
      } else this.pulled.set(synthetic.id, synthetic);
      this.persist();
      return this.pulled.get(synthetic.id)!;
    }
    const unreadable = this.skipped.length
      ? ` (the image dir has ${this.skipped.length} unreadable image(s): ${this.skipped.slice(0, 3).join('; ')})`
      : '';
    throw notFound(
      `failed to pull and unpack image ${JSON.stringify(normalized)}: failed to resolve reference ${JSON.stringify(normalized)}: ${normalized}: not found${unreadable}`,
    );
  }

  /** Removes an image and every reference to it; removing a missing image succeeds. */
  async remove(refOrId: string): Promise<void> {
    if (!refOrId) throw invalidArgument('image spec must name an image');
    const img = this.resolve(refOrId);
    if (!img) return;
    if (this.pulled.delete(img.id) || this.dirImages.some((i) => i.id === img.id)) {
      if (this.dirImages.some((i) => i.id === img.id)) this.removed.add(img.id);
      this.persist();
    }
    await this.gc();
  }

  /**
   * Garbage collection: content blobs no remaining image references, and unpacked root filesystems of
   * images that are gone. The caller (RemoveImage) has already refused images that containers use.
   */
  async gc(): Promise<{ blobs: number; rootfs: number }> {
    const live = this.list();
    let blobs = 0;
    let rootfs = 0;
    if (this.content || fs.existsSync(path.join(this.baseDir(), 'content'))) {
      const content = this.contentStore();
      const keep = new Set(live.flatMap((i) => i.contentDigests ?? []));
      for (const d of content.list()) {
        if (!keep.has(d)) {
          await content.delete(d);
          blobs++;
        }
      }
    }
    const rootfsDir = path.join(this.baseDir(), 'rootfs');
    if (fs.existsSync(rootfsDir)) {
      const keep = new Set(live.map((i) => i.id.replace(/^sha256:/, '')));
      for (const name of fs.readdirSync(rootfsDir)) {
        if (keep.has(name)) continue;
        await fsp.rm(path.join(rootfsDir, name), { recursive: true, force: true });
        rootfs++;
      }
    }
    return { blobs, rootfs };
  }

  private baseDir(): string {
    return this.opts.stateDir ?? path.join(this.opts.imageDir ?? '/tmp', '.kemu-cache');
  }

  fsInfo(): { mountpoint: string; usedBytes: number; inodesUsed: number } {
    const images = this.list();
    if (this.opts.registry) {
      // The real store: content blobs plus unpacked root filesystems.
      const base = this.baseDir();
      const content = this.contentStore().usage();
      const unpacked = duUsage(path.join(base, 'rootfs'));
      return { mountpoint: base, usedBytes: content.bytes + unpacked.bytes, inodesUsed: content.inodes + unpacked.inodes };
    }
    return {
      mountpoint: this.opts.stateDir ? path.join(this.opts.stateDir, 'image-cache') : (this.opts.imageDir ?? '/'),
      usedBytes: images.reduce((a, i) => a + i.size, 0),
      inodesUsed: images.reduce((a, i) => a + i.layers.length + 2, 0),
    };
  }

  /** Unpacks the image's layers once into a root filesystem; undefined when the image has none. */
  async rootfs(img: ImageRecord): Promise<string | undefined> {
    if (img.layers.length === 0) return undefined;
    const dest = path.join(this.baseDir(), 'rootfs', img.id.replace(/^sha256:/, ''));
    const marker = path.join(dest, '.kemu-unpacked');
    if (fs.existsSync(marker)) return dest;
    await fsp.rm(dest, { recursive: true, force: true });
    await fsp.mkdir(dest, { recursive: true });
    for (const layer of img.layers) await unpackLayer(layer, dest);
    await fsp.writeFile(marker, img.id);
    return dest;
  }
}

function findImage(images: ImageRecord[], refOrId: string): ImageRecord | undefined {
  if (isImageId(refOrId)) {
    const id = refOrId.startsWith('sha256:') ? refOrId : `sha256:${refOrId}`;
    return images.find((i) => i.id === id);
  }
  let normalized: string;
  try {
    normalized = normalizeRef(refOrId);
  } catch {
    return undefined;
  }
  return images.find((i) => i.repoTags.includes(normalized) || i.repoDigests.includes(normalized));
}

function mergeById(images: ImageRecord[]): ImageRecord[] {
  const byId = new Map<string, ImageRecord>();
  for (const img of images) {
    const prev = byId.get(img.id);
    if (!prev) byId.set(img.id, { ...img, repoTags: [...img.repoTags], repoDigests: [...img.repoDigests] });
    else {
      prev.repoTags = [...new Set([...prev.repoTags, ...img.repoTags])];
      prev.repoDigests = [...new Set([...prev.repoDigests, ...img.repoDigests])];
    }
  }
  return [...byId.values()];
}

/** Applies one layer tarball: whiteout files delete what lower layers put there. */
async function unpackLayer(layer: string, dest: string): Promise<void> {
  await tar.x({
    file: layer,
    cwd: dest,
    preservePaths: false,
    filter: (p) => {
      const base = path.posix.basename(p);
      if (!base.startsWith('.wh.')) return true;
      // The whiteout's directory is resolved inside the rootfs, links included: a layer that made `etc` a
      // link to the host's /etc must not get a later whiteout to delete the host's files.
      let dir: string;
      try {
        dir = resolveWithin(path.join(dest, path.posix.dirname(p)), [dest], { allowRoot: true, what: 'whiteout directory' }).real;
      } catch (err) {
        if (err instanceof UnsafePathError) return false;
        throw err;
      }
      if (base === '.wh..wh..opq') {
        for (const e of fs.existsSync(dir) ? fs.readdirSync(dir) : []) fs.rmSync(path.join(dir, e), { recursive: true, force: true });
      } else {
        fs.rmSync(path.join(dir, base.slice(4)), { recursive: true, force: true });
      }
      return false;
    },
  });
}

/** Bytes and inodes below `dir` (lstat, no links followed); zero when it does not exist. */
function duUsage(dir: string): { bytes: number; inodes: number } {
  let bytes = 0;
  let inodes = 0;
  const walk = (d: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const full = path.join(d, e.name);
      inodes++;
      if (e.isDirectory()) walk(full);
      else if (e.isFile()) bytes += fs.lstatSync(full).size;
    }
  };
  walk(dir);
  return { bytes, inodes };
}

async function hashFile(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) h.update(chunk as Buffer);
  return `sha256:${h.digest('hex')}`;
}
