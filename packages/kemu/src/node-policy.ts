// NetworkPolicy on a node of the composed cluster: a policy agent writing the node's policy chains
// through the cluster network (netsim's netfilter on the sim datapath, the node namespace's on linux).
import type { Store } from '@kemu/core';
import { PolicyAgent } from '@kemu/network-policy';
import type { ClusterNetwork } from './cluster-network.js';
import { acquireNodeInformers } from './node-informers.js';

export async function startNodePolicyAgent(o: {
  store: Store;
  network: ClusterNetwork;
  nodeName: string;
  fast: boolean;
  onError: (err: unknown) => void;
}): Promise<{ agent: PolicyAgent; stop(): Promise<void> }> {
  const informers = acquireNodeInformers(o.store);
  const agent = new PolicyAgent({
    store: o.store,
    sink: o.network.ruleSink(o.nodeName),
    sink6: o.network.ip6FilterSink?.(o.nodeName),
    nodeName: o.nodeName,
    minSyncPeriodMs: o.fast ? 100 : 1000,
    informers: informers.factory,
    onError: o.onError,
  });
  try {
    await agent.start();
  } catch (err) {
    await agent.stop();
    await informers.release();
    throw err;
  }
  return {
    agent,
    stop: async () => {
      await agent.stop();
      await informers.release();
    },
  };
}
