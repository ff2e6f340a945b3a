// Content-addressed blob store (containerd's content store): one file per digest under blobs/sha256/, so
// images that share a layer share its bytes. Writes go to an ingest file, are verified against the digest
// and size they were asked for, and only then renamed into place.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform, type Readable } from 'node:stream';

const DIGEST = /^sha256:([0-9a-f]{64})$/;

export class DigestMismatchError extends Error {}

export function sha256Digest(data: Buffer | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

export function checkDigest(digest: unknown, what = 'digest'): string {
  if (typeof digest !== 'string' || !DIGEST.test(digest)) throw new Error(`${what} ${JSON.stringify(digest)} is not a sha256 digest`);
  return digest;
}

export class ContentStore {
  constructor(readonly root: string) {
    fs.mkdirSync(path.join(root, 'blobs', 'sha256'), { recursive: true, mode: 0o700 });
    fs.mkdirSync(path.join(root, 'ingest'), { recursive: true, mode: 0o700 });
  }

  path(digest: string): string {
    return path.join(this.root, 'blobs', 'sha256', DIGEST.exec(checkDigest(digest))![1]);
  }

  has(digest: string): boolean {
    return fs.existsSync(this.path(digest));
  }

  /** Writes `source` as blob `digest`, refusing bytes that hash otherwise or run past `size` (when known). */
  async ingest(digest: string, source: Readable, size?: number): Promise<string> {
    const dest = this.path(digest);
    if (fs.existsSync(dest)) {
      source.resume();
      return dest;
    }
    const tmp = path.join(this.root, 'ingest', `${digest.slice(7, 23)}-${randomBytes(4).toString('hex')}`);
    const hash = createHash('sha256');
    let seen = 0;
    const check = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        seen += chunk.length;
        if (size !== undefined && seen > size) return cb(new DigestMismatchError(`blob ${digest} is larger than its descriptor's ${size} bytes`));
        hash.update(chunk);
        cb(null, chunk);
      },
    });
    try {
      await pipeline(source, check, fs.createWriteStream(tmp, { mode: 0o600 }));
      const got = `sha256:${hash.digest('hex')}`;
      if (got !== digest) throw new DigestMismatchError(`blob digest mismatch: expected ${digest}, got ${got}`);
      if (size !== undefined && seen !== size) throw new DigestMismatchError(`blob ${digest} has ${seen} bytes, its descriptor says ${size}`);
      await fsp.rename(tmp, dest);
      return dest;
    } catch (err) {
      await fsp.rm(tmp, { force: true });
      throw err;
    }
  }

  async put(data: Buffer): Promise<string> {
    const digest = sha256Digest(data);
    const dest = this.path(digest);
    if (!fs.existsSync(dest)) {
      const tmp = path.join(this.root, 'ingest', `${digest.slice(7, 23)}-${randomBytes(4).toString('hex')}`);
      await fsp.writeFile(tmp, data, { mode: 0o600 });
      await fsp.rename(tmp, dest);
    }
    return digest;
  }

  async delete(digest: string): Promise<void> {
    await fsp.rm(this.path(digest), { force: true });
  }

  /** Every blob digest held. */
  list(): string[] {
    return fs.readdirSync(path.join(this.root, 'blobs', 'sha256')).map((h) => `sha256:${h}`);
  }

  usage(): { bytes: number; inodes: number } {
    let bytes = 0;
    let inodes = 0;
    for (const d of this.list()) {
      bytes += fs.statSync(this.path(d)).size;
      inodes++;
    }
    return { bytes, inodes };
  }
}
