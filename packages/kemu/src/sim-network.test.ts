import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SimClusterNetwork, UNDERLAY_NS, uplinkName } from './sim-network.js';

describe('the simulated cluster network', () => {
  it('names uplinks within 15 bytes without collisions, even past node 100', () => {
    const names = Array.from({ length: 5000 }, (_, i) => uplinkName(`kemu-node-${i + 1}`));
    expect(new Set(names).size).toBe(5000);
    expect(Math.max(...names.map((n) => Buffer.byteLength(n)))).toBeLessThanOrEqual(15);
    expect(uplinkName('kemu-node-1')).toBe(uplinkName('kemu-node-1'));
  });

  it('joins 110 nodes to one underlay and routes every pod CIDR between them', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-simnet-'));
    try {
      const net = new SimClusterNetwork({ stateDir: dir });
      for (let i = 0; i < 110; i++) await net.addNode(`kemu-node-${i + 1}`, `172.18.0.${10 + i}`, `10.244.${i + 1}.0/24`);
      expect(net.world.links(UNDERLAY_NS).filter((l) => l.name.startsWith('up-'))).toHaveLength(110);
      const r = net.world.ping('/run/kemu/nodes/kemu-node-100', '172.18.0.10', { count: 1 });
      expect(r.reachable).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('address plan', () => {
  it('carries node IPs and pod CIDRs into higher octets for large clusters', async () => {
    const { subnet } = await import('./cluster.js');
    expect(subnet('10.244.0.0/16', 0, 'pod')).toBe('10.244.1.0/24');
    expect(subnet('10.244.0.0/16', 254, 'pod')).toBe('10.244.255.0/24');
    expect(() => subnet('10.244.0.0/16', 255, 'pod')).toThrow(/too small for 256 nodes/);
    expect(subnet('10.0.0.0/8', 4999, 'pod')).toBe('10.19.136.0/24');
    expect(subnet('172.18.0.0/16', 0, 'node')).toBe('172.18.0.10');
    expect(subnet('172.18.0.0/16', 4999, 'node')).toBe('172.18.19.145'); // host 5009 = 19 * 256 + 145
    expect(() => subnet('bogus', 0, 'node')).toThrow(/invalid subnet/);
  });
});
