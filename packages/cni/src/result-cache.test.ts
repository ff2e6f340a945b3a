// Both result caches keep what ADD returned per attachment, apart from the caller's objects, and list the
// attachments of a network for GC.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DiskResultCache, MemoryResultCache, type ResultCache } from './result-cache.js';
import type { NetworkConfigList } from './runtime.js';
import type { CniResult } from './types.js';

const list: NetworkConfigList = { name: 'kemu', cniVersion: '1.0.0', plugins: [], bytes: Buffer.from('{"name":"kemu"}') };
const rt = { containerId: 'c1', ifname: 'eth0', netns: '/var/run/netns/p1', args: [['K8S_POD_NAME', 'web-0']] as [string, string][] };
const result = (): CniResult =>
  ({ cniVersion: '1.0.0', interfaces: [{ name: 'eth0', sandbox: '/var/run/netns/p1' }], ips: [{ address: '10.244.1.5/24', gateway: '10.244.1.1', interface: 0 }] }) as CniResult;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-cni-cache-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

for (const [name, make] of [
  ['memory', () => new MemoryResultCache()],
  ['disk', () => new DiskResultCache(fs.mkdtempSync(path.join(dir, 'c-')))],
] as [string, () => ResultCache][]) {
  describe(`${name} result cache`, () => {
    it('returns what was put, untouched by later changes to the caller object, and forgets it on delete', async () => {
      const cache = make();
      const r = result();
      await cache.put(list, rt, r);
      r.ips![0]!.address = '10.9.9.9/24';
      const got = await cache.get(list, rt);
      expect(got?.ips?.[0]?.address).toBe('10.244.1.5/24');
      expect(got?.interfaces?.[0]?.name).toBe('eth0');
      expect(await cache.get(list, { ...rt, ifname: 'net1' })).toBeUndefined();
      expect(await cache.attachments(list)).toEqual([expect.objectContaining({ containerId: 'c1', ifname: 'eth0', netns: '/var/run/netns/p1', args: rt.args })]);
      await cache.delete(list, rt);
      expect(await cache.get(list, rt)).toBeUndefined();
      expect(await cache.attachments(list)).toEqual([]);
    });
  });
}
