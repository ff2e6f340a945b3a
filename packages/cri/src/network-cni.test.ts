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
