import type { FilterPlugin, PluginFactory, PreFilterPlugin } from '../framework.js';
import { Status } from '../status.js';
import { VolumeZone } from './names.js';

export const ERR_VOLUME_ZONE = 'node(s) had no available volume zone';

const TOPOLOGY_LABELS = [
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
];

// Filter results are shared, immutable values: rejecting thousands of nodes allocates nothing.
const REJECT_VOLUME_ZONE = Status.unresolvable(ERR_VOLUME_ZONE).withPlugin(VolumeZone);

/** A bound PV labelled with zones/regions only mounts on nodes in one of them (`a__b` lists several). */
export const newVolumeZone: PluginFactory = (_a, handle): PreFilterPlugin & FilterPlugin => ({
  name: VolumeZone,
  preFilter(_s, pi) {
    return (pi.pod.spec.volumes ?? []).some((v) => v.persistentVolumeClaim) ? null : Status.skip();
  },
  filter(_s, pi, node) {
    for (const v of pi.pod.spec.volumes ?? []) {
      const name = v.persistentVolumeClaim?.claimName;
      if (!name) continue;
      const pvc = handle.cluster.pvc(pi.namespace, name);
      const pv = pvc?.spec.volumeName ? handle.cluster.pvs.get(pvc.spec.volumeName) : undefined;
      const labels = pv?.metadata.labels;
      if (!labels) continue;
      for (const k of TOPOLOGY_LABELS) {
        const want = labels[k];
        if (want === undefined) continue;
        const have = node.labels?.[k];
        if (have === undefined || !want.split('__').includes(have)) return REJECT_VOLUME_ZONE;
      }
    }
    return null;
  },
  eventsToRegister: () => [
    { resource: 'Node', action: '*' },
    { resource: 'PersistentVolume', action: '*' },
    { resource: 'PersistentVolumeClaim', action: '*' },
  ],
});
