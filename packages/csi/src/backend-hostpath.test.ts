import { promises as fs } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { HostPathBackend } from './backend-hostpath.js';
import type { BackendVolume } from './backend.js';
import { canMount, isMountPoint } from './mount.js';
import { AccessMode, type Capability } from './types.js';
import { MiB, tmpDir } from './test-support.js';

const bindMounts = requirePeers('the hostpath bind-mount tests', [peers.root]) && canMount;

const cap: Capability = { accessType: 'mount', accessMode: AccessMode.SINGLE_NODE_WRITER };
const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await fs.rm(d, { recursive: true, force: true });
});

async function backend(useMounts?: boolean) {
  const dir = tmpDir('hp');
  dirs.push(dir);
  const b = new HostPathBackend({ dir: path.join(dir, 'state'), useMounts });
  await b.init();
  return { b, dir };
}

describe('HostPathBackend', () => {
  it('snapshots a directory volume as a tar archive and restores and clones its content', async () => {
    const { b, dir } = await backend();
    const v: BackendVolume = { id: 'v1', accessType: 'mount', capacityBytes: MiB };
    await b.createVolume(v);
    await fs.mkdir(path.join(b.dataPath(v), 'sub'));
    await fs.writeFile(path.join(b.dataPath(v), 'sub', 'f.txt'), 'payload');
    await b.createSnapshot('s1', v);
    expect(await fs.readdir(path.join(dir, 'state', 'snapshots'))).toEqual(['s1.tar']);
    await fs.writeFile(path.join(b.dataPath(v), 'sub', 'f.txt'), 'changed later');
    const r: BackendVolume = { id: 'r1', accessType: 'mount', capacityBytes: MiB };
    await b.createVolume(r, { snapshotId: 's1' });
    expect(await fs.readFile(path.join(b.dataPath(r), 'sub', 'f.txt'), 'utf8')).toBe('payload');
    const cl: BackendVolume = { id: 'c1', accessType: 'mount', capacityBytes: MiB };
    await b.createVolume(cl, { volume: v });
    expect(await fs.readFile(path.join(b.dataPath(cl), 'sub', 'f.txt'), 'utf8')).toBe('changed later');
  });

  it('preallocates block images, grows them, and restores them from a snapshot', async () => {
    const { b } = await backend();
    const v: BackendVolume = { id: 'b1', accessType: 'block', capacityBytes: 2 * MiB };
    await b.createVolume(v);
    const st = await fs.stat(b.dataPath(v));
    expect(st.size).toBe(2 * MiB);
    const fh = await fs.open(b.dataPath(v), 'r+');
    await fh.write(Buffer.from('BLOCKDATA'), 0, 9, 4096);
    await fh.close();
    await b.expandVolume(v, 3 * MiB);
    expect((await fs.stat(b.dataPath(v))).size).toBe(3 * MiB);
    await b.createSnapshot('bs', { ...v, capacityBytes: 3 * MiB });
    const r: BackendVolume = { id: 'b2', accessType: 'block', capacityBytes: 4 * MiB };
    await b.createVolume(r, { snapshotId: 'bs' });
    const data = await fs.readFile(b.dataPath(r));
    expect(data.length).toBe(4 * MiB);
    expect(data.subarray(4096, 4105).toString()).toBe('BLOCKDATA');
  });

  it('leaves nothing behind when a create fails, and reconcile drops data no record refers to', async () => {
    const { b, dir } = await backend();
    const v: BackendVolume = { id: 'x', accessType: 'mount', capacityBytes: MiB };
    await expect(b.createVolume(v, { snapshotId: 'missing' })).rejects.toThrow(/ENOENT/);
    expect(await fs.readdir(path.join(dir, 'state', 'volumes'))).toEqual([]);
    await b.createVolume({ id: 'keep', accessType: 'mount', capacityBytes: MiB });
    await b.createVolume({ id: 'orphan', accessType: 'block', capacityBytes: MiB });
    await fs.mkdir(path.join(dir, 'state', 'volumes', '.half.creating'));
    await fs.writeFile(path.join(dir, 'state', 'snapshots', 'gone.tar.tmp'), '');
    await b.reconcile(new Set(['keep']), new Set());
    expect(await fs.readdir(path.join(dir, 'state', 'volumes'))).toEqual(['keep']);
    expect(await fs.readdir(path.join(dir, 'state', 'snapshots'))).toEqual([]);
  });

  it('without mount privileges publishes as a symbolic link and unpublish removes only the link', async () => {
    const { b, dir } = await backend(false);
    const v: BackendVolume = { id: 'v', accessType: 'mount', capacityBytes: MiB };
    await b.createVolume(v);
    await fs.writeFile(path.join(b.dataPath(v), 'keep.txt'), 'data');
    const target = path.join(dir, 'pods', 'p', 'mount');
    await fs.mkdir(target, { recursive: true });
    await b.publish(v, { targetPath: target, pathRoot: dir, readonly: false, capability: cap });
    expect((await fs.lstat(target)).isSymbolicLink()).toBe(true);
    expect(await fs.readFile(path.join(target, 'keep.txt'), 'utf8')).toBe('data');
    expect(await b.condition(v, target)).toEqual({ abnormal: false, message: 'volume is healthy' });
    await b.unpublish(v, target);
    await expect(fs.lstat(target)).rejects.toThrow(/ENOENT/);
    expect(await fs.readFile(path.join(b.dataPath(v), 'keep.txt'), 'utf8')).toBe('data');
  });

  describe.runIf(bindMounts)('with bind mounts (root)', () => {
    it('stages and publishes with bind mounts, applies mount flags and the fs group, and unmounts', async () => {
      const { b, dir } = await backend(true);
      const v: BackendVolume = { id: 'v', accessType: 'mount', capacityBytes: MiB };
      await b.createVolume(v);
      const staging = path.join(dir, 'staging');
      const target = path.join(dir, 'pods', 'p', 'mount');
      await b.stage(v, staging, cap, dir);
      expect(await isMountPoint(staging)).toBe(true);
      const c: Capability = { ...cap, mountFlags: ['noexec', 'nosuid'], volumeMountGroup: '1234' };
      await b.publish(v, { targetPath: target, pathRoot: dir, stagingPath: staging, readonly: false, capability: c });
      expect(await isMountPoint(target)).toBe(true);
      const info = await fs.readFile('/proc/self/mountinfo', 'utf8');
      const line = info.split('\n').find((l) => l.split(' ')[4] === target)!;
      expect(line.split(' ')[5]).toMatch(/noexec/);
      expect(line.split(' ')[5]).toMatch(/nosuid/);
      const st = await fs.stat(target);
      expect(st.gid).toBe(1234);
      expect(st.mode & 0o2000).toBe(0o2000);
      await b.unpublish(v, target);
      await b.unstage(v, staging);
      expect(await isMountPoint(staging)).toBe(false);
      await expect(fs.lstat(target)).rejects.toThrow(/ENOENT/);
    });
  });
});
