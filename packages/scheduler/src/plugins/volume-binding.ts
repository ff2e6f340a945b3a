import { isPodOwnedClaim, notCreatedForPodMessage, podVolumeClaimName } from '@kemu/core';
import type {
  FilterPlugin,
  PluginFactory,
  PreBindPlugin,
  PreFilterPlugin,
  ReservePlugin,
} from '../framework.js';
import { labelSelectorMatcher, nodeSelectorMatches } from '../labels.js';
import type { NodeInfo } from '../node-info.js';
import { parseQuantity } from '../resources.js';
import { Status } from '../status.js';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types.js';
import { VolumeBinding } from './names.js';

export const ERR_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind";
export const ERR_NODE_CONFLICT = 'node(s) had volume node affinity conflict';
export const ERR_MISSING_PV = 'node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)';
export const ERR_NOT_ENOUGH_SPACE = 'node(s) did not have enough free storage';
export const ERR_UNBOUND_IMMEDIATE = 'pod has unbound immediate PersistentVolumeClaims';
export const SELECTED_NODE_ANNOTATION = 'volume.kubernetes.io/selected-node';
export const NO_PROVISIONER = 'kubernetes.io/no-provisioner';

export interface VolumeBindingArgs {
  bindTimeoutSeconds?: number;
}

interface Claims {
  bound: { pvc: PersistentVolumeClaim; pv: PersistentVolume | undefined }[];
  /** WaitForFirstConsumer claims still to bind or provision on the chosen node. */
  delayed: PersistentVolumeClaim[];
}

interface NodeDecision {
  /** pvc key → static PV chosen on this node. */
  static: Map<string, PersistentVolume>;
  provision: PersistentVolumeClaim[];
}

const STATE = `${VolumeBinding}/claims`;
const DECISIONS = `${VolumeBinding}/decisions`;

function pvcKey(pvc: PersistentVolumeClaim): string {
  return `${pvc.metadata.namespace ?? 'default'}/${pvc.metadata.name}`;
}

function requestedBytes(pvc: PersistentVolumeClaim): number {
  const r = pvc.spec.resources?.requests?.storage;
  return r === undefined ? 0 : parseQuantity(r);
}

function className(pvc: PersistentVolumeClaim): string {
  return pvc.spec.storageClassName ?? '';
}

export const newVolumeBinding: PluginFactory = (
  _args: VolumeBindingArgs | undefined,
  handle,
): PreFilterPlugin & FilterPlugin & ReservePlugin & PreBindPlugin => {
  const cluster = handle.cluster;
  /** PVs promised to pods whose binding has not been written yet: pv name → pvc key. */
  const assumedPVs = new Map<string, string>();

  const pvFits = (pv: PersistentVolume, pvc: PersistentVolumeClaim, node: NodeInfo): boolean => {
    const claimed = pv.spec.claimRef;
    if (
      claimed &&
      !(
        claimed.name === pvc.metadata.name &&
        (claimed.namespace ?? 'default') === (pvc.metadata.namespace ?? 'default')
      )
    )
      return false;
    const a = assumedPVs.get(pv.metadata.name ?? '');
    if (a && a !== pvcKey(pvc)) return false;
    if (pv.status?.phase && pv.status.phase !== 'Available' && !claimed) return false;
    if ((pv.spec.storageClassName ?? '') !== className(pvc)) return false;
    if ((pv.spec.volumeMode ?? 'Filesystem') !== (pvc.spec.volumeMode ?? 'Filesystem')) return false;
    for (const m of pvc.spec.accessModes ?? []) if (!(pv.spec.accessModes ?? []).includes(m)) return false;
    const cap = pv.spec.capacity?.storage;
    if (cap === undefined || parseQuantity(cap) < requestedBytes(pvc)) return false;
    if (pvc.spec.selector && !labelSelectorMatcher(pvc.spec.selector)(pv.metadata.labels)) return false;
    const na = pv.spec.nodeAffinity?.required;
    if (na && !nodeSelectorMatches(na, node.labels, node.name)) return false;
    return true;
  };

  const canProvision = (
    pvc: PersistentVolumeClaim,
    sc: StorageClass,
    node: NodeInfo,
  ): 'ok' | 'topology' | 'space' => {
    const topo = sc.allowedTopologies ?? [];
    if (topo.length > 0) {
      const ok = topo.some((t) =>
        (t.matchLabelExpressions ?? []).every((e) => e.values.includes(node.labels?.[e.key] ?? '\0')),
      );
      if (!ok) return 'topology';
    }
    const caps = [...cluster.capacities.values()].filter((c) => c.storageClassName === sc.metadata.name);
    if (caps.length === 0) return 'ok';
    const need = requestedBytes(pvc);
    for (const c of caps) {
      if (!labelSelectorMatcher(c.nodeTopology ?? null)(node.labels)) continue;
      const size = c.maximumVolumeSize ?? c.capacity;
      if (size !== undefined && parseQuantity(size) >= need) return 'ok';
    }
    return 'space';
  };

  return {
    name: VolumeBinding,
    preFilter(state, pi) {
      const vols = (pi.pod.spec.volumes ?? []).filter((v) => v.persistentVolumeClaim || v.ephemeral);
      if (vols.length === 0) return Status.skip();
      const claims: Claims = { bound: [], delayed: [] };
      let immediate = false;
      for (const v of vols) {
        const name = podVolumeClaimName(pi.pod, v)!;
        const pvc = cluster.pvc(pi.namespace, name);
        if (!pvc && v.ephemeral) return Status.unresolvable(`waiting for ephemeral volume controller to create the persistentvolumeclaim "${name}"`);
        if (!pvc) return Status.unresolvable(`persistentvolumeclaim "${name}" not found`);
        if (v.ephemeral && !isPodOwnedClaim(pi.pod, pvc)) return Status.unresolvable(notCreatedForPodMessage(pi.pod, name));
        if (pvc.metadata.deletionTimestamp)
          return Status.unresolvable(`persistentvolumeclaim "${name}" is being deleted`);
        if (pvc.spec.volumeName) {
          claims.bound.push({ pvc, pv: cluster.pvs.get(pvc.spec.volumeName) });
          continue;
        }
        const sc = cluster.storageClasses.get(className(pvc));
        if (sc?.volumeBindingMode === 'WaitForFirstConsumer') claims.delayed.push(pvc);
        else immediate = true;
      }
      if (immediate) return Status.unresolvable(ERR_UNBOUND_IMMEDIATE);
      state.write(STATE, claims);
      state.write(DECISIONS, new Map<string, NodeDecision>());
      return null;
    },
    filter(state, _pi, node) {
      const claims = state.read<Claims>(STATE);
      if (!claims) return null;
      const reasons = new Set<string>();
      for (const { pv } of claims.bound) {
        if (!pv) {
          reasons.add(ERR_MISSING_PV);
          continue;
        }
        const na = pv.spec.nodeAffinity?.required;
        if (na && !nodeSelectorMatches(na, node.labels, node.name)) reasons.add(ERR_NODE_CONFLICT);
      }
      const decision: NodeDecision = { static: new Map(), provision: [] };
      const taken = new Set<string>();
      for (const pvc of claims.delayed) {
        // Smallest fitting static PV first, as the PV controller would pick.
        let best: PersistentVolume | undefined;
        for (const pv of cluster.pvs.values()) {
          if (taken.has(pv.metadata.name ?? '') || !pvFits(pv, pvc, node)) continue;
          if (!best || parseQuantity(pv.spec.capacity!.storage) < parseQuantity(best.spec.capacity!.storage))
            best = pv;
        }
        if (best) {
          taken.add(best.metadata.name ?? '');
          decision.static.set(pvcKey(pvc), best);
          continue;
        }
        const sc = cluster.storageClasses.get(className(pvc));
        if (!sc || sc.provisioner === NO_PROVISIONER) {
          reasons.add(ERR_BIND_CONFLICT);
          continue;
        }
        const r = canProvision(pvc, sc, node);
        if (r === 'topology') reasons.add(ERR_NODE_CONFLICT);
        else if (r === 'space') reasons.add(ERR_NOT_ENOUGH_SPACE);
        else decision.provision.push(pvc);
      }
      if (reasons.size > 0) return Status.unresolvable(...reasons);
      state.read<Map<string, NodeDecision>>(DECISIONS)!.set(node.name, decision);
      return null;
    },
    reserve(state, pi, nodeName) {
      const d = state.read<Map<string, NodeDecision>>(DECISIONS)?.get(nodeName);
      if (!d) return null;
      for (const [k, pv] of d.static) assumedPVs.set(pv.metadata.name ?? '', k);
      void pi;
      return null;
    },
    unreserve(state, _pi, nodeName) {
      const d = state.read<Map<string, NodeDecision>>(DECISIONS)?.get(nodeName);
      if (!d) return;
      for (const pv of d.static.values()) assumedPVs.delete(pv.metadata.name ?? '');
    },
    async preBind(state, _pi, nodeName) {
      const d = state.read<Map<string, NodeDecision>>(DECISIONS)?.get(nodeName);
      if (!d) return null;
      const claims = state.read<Claims>(STATE)!;
      for (const pvc of claims.delayed) {
        const pv = d.static.get(pvcKey(pvc));
        if (pv) {
          // Pre-bind the PV to the claim; the PV controller completes the bind.
          const updated: PersistentVolume = {
            ...pv,
            spec: {
              ...pv.spec,
              claimRef: {
                kind: 'PersistentVolumeClaim',
                apiVersion: 'v1',
                namespace: pvc.metadata.namespace ?? 'default',
                name: pvc.metadata.name,
                uid: pvc.metadata.uid,
              },
            },
          };
          await handle.client.updateObject(updated);
          assumedPVs.delete(pv.metadata.name ?? '');
        } else {
          const updated: PersistentVolumeClaim = {
            ...pvc,
            metadata: {
              ...pvc.metadata,
              annotations: { ...(pvc.metadata.annotations ?? {}), [SELECTED_NODE_ANNOTATION]: nodeName },
            },
          };
          await handle.client.updateObject(updated);
        }
      }
      return null;
    },
    eventsToRegister: () => [
      { resource: 'PersistentVolumeClaim', action: '*' },
      { resource: 'PersistentVolume', action: '*' },
      { resource: 'StorageClass', action: '*' },
      { resource: 'CSINode', action: '*' },
      { resource: 'CSIStorageCapacity', action: '*' },
      { resource: 'Node', action: '*' },
    ],
  };
};
