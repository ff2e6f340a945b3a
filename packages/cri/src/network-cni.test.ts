// NetworkReady follows the CNI conf dir the way containerd's does: false until a loadable network
// list appears, true from the next read on, false again when it goes away or stops parsing.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CniNetwork } from './network-cni.js';
import { tempDir } from './test-util.js';

describe('CniNetwork readiness', () => {
  it('tracks the conf dir', async () => {
    const dir = tempDir('kemu-cri-cni-');
    const net = new CniNetwork({ confDir: dir, binDirs: ['/usr/lib/cni'], refreshMs: 60_000 });
    await net.refresh();
    expect(net.status()).toMatchObject({ ready: false, reason: 'NetworkPluginNotReady' });
    expect(net.status().message).toContain('cni plugin not initialized');
    const file = path.join(dir, '10-net.conflist');
    fs.writeFileSync(file, JSON.stringify({ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'bridge' }] }));
    await net.refresh();
    expect(net.status()).toEqual({ ready: true, reason: '', message: '' });
    fs.writeFileSync(file, '{ not json');
    await net.refresh();
    expect(net.status().ready).toBe(false);
    expect(net.status().message).toContain('10-net.conflist');
    await net.close();
  });
});

describe('CniNetwork conf dir watch', () => {
  const until = async (cond: () => boolean) => {
    for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 25));
    return cond();
  };

  it('follows changes as they happen, without waiting for a poll', async () => {
    const dir = tempDir('kemu-cri-cni-');
    // The poll is an hour away: only the watch can see these changes.
    const net = new CniNetwork({ confDir: dir, binDirs: ['/usr/lib/cni'], refreshMs: 3_600_000 });
    await net.refresh();
    expect(net.status().ready).toBe(false);
    const file = path.join(dir, '10-net.conflist');
    fs.writeFileSync(file, JSON.stringify({ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'bridge' }] }));
    expect(await until(() => net.status().ready)).toBe(true);
    fs.rmSync(file);
    expect(await until(() => !net.status().ready)).toBe(true);
    await net.close();
  });

  it('polls a conf dir that does not exist yet, then watches it', async () => {
    const parent = tempDir('kemu-cri-cni-');
    const dir = path.join(parent, 'net.d');
    const net = new CniNetwork({ confDir: dir, binDirs: ['/usr/lib/cni'], refreshMs: 50 });
    await net.refresh();
    expect(net.status().ready).toBe(false);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, '10-net.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'bridge' }] }));
    expect(await until(() => net.status().ready)).toBe(true);
    await net.close();
  });
});
