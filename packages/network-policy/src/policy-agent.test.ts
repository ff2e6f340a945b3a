// The agent keeps both families' rules in step with the store: dual-stack pods get IPv4 chains through the
// iptables sink and IPv6 chains through the ip6tables one, and a removed policy takes both away.
import { createMemoryStore, type NetworkPolicy, type Store } from '@kemu/core';
import { simRuleSink } from '@kemu/kube-proxy';
import { World } from '@kemu/netsim';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PolicyAgent } from './policy-agent.js';
import { DUAL_STACK_PODS, IPV6_POLICY_SETS } from './test-helpers.js';

describe('policy agent with IPv4 and IPv6 sinks', () => {
  let store: Store;
  let agent: PolicyAgent;
  const w = new World();
  w.addNamespace('node');
  const v6 = () => w.iptablesSave('node', { family: 6, table: 'filter' });
  const v4 = () => w.iptablesSave('node', { family: 4, table: 'filter' });

  beforeEach(async () => {
    store = await createMemoryStore();
    for (const ns of ['shop', 'ops']) await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    // Status is the kubelet's to write, as on a real API server.
    for (const p of DUAL_STACK_PODS) {
      const made = await store.create(p);
      await store.updateStatus({ ...made, status: p.status });
    }
    agent = new PolicyAgent({
      store,
      nodeName: 'node',
      sink: simRuleSink(w, 'node'),
      sink6: {
        save: async () => v6(),
        restore: async (text) => w.iptablesRestore('node', text, { family: 6, noflush: true }),
      },
      minSyncPeriodMs: 0,
    });
    await agent.start();
  });

  afterEach(async () => {
    await agent.stop();
  });

  it('writes the IPv6 chains with /128 pod addresses and IPv6 blocks, and removes them with the policy', async () => {
    const np = IPV6_POLICY_SETS[2]![0]!;
    await store.create<NetworkPolicy>(np);
    await agent.syncNow();
    expect(v6()).toContain('-A KEMU-POLICY -d fd00:10:244:2::2/128 -m comment --comment "ingress of shop/db"');
    expect(v6()).toContain('-s fd00:10:244:4::/64 -p tcp -m tcp --dport 8080');
    expect(v4()).toContain('-A KEMU-POLICY -d 10.244.2.2/32 -m comment --comment "ingress of shop/db"');
    expect(v4()).not.toContain('fd00');
    await store.delete('NetworkPolicy', 'shop', np.metadata.name!);
    await agent.syncNow();
    expect(v6()).not.toMatch(/KEMU-NP-/);
    expect(v4()).not.toMatch(/KEMU-NP-/);
  });
});
