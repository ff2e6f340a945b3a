import type { FilterPlugin, PluginFactory, PreFilterPlugin } from '../framework.js';
import type { PodInfo } from '../pod-info.js';
import { Status } from '../status.js';
import { NodeVolumeLimits } from './names.js';

export const ERR_MAX_VOLUME_COUNT = 'node(s) exceed max volume count';

// Filter results are shared, immutable values: rejecting thousands of nodes allocates nothing.
const REJECT_MAX_VOLUME_COUNT = Status.unschedulable(ERR_MAX_VOLUME_COUNT).withPlugin(NodeVolumeLimits);

/** Counts unique CSI volumes per driver against the CSINode's allocatable count. */
export const newNodeVolumeLimits: PluginFactory = (_a, handle): PreFilterPlugin & FilterPlugin => {
  const cluster = handle.cluster;
  const csiVolumes = (pi: PodInfo, out: Map<string, Set<string>>) => {
    for (const v of pi.pod.spec.volumes ?? []) {
      let driver: string | undefined;
      let handleId: string | undefined;
      if (v.csi) {
        driver = v.csi.driver;
        handleId = `${pi.uid}/${v.name}`;
      } else if (v.persistentVolumeClaim) {
        const pvc = cluster.pvc(pi.namespace, v.persistentVolumeClaim.claimName);
        if (!pvc) continue;
        const pv = pvc.spec.volumeName ? cluster.pvs.get(pvc.spec.volumeName) : undefined;
        if (pv?.spec.csi) {
          driver = pv.spec.csi.driver;
          handleId = pv.spec.csi.volumeHandle;
        } else if (!pv) {
          driver = cluster.storageClasses.get(pvc.spec.storageClassName ?? '')?.provisioner;
          handleId = `${pi.namespace}/${pvc.metadata.name}`;
        }
      }
      if (!driver || !handleId) continue;
      let s = out.get(driver);
      if (!s) {
        s = new Set();
        out.set(driver, s);
      }
      s.add(handleId);
    }
  };
  return {
    name: NodeVolumeLimits,
    preFilter(_s, pi) {
      return (pi.pod.spec.volumes ?? []).some((v) => v.csi || v.persistentVolumeClaim) ? null : Status.skip();
    },
    filter(_s, pi, node) {
      const csiNode = cluster.csiNodes.get(node.name);
      if (!csiNode) return null;
      const mine = new Map<string, Set<string>>();
      csiVolumes(pi, mine);
      if (mine.size === 0) return null;
      const used = new Map<string, Set<string>>();
      for (const p of node.pods) csiVolumes(p, used);
      for (const [driver, vols] of mine) {
        const limit = csiNode.spec.drivers.find((d) => d.name === driver)?.allocatable?.count;
        if (limit === undefined || limit === null) continue;
        const existing = used.get(driver) ?? new Set<string>();
        let n = existing.size;
        for (const v of vols) if (!existing.has(v)) n++;
        if (n > limit) return REJECT_MAX_VOLUME_COUNT;
      }
      return null;
    },
    eventsToRegister: () => [
      { resource: 'Pod', action: 'Delete' },
      { resource: 'CSINode', action: '*' },
      { resource: 'Node', action: 'Add' },
    ],
  };
};
