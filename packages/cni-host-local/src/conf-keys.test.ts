import { callPlugin } from '@kemu/cni/testing';
import { describe, expect, it } from 'vitest';
import { createHostLocal } from './host-local.js';
import { MemoryIpam } from './store-memory.js';

// containerd 1.6 passes ipRanges as go-cni's IPRanges marshals them (no JSON tags: Go field names); the
// reference host-local reads them because its decoder matches keys case-insensitively.
describe('kemu-host-local reads keys the way the reference decoder does', () => {
  const env = { containerId: 'c1', netns: '/var/run/netns/x', ifname: 'eth0' };

  it('runtimeConfig.ipRanges with Go field names (containerd 1.6)', async () => {
    const plugin = createHostLocal({ store: new MemoryIpam() });
    const stdin =
      '{"cniVersion":"1.0.0","ipam":{"dataDir":"/nonexistent/hl","subnet":"10.1.0.0/24","type":"kemu-host-local"},"name":"net",' +
      '"runtimeConfig":{"ipRanges":[[{"Subnet":"10.9.0.0/24","RangeStart":"10.9.0.10","RangeEnd":"10.9.0.20","Gateway":"10.9.0.1"}]]},' +
      '"type":"kemu-bridge"}';
    const r = await callPlugin(plugin, 'ADD', stdin, env);
    expect(r.exitCode, r.stdout).toBe(0);
    expect(r.json.ips).toEqual([{ address: '10.9.0.10/24', gateway: '10.9.0.1' }]);
  });

  it('ipam keys in another case (IPAM, Ranges, Subnet, Routes, Dst)', async () => {
    const plugin = createHostLocal({ store: new MemoryIpam() });
    const stdin = JSON.stringify({
      cniVersion: '1.0.0',
      name: 'net',
      type: 'kemu-host-local',
      IPAM: { Type: 'kemu-host-local', DataDir: '/nonexistent/hl', Ranges: [[{ Subnet: '10.7.0.0/24' }]], Routes: [{ Dst: '0.0.0.0/0' }] },
    });
    const r = await callPlugin(plugin, 'ADD', stdin, env);
    expect(r.exitCode, r.stdout).toBe(0);
    expect(r.json).toMatchObject({ ips: [{ address: '10.7.0.2/24', gateway: '10.7.0.1' }], routes: [{ dst: '0.0.0.0/0' }] });
  });
});
