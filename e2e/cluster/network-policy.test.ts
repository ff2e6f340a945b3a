// NetworkPolicy on the composed cluster (sim datapath): each node's policy agent turns policies into
// rules, a default-deny namespace plus one allow rule gives exactly the expected reachability, and a
// trace of a denied packet ends with the policy that dropped it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { NetworkPolicy, Pod } from '@kemu/core';
import { Cluster, type SimClusterNetwork } from 'kemu';
import { policyMatrix } from '../../packages/kemu/src/commands.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './util.js';

let cluster: Cluster;
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-np-'));

beforeAll(async () => {
  cluster = await Cluster.start({ stateDir, nodes: 2, fast: true, apiSocket: path.join(stateDir, 'kemu.sock') });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

const pod = (name: string, app: string, nodeName: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', labels: { app } },
  spec: { nodeName, containers: [{ name: 'c', image: 'busybox', command: ['sleep', 'infinity'] }] },
});

describe('NetworkPolicy on the simulated datapath', () => {
  it('a default-deny namespace plus one allow rule gives exactly the expected truth table', async () => {
    await cluster.store.create(pod('web', 'web', 'kemu-node-1'));
    await cluster.store.create(pod('db', 'db', 'kemu-node-2'));
    await cluster.store.create(pod('other', 'other', 'kemu-node-2'));
    await until('pods Running with IPs', async () => {
      const ps = (await cluster.store.list('Pod', { namespace: 'default' })).items as Pod[];
      return ps.length === 3 && ps.every((p) => p.status?.phase === 'Running' && p.status.podIP);
    });
    await cluster.store.create<NetworkPolicy>({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'default-deny', namespace: 'default' },
      spec: { podSelector: {}, policyTypes: ['Ingress'] },
    });
    await cluster.store.create<NetworkPolicy>({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'db-from-web', namespace: 'default' },
      spec: { podSelector: { matchLabels: { app: 'db' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }] },
    });
    const names = ['web', 'db', 'other'];
    const table = async () => {
      const rows: string[] = [];
      for (const from of names) {
        let row = '';
        for (const to of names) row += from === to ? '-' : ((await cluster.trace(from, to)) as { reachable: boolean }).reachable ? 'X' : '.';
        rows.push(row);
      }
      return rows.join(' ');
    };
    await until('the policies in force on both nodes', async () => (await table()) === '-X. .-. ..-');
    // The agents keep ip6tables in step too: db's node isolates it there as well (its pods have no IPv6
    // address in this single-stack cluster, so the chain holds only the replies rule and no per-pod jump).
    const world = (cluster.network as SimClusterNetwork).world;
    const v6 = world.iptablesSave('/run/kemu/nodes/kemu-node-2', { family: 6, table: 'filter' });
    expect(v6).toContain('-A FORWARD -m comment --comment "kemu network policy" -j KEMU-POLICY');
    expect(v6).not.toMatch(/KEMU-NP-I-/);
    const denied = (await cluster.trace('other', 'db')) as { trace: { kind: string; reason?: string }[] };
    expect(denied.trace.filter((h) => h.kind === 'drop').at(-1)?.reason).toBe(
      'dropped: NetworkPolicy default/default-deny, default/db-from-web: no ingress rule allows this',
    );
  });

  it('kemu policy matrix prints the same table and finds no disagreement with the policies', async () => {
    const lines: string[] = [];
    const code = await policyMatrix({ namespace: 'default', expect: true, stateDir }, { log: (l) => lines.push(l), err: (l) => lines.push(l) });
    expect(lines.slice(1, 4).map((l) => l.replace(/\s+/g, ' ').trim())).toEqual(['db - . .', 'other . - .', 'web X . -']);
    expect(lines.at(-1)).toContain('! disagrees with the policies (0 cells)');
    expect(code).toBe(0);
  });
});
