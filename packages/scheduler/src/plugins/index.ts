// The in-tree registry: every default plugin by name.
import type { PluginFactory } from '../framework.js';
import { newDefaultBinder } from './default-binder.js';
import { newDefaultPreemption } from './default-preemption.js';
import { newImageLocality } from './image-locality.js';
import { newInterPodAffinity } from './inter-pod-affinity.js';
import * as N from './names.js';
import { newNodeAffinity } from './node-affinity.js';
import { newNodeName } from './node-name.js';
import { newNodePorts } from './node-ports.js';
import { newBalancedAllocation, newNodeResourcesFit } from './node-resources-fit.js';
import { newNodeUnschedulable } from './node-unschedulable.js';
import { newNodeVolumeLimits } from './node-volume-limits.js';
import { newPodTopologySpread } from './pod-topology-spread.js';
import { newPrioritySort } from './priority-sort.js';
import { newSchedulingGates } from './scheduling-gates.js';
import { newTaintToleration } from './taint-toleration.js';
import { newVolumeBinding } from './volume-binding.js';
import { newVolumeRestrictions } from './volume-restrictions.js';
import { newVolumeZone } from './volume-zone.js';

export function inTreeRegistry(): Map<string, PluginFactory> {
  return new Map<string, PluginFactory>([
    [N.PrioritySort, newPrioritySort],
    [N.SchedulingGates, newSchedulingGates],
    [N.NodeUnschedulable, newNodeUnschedulable],
    [N.NodeName, newNodeName],
    [N.TaintToleration, newTaintToleration],
    [N.NodeAffinity, newNodeAffinity],
    [N.NodePorts, newNodePorts],
    [N.NodeResourcesFit, newNodeResourcesFit],
    [N.NodeResourcesBalancedAllocation, newBalancedAllocation],
    [N.ImageLocality, newImageLocality],
    [N.InterPodAffinity, newInterPodAffinity],
    [N.PodTopologySpread, newPodTopologySpread],
    [N.VolumeBinding, newVolumeBinding],
    [N.VolumeRestrictions, newVolumeRestrictions],
    [N.VolumeZone, newVolumeZone],
    [N.NodeVolumeLimits, newNodeVolumeLimits],
    [N.DefaultPreemption, newDefaultPreemption],
    [N.DefaultBinder, newDefaultBinder],
  ]);
}

/** Default multiPoint plugins and weights (KubeSchedulerConfiguration v1 defaults), in order. */
export const DEFAULT_MULTI_POINT: { name: string; weight?: number }[] = [
  { name: N.SchedulingGates },
  { name: N.PrioritySort },
  { name: N.NodeUnschedulable },
  { name: N.NodeName },
  { name: N.TaintToleration, weight: 3 },
  { name: N.NodeAffinity, weight: 2 },
  { name: N.NodePorts },
  { name: N.NodeResourcesFit, weight: 1 },
  { name: N.VolumeRestrictions },
  { name: N.NodeVolumeLimits },
  { name: N.VolumeBinding },
  { name: N.VolumeZone },
  { name: N.PodTopologySpread, weight: 2 },
  { name: N.InterPodAffinity, weight: 2 },
  { name: N.DefaultPreemption },
  { name: N.NodeResourcesBalancedAllocation, weight: 1 },
  { name: N.ImageLocality, weight: 1 },
  { name: N.DefaultBinder },
];

export * as PluginNames from './names.js';
