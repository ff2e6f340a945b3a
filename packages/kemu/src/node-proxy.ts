// kube-proxy on a node of the composed cluster: a Proxier writing into the node's netfilter through the
// cluster network (netsim's on the sim datapath, the node namespace's iptables on linux).
import type { Store } from '@kemu/core';
import { Proxier, type ProxyMode } from '@kemu/kube-proxy';
import type { ClusterNetwork } from './cluster-network.js';

export async function startNodeProxy(o: {
  store: Store;
  network: ClusterNetwork;
  nodeName: string;
  /** The cluster's pod network: Service traffic from outside it is masqueraded. */
  podNetwork: string;
  fast: boolean;
  /** kube-proxy's --proxy-mode (default iptables). */
  mode?: ProxyMode;
  onError: (err: unknown) => void;
}): Promise<Proxier> {
  const proxier = new Proxier({
    store: o.store,
    sink: o.network.ruleSink(o.nodeName),
    mode: o.mode,
    nodeName: o.nodeName,
    clusterCIDR: o.podNetwork,
    // Upstream's defaults are 1 s and 30 s; a fast cluster reacts sooner.
    minSyncPeriodMs: o.fast ? 100 : 1000,
    onError: o.onError,
  });
  await proxier.start();
  return proxier;
}
