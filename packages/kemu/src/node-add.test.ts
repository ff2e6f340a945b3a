import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Node } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from './api-client.js';
import { Cluster } from './cluster.js';
import { nodeAdd, nodeRemove } from './node-add.js';
import { parseTaint } from './node-registration.js';

describe('adding and removing nodes of a running cluster over its API socket', () => {
  let cluster: Cluster;
  let api: ApiClient;
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-node-add-'));
  const lines: string[] = [];
  const out = { log: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };

  beforeAll(async () => {
    cluster = await Cluster.start({ stateDir, nodes: 1, fast: true, apiSocket: path.join(stateDir, 'kemu.sock') });
    api = new ApiClient(path.join(stateDir, 'kemu.sock'));
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

  it('adds numbered and named nodes, registered with their taints, and removes one', async () => {
    expect(await nodeAdd({ count: 2, taints: [], stateDir }, out)).toEqual(['kemu-node-2', 'kemu-node-3']);
    await nodeAdd({ count: 1, name: 'edge-a', taints: [parseTaint('zone=edge:NoExecute')], labels: { 'topology.kubernetes.io/zone': 'edge' }, stateDir }, out);
    expect(lines).toEqual(['node/kemu-node-2 added', 'node/kemu-node-3 added', 'node/edge-a added']);
    const nodes = (await api.list<Node>('Node')).items;
    expect(nodes.map((n) => n.metadata.name).sort()).toEqual(['edge-a', 'kemu-node-1', 'kemu-node-2', 'kemu-node-3']);
    const edge = nodes.find((n) => n.metadata.name === 'edge-a')!;
    expect(edge.spec?.taints).toEqual([{ key: 'zone', value: 'edge', effect: 'NoExecute' }]);
    expect(edge.metadata.labels).toMatchObject({ 'topology.kubernetes.io/zone': 'edge', 'kubernetes.io/hostname': 'edge-a' });
    // Each node has an address and pod CIDR of its own.
    expect(new Set(nodes.map((n) => n.spec?.podCIDR)).size).toBe(4);
    expect(new Set(nodes.map((n) => n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address)).size).toBe(4);

    await nodeRemove('kemu-node-2', { stateDir }, out);
    expect((await api.list<Node>('Node')).items.map((n) => n.metadata.name).sort()).toEqual(['edge-a', 'kemu-node-1', 'kemu-node-3']);
    expect(cluster.node('kemu-node-2')).toBeUndefined();
    // A later node never reuses a removed node's address; the removed node's name brings its own back.
    const cidrOf = async (n: string) => (await api.get<Node>('Node', undefined, n)).spec?.podCIDR;
    expect(await nodeAdd({ count: 1, taints: [], stateDir }, out)).toEqual(['kemu-node-5']);
    expect(nodes.map((n) => n.spec?.podCIDR)).not.toContain(await cidrOf('kemu-node-5'));
    const before = nodes.find((n) => n.metadata.name === 'kemu-node-2')!;
    expect(await nodeAdd({ count: 1, name: 'kemu-node-2', taints: [], stateDir }, out)).toEqual(['kemu-node-2']);
    const again = await api.get<Node>('Node', undefined, 'kemu-node-2');
    expect(again.spec?.podCIDR).toBe(before.spec?.podCIDR);
    expect(again.status?.addresses).toEqual(before.status?.addresses);
  }, 60_000);

  it('answers bad requests with the status kube-apiserver would use, changing nothing', async () => {
    const before = (await api.list('Node')).items.length;
    await expect(api.removeNode('nope')).rejects.toMatchObject({ reason: 'NotFound', code: 404, message: 'nodes "nope" not found' });
    await expect(api.addNodes({ name: 'kemu-node-1' })).rejects.toMatchObject({ reason: 'AlreadyExists', code: 409, message: 'nodes "kemu-node-1" already exists' });
    await expect(api.addNodes({ count: 2, name: 'x' })).rejects.toMatchObject({ code: 400, message: 'a node name names one node, not 2' });
    await expect(api.addNodes({ count: 0 })).rejects.toMatchObject({ code: 400, message: 'the number of nodes to add must be a positive whole number (got 0)' });
    await expect(api.addNodes({ taints: [{ key: 'k', effect: 'Never' }] })).rejects.toMatchObject({
      code: 400,
      message: 'taints[0].effect: Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
    });
    await expect(api.addNodes({ taints: [{ key: 'bad key', effect: 'NoSchedule' }] })).rejects.toMatchObject({ code: 400, message: expect.stringMatching(/^taints\[0\]\.key: Invalid value: "bad key": name part must consist of/) });
    await expect(api.addNodes({ labels: { zone: '-edge' } })).rejects.toMatchObject({ code: 400, message: expect.stringMatching(/^labels: Invalid value: "zone=-edge": a valid label must be/) });
    const raw = await api.request('POST', '/kemu/nodes', [1, 2]);
    expect(raw.code).toBe(400);
    expect(JSON.parse(raw.text).message).toBe('the request body must be a JSON object');
    expect((await api.request('GET', '/kemu/nodes')).code).toBe(405);
    expect((await api.list('Node')).items.length).toBe(before);
  });
});
