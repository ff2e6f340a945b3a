// What the kubelet's CSI plugin registration does with a driver once it is registered: NodeGetInfo, then
// the CSINode object (driver name, node ID, topology keys, volume limit) and the topology segments as
// node labels, so the external-attacher and the scheduler can find the driver on this node.
import { type CSINode, isNotFound, type Node, type Store } from '@kemu/core';
import type { CsiNodeApi, CsiPluginRegistry } from './types.js';

type NodeInfo = Awaited<ReturnType<CsiNodeApi['NodeGetInfo']>>;

/**
 * The node's CSI side, kept in line with the registered drivers. A driver's NodeGetInfo is asked once per
 * registration, as upstream's plugin registration does, and not on every node status: a driver registered
 * again (a new socket) is a new client and is asked again.
 */
export class CsiNodeSync {
  private known = new Map<string, string>();
  private infos = new Map<string, { api: CsiNodeApi; info: NodeInfo }>();

  constructor(
    private readonly store: Store,
    private readonly nodeName: string,
    private readonly plugins: CsiPluginRegistry,
  ) {}

  /** Brings CSINode and node topology labels in line with the registered drivers. Cheap when unchanged. */
  async sync(): Promise<void> {
    const names = this.plugins.names().sort();
    const drivers: CSINode['spec']['drivers'] = [];
    const labels: Record<string, string> = {};
    for (const name of names) {
      const api = this.plugins.get(name);
      if (!api) continue;
      const info = await this.nodeInfo(name, api);
      const segments = info.accessibleTopology?.segments ?? {};
      Object.assign(labels, segments);
      drivers.push({
        name,
        nodeID: info.nodeId ?? this.nodeName,
        topologyKeys: Object.keys(segments).sort(),
        ...(info.maxVolumesPerNode ? { allocatable: { count: info.maxVolumesPerNode } } : {}),
      });
    }
    const fingerprint = JSON.stringify({ drivers, labels });
    if (this.known.get('all') === fingerprint) return;
    let node: Node;
    try {
      node = await this.store.get('Node', '', this.nodeName);
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    const ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: this.nodeName, uid: node.metadata.uid ?? '' }];
    try {
      const cur = await this.store.get('CSINode', '', this.nodeName);
      await this.store.update({ ...cur, spec: { drivers } });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await this.store.create({ apiVersion: 'storage.k8s.io/v1', kind: 'CSINode', metadata: { name: this.nodeName, ownerReferences }, spec: { drivers } });
    }
    if (Object.entries(labels).some(([k, v]) => node.metadata.labels?.[k] !== v)) {
      await this.store.patch('Node', '', this.nodeName, { metadata: { labels } }, 'merge');
    }
    this.known.set('all', fingerprint);
  }

  private async nodeInfo(name: string, api: CsiNodeApi): Promise<NodeInfo> {
    const had = this.infos.get(name);
    if (had?.api === api) return had.info;
    const info = await api.NodeGetInfo({});
    this.infos.set(name, { api, info });
    return info;
  }
}
