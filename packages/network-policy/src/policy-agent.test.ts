import { createMemoryStore, InformerFactory, type NetworkPolicy, type Pod, type Store } from '@kemu/core';
import type { RuleSink } from '@kemu/kube-proxy';
import { afterEach, describe, expect, it } from 'vitest';
import { PolicyAgent } from './policy-agent.js';

/** A sink that keeps the last restore input, as one node's filter table would hold it. */
/** A table that reads back what was last written to it (the agent looks for its own chains before writing). */
function recordingSink() {
  const sink = { restores: 0, last: '', async save() { return sink.last; }, async restore(text: string) { sink.restores++; sink.last = text; } };
  return sink as RuleSink & { restores: number; last: string };
}

const pod = (name: string, node: string, ip: string, labels: Record<string, string>): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop', labels },
  spec: { nodeName: node, containers: [{ name: 'c', image: 'x' }] },
});
const denyWeb: NetworkPolicy = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'deny-web', namespace: 'shop' }, spec: { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress'] } };

async function running(store: Store, p: Pod, ip: string) {
  const created = await store.create(p);
  await store.updateStatus({ ...created, status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } });
}

async function until(what: string, fn: () => boolean) {
  const end = Date.now() + 5000;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

let stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.reverse()) await s();
  stops = [];
});

describe('PolicyAgent on shared informers', () => {
  it('writes nothing until the first NetworkPolicy, unless the table holds its chains from before', async () => {
    const store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } });
    const fresh = recordingSink();
    const agent = new PolicyAgent({ store, nodeName: 'node-a', sink: fresh, minSyncPeriodMs: 10 });
    await agent.start();
    stops.push(() => agent.stop());
    // A namespace change syncs the agent; with no policy and nothing of its own there, it still writes nothing.
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'other', labels: { team: 'x' } } });
    await new Promise((r) => setTimeout(r, 100));
    expect(fresh.restores).toBe(0);
    // A table left with the agent's chain and a per-pod chain (a restarted agent on a real node): cleaned up.
    const leftover = recordingSink();
    leftover.last = '*filter\n:FORWARD ACCEPT [0:0]\n:KEMU-POLICY - [0:0]\n:KEMU-NP-I-0123456789AB - [0:0]\n-A FORWARD -m comment --comment "kemu network policy" -j KEMU-POLICY\n-A KEMU-POLICY -d 10.244.1.9/32 -j KEMU-NP-I-0123456789AB\nCOMMIT\n';
    const again = new PolicyAgent({ store, nodeName: 'node-a', sink: leftover, minSyncPeriodMs: 10 });
    await again.start();
    stops.push(() => again.stop());
    expect(leftover.restores).toBe(1);
    expect(leftover.last).toContain('-X KEMU-NP-I-0123456789AB');
    // The first policy is written on the fresh table.
    await store.create(denyWeb);
    await until('the policy chain written', () => fresh.restores > 0 && fresh.last.includes(':KEMU-POLICY'));
  });

  it('each node programs its own pods from one shared cache, pods alone wake no agent, and one agent stopping leaves the others working', async () => {
    const store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } });
    const informers = new InformerFactory(store);
    stops.push(() => informers.stop());
    const sinkA = recordingSink();
    const sinkB = recordingSink();
    const a = new PolicyAgent({ store, nodeName: 'node-a', sink: sinkA, minSyncPeriodMs: 10, informers });
    const b = new PolicyAgent({ store, nodeName: 'node-b', sink: sinkB, minSyncPeriodMs: 10, informers });
    await a.start();
    await b.start();
    stops.push(() => b.stop());
    // Without any NetworkPolicy a pod cannot change the rules: no sync follows its changes.
    const before = sinkA.restores;
    await running(store, pod('web-a', 'node-a', '10.244.1.2', { app: 'web' }), '10.244.1.2');
    await running(store, pod('web-b', 'node-b', '10.244.2.2', { app: 'web' }), '10.244.2.2');
    await new Promise((r) => setTimeout(r, 100));
    expect(sinkA.restores).toBe(before);
    // The first policy syncs with every pod: each node jumps to a chain for its own web pod only.
    await store.create(denyWeb);
    await until('both nodes programmed', () => sinkA.last.includes('-d 10.244.1.2/32') && sinkB.last.includes('-d 10.244.2.2/32'));
    expect(sinkA.last).not.toContain('10.244.2.2/32');
    expect(sinkB.last).not.toContain('10.244.1.2/32');
    // node-a's agent goes; the shared cache keeps serving node-b's.
    await a.stop();
    await running(store, pod('web-b2', 'node-b', '10.244.2.3', { app: 'web' }), '10.244.2.3');
    await until('node-b programs its new pod', () => sinkB.last.includes('-d 10.244.2.3/32'));
    // The last policy gone: its chains go, and pods stop waking the agent again.
    await store.delete('NetworkPolicy', 'shop', 'deny-web');
    await until('node-b drops the chains', () => !sinkB.last.includes('10.244.2.'));
    const after = sinkB.restores;
    await running(store, pod('web-b3', 'node-b', '10.244.2.4', { app: 'web' }), '10.244.2.4');
    await new Promise((r) => setTimeout(r, 100));
    expect(sinkB.restores).toBe(after);
  });
});
