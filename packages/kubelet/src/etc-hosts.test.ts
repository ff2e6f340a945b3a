import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Container, Pod } from '@kemu/core';
import { hostsFileMount } from './etc-hosts.js';

// The writer takes the synchronous path on a memory file system and the thread pool on a disk: both are
// exercised, the way the kubelet meets them (pods' directories on /dev/shm in the benches, on disk by default).
const FILESYSTEMS = [
  ['a memory file system', '/dev/shm'],
  ['a disk', '/var/tmp'],
] as const;

const pod = (name: string): Pod => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', uid: `uid-${name}` }, spec: { containers: [{ name: 'c', image: 'i' }] } });
const container: Container = { name: 'c', image: 'i' };

describe.each(FILESYSTEMS)('hostsFileMount on %s', (_kind, base) => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  const podsDir = () => {
    const d = fs.mkdtempSync(path.join(base, 'kemu-hosts-'));
    dirs.push(d);
    return d;
  };

  it('makes the pod directory and the file on the first write, with the pod\'s entry', async () => {
    const podDir = path.join(podsDir(), 'uid-a');
    const m = await hostsFileMount(pod('a'), container, podDir, ['10.0.0.5'], 'cluster.local');
    const file = path.join(podDir, 'etc-hosts');
    expect(m?.hostPath).toBe(file);
    expect(fs.statSync(podDir).mode & 0o777).toBe(0o750 & ~process.umask());
    expect(fs.statSync(file).mode & 0o777).toBe(0o644 & ~process.umask());
    expect(fs.readFileSync(file, 'utf8')).toContain('10.0.0.5\ta\n');
    expect(fs.readdirSync(podDir)).toEqual(['etc-hosts']);
  });

  it('replaces an existing file whole, leaving no temporary file behind', async () => {
    const podDir = path.join(podsDir(), 'uid-b');
    await hostsFileMount(pod('b'), container, podDir, ['10.0.0.6'], 'cluster.local');
    const before = fs.statSync(path.join(podDir, 'etc-hosts')).ino;
    await hostsFileMount(pod('b'), container, podDir, ['10.0.0.7'], 'cluster.local');
    const text = fs.readFileSync(path.join(podDir, 'etc-hosts'), 'utf8');
    expect(text).toContain('10.0.0.7\tb\n');
    expect(text).not.toContain('10.0.0.6');
    // A new inode: the file was renamed over, so a reader holding the old one never saw it half written.
    expect(fs.statSync(path.join(podDir, 'etc-hosts')).ino).not.toBe(before);
    expect(fs.readdirSync(podDir)).toEqual(['etc-hosts']);
  });

  it('replaces a link in the file\'s place instead of writing through it', async () => {
    const dir = podsDir();
    const podDir = path.join(dir, 'uid-c');
    fs.mkdirSync(podDir);
    const target = path.join(dir, 'target');
    fs.writeFileSync(target, 'untouched');
    fs.symlinkSync(target, path.join(podDir, 'etc-hosts'));
    await hostsFileMount(pod('c'), container, podDir, ['10.0.0.8'], 'cluster.local');
    expect(fs.readFileSync(target, 'utf8')).toBe('untouched');
    expect(fs.lstatSync(path.join(podDir, 'etc-hosts')).isSymbolicLink()).toBe(false);
    expect(fs.readFileSync(path.join(podDir, 'etc-hosts'), 'utf8')).toContain('10.0.0.8\tc\n');
  });

  it('fails when the pod directory cannot be made', async () => {
    const dir = podsDir();
    fs.writeFileSync(path.join(dir, 'file'), '');
    await expect(hostsFileMount(pod('d'), container, path.join(dir, 'file', 'uid-d'), ['10.0.0.9'], 'cluster.local')).rejects.toMatchObject({ code: 'ENOTDIR' });
  });
});
