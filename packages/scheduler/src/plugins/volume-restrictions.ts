import type { FilterPlugin, PluginFactory, PreFilterPlugin } from '../framework.js';
import { Status } from '../status.js';
import { VolumeRestrictions } from './names.js';

export const ERR_RWOP_CONFLICT =
  'node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode';

const KEY = `${VolumeRestrictions}/rwop`;

/** A ReadWriteOncePod claim may be used by one pod in the whole cluster. */
export const newVolumeRestrictions: PluginFactory = (_a, handle): PreFilterPlugin & FilterPlugin => ({
  name: VolumeRestrictions,
  preFilter(state, pi, nodes) {
    const claims = new Set<string>();
    for (const v of pi.pod.spec.volumes ?? []) {
      const name = v.persistentVolumeClaim?.claimName;
      if (!name) continue;
      const pvc = handle.cluster.pvc(pi.namespace, name);
      if (pvc?.spec.accessModes?.includes('ReadWriteOncePod')) claims.add(name);
    }
    if (claims.size === 0) return Status.skip();
    let conflicts = 0;
    for (const n of nodes) {
      for (const p of n.pods) {
        if (p.namespace !== pi.namespace || p.uid === pi.uid) continue;
        for (const v of p.pod.spec.volumes ?? [])
          if (v.persistentVolumeClaim && claims.has(v.persistentVolumeClaim.claimName)) conflicts++;
      }
    }
    state.write(KEY, {
      conflicts,
      clone() {
        return { ...this };
      },
    });
    return null;
  },
  removePod(state, pi, removed) {
    const st = state.read<{ conflicts: number }>(KEY);
    if (!st || removed.namespace !== pi.namespace) return;
    for (const v of removed.pod.spec.volumes ?? []) {
      const name = v.persistentVolumeClaim?.claimName;
      if (name && handle.cluster.pvc(pi.namespace, name)?.spec.accessModes?.includes('ReadWriteOncePod')) {
        if ((pi.pod.spec.volumes ?? []).some((x) => x.persistentVolumeClaim?.claimName === name))
          st.conflicts--;
      }
    }
  },
  filter(state) {
    const st = state.read<{ conflicts: number }>(KEY);
    return st && st.conflicts > 0 ? Status.unschedulable(ERR_RWOP_CONFLICT) : null;
  },
  eventsToRegister: () => [
    { resource: 'Pod', action: 'Delete' },
    { resource: 'PersistentVolumeClaim', action: '*' },
  ],
});
