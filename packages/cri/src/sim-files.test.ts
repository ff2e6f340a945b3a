import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readSimFile, statSimPath } from './sim-files.js';
import type { ContainerRecord } from './types.js';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-simfiles-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const container = (mounts: { containerPath: string; hostPath: string }[]) => ({ config: { mounts } }) as unknown as ContainerRecord;
const text = (r: ReturnType<typeof readSimFile>) => (r.ok ? r.data.toString() : `error: ${r.error}`);

describe('readSimFile', () => {
  it('reads through the mount holding the path (longest first), following links that stay inside', () => {
    const vol = path.join(root, 'vol');
    fs.mkdirSync(path.join(vol, '..2026_01_01'), { recursive: true });
    fs.writeFileSync(path.join(vol, '..2026_01_01', 'app.properties'), 'a=1\n');
    fs.symlinkSync('..2026_01_01', path.join(vol, '..data'));
    fs.symlinkSync('..data/app.properties', path.join(vol, 'app.properties'));
    const inner = path.join(root, 'inner');
    fs.mkdirSync(inner);
    fs.writeFileSync(path.join(inner, 'x'), 'inner x');
    const c = container([
      { containerPath: '/etc/config', hostPath: vol },
      { containerPath: '/etc/config/sub', hostPath: inner },
    ]);
    expect(text(readSimFile(c, '/etc/config/app.properties', {}))).toBe('a=1\n');
    expect(text(readSimFile(c, '/etc/config/./app.properties', {}))).toBe('a=1\n');
    expect(text(readSimFile(c, '/etc/config/sub/x', {}))).toBe('inner x');
    expect(text(readSimFile(c, '/etc/config/missing', {}))).toBe('error: No such file or directory');
    expect(text(readSimFile(c, '/etc/config', {}))).toBe('error: Is a directory');
    expect(text(readSimFile(c, '/etc/hostname', { '/etc/hostname': 'pod-1\n' }))).toBe('pod-1\n');
    expect(text(readSimFile(c, '/etc/other', {}))).toBe('error: No such file or directory');
  });

  it('does not follow a link out of the mount, nor `..` out of it', () => {
    const vol = path.join(root, 'vol');
    fs.mkdirSync(vol);
    fs.writeFileSync(path.join(root, 'host-secret'), 'host only');
    fs.symlinkSync(path.join(root, 'host-secret'), path.join(vol, 'abs-link'));
    fs.symlinkSync('../host-secret', path.join(vol, 'rel-link'));
    const c = container([{ containerPath: '/data', hostPath: vol }]);
    expect(text(readSimFile(c, '/data/abs-link', {}))).toBe('error: No such file or directory');
    expect(text(readSimFile(c, '/data/rel-link', {}))).toBe('error: No such file or directory');
    expect(text(readSimFile(c, '/data/../host-secret', {}))).toBe('error: No such file or directory');
  });

  it('reads a file mount (a subPath of a file) at its container path', () => {
    const f = path.join(root, 'one-file');
    fs.writeFileSync(f, 'just me');
    const c = container([{ containerPath: '/etc/app.conf', hostPath: f }]);
    expect(text(readSimFile(c, '/etc/app.conf', {}))).toBe('just me');
  });

  it('test -d/-f: the layer, the mounts, the synthetic root, and the directories holding mount points', () => {
    const vol = path.join(root, 'vol');
    fs.mkdirSync(vol);
    fs.writeFileSync(path.join(vol, 'f'), 'x');
    const layer = path.join(root, 'layer');
    fs.mkdirSync(path.join(layer, 'srv'), { recursive: true });
    const c = container([{ containerPath: '/var/lib/data', hostPath: vol }]);
    const syn = { '/etc/hostname': 'h\n' };
    expect(statSimPath(c, '/var/lib/data/f', syn, layer)).toBe('file');
    expect(statSimPath(c, '/var/lib/data', syn, layer)).toBe('directory');
    expect(statSimPath(c, '/var/lib', syn, layer)).toBe('directory');
    expect(statSimPath(c, '/var', syn, layer)).toBe('directory');
    expect(statSimPath(c, '/srv', syn, layer)).toBe('directory');
    expect(statSimPath(c, '/etc', syn, layer)).toBe('directory');
    expect(statSimPath(c, '/etc/hostname', syn, layer)).toBe('file');
    expect(statSimPath(c, '/nope', syn, layer)).toBeUndefined();
    expect(statSimPath(c, '/var/li', syn, layer)).toBeUndefined();
  });

  it('resolves links as the container sees them: targets are container paths, looked up through the mounts', () => {
    const vol = path.join(root, 'vol');
    fs.mkdirSync(vol);
    fs.writeFileSync(path.join(vol, 'x'), 'in the volume');
    fs.writeFileSync(path.join(root, 'host-only'), 'host');
    const layer = path.join(root, 'layer');
    fs.mkdirSync(path.join(layer, 'srv'), { recursive: true });
    fs.symlinkSync('/etc/hostname', path.join(layer, 'srv', 'name'));
    fs.symlinkSync('/data', path.join(layer, 'srv', 'data'));
    fs.symlinkSync('../../../../../../..', path.join(layer, 'srv', 'up'));
    fs.symlinkSync(path.join(root, 'host-only'), path.join(layer, 'srv', 'host'));
    fs.symlinkSync('loop-b', path.join(layer, 'srv', 'loop-a'));
    fs.symlinkSync('loop-a', path.join(layer, 'srv', 'loop-b'));
    const c = container([{ containerPath: '/data', hostPath: vol }]);
    const syn = { '/etc/hostname': 'pod-1\n' };
    expect(text(readSimFile(c, '/srv/name', syn, layer))).toBe('pod-1\n');
    expect(text(readSimFile(c, '/srv/data/x', syn, layer))).toBe('in the volume');
    // `..` stops at the container's root; a host path in a link means nothing inside the container.
    expect(text(readSimFile(c, '/srv/up/etc/hostname', syn, layer))).toBe('pod-1\n');
    expect(text(readSimFile(c, '/srv/host', syn, layer))).toBe('error: No such file or directory');
    expect(text(readSimFile(c, '/srv/loop-a', syn, layer))).toBe('error: Too many levels of symbolic links');
    expect(statSimPath(c, '/srv/data', syn, layer)).toBe('directory');
  });
});
