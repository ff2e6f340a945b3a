import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hostVethName } from './bridge.js';

describe('hostVethName', () => {
  it('is "veth" and the first 11 hex digits of SHA-256 over network, container ID and ifname', () => {
    for (const [n, c, i] of [
      ['kemu', 'pod1', 'eth0'],
      ['bench-bexec0', 'bench42', 'eth0'],
      ['net', 'ü-container', 'net1'],
    ] as const) {
      const want = `veth${createHash('sha256').update(`${n}\0${c}\0${i}`).digest('hex').slice(0, 11)}`;
      expect(hostVethName(n, c, i)).toBe(want);
    }
    expect(hostVethName('kemu', 'pod1', 'eth0')).toHaveLength(15);
  });
});
