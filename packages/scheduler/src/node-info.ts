// Per-node aggregates kept up to date as pods are added, assumed and removed, so a Filter or Score
// is O(1) in the number of pods on the node for resources and ports.
import { hasAffinity, type PodInfo } from './pod-info.js';
import {
  addResource,
  cloneResource,
  emptyResource,
  parseQuantity,
  resourceFromList,
  type Resource,
} from './resources.js';
import type { Node, Taint } from './types.js';

export function normalizedImageName(name: string): string {
  const slash = name.lastIndexOf('/');
  const tail = name.slice(slash + 1);
  if (tail.includes(':') || tail.includes('@')) return name;
  return `${name}:latest`;
}

export class NodeInfo {
  node: Node;
  name: string;
  allocatable: Resource;
  allowedPodNumber: number;
  requested: Resource;
  nonZeroCPU: number;
  nonZeroMem: number;
  pods: PodInfo[];
  podsWithAffinity: PodInfo[];
  podsWithRequiredAntiAffinity: PodInfo[];
  /** `protocol/port` → host IPs in use. */
  usedPorts: Map<string, string[]>;
  /** `key=value` → pods carrying that label; lets selector counting skip non-matching pods. */
  private labelIndex: Map<string, PodInfo[]> | null;
  /** image name → size in bytes. */
  images: Map<string, number>;
  generation: number;
  /**
   * Pending pods nominated to this node (preemptors waiting for their victims to go), kept in step by
   * the scheduling queue; read on every filter call, so it lives here rather than behind a name lookup.
   */
  nominated: readonly PodInfo[];
  /** spec.unschedulable and spec.taints, copied here because every filter pass reads them. */
  unschedulable: boolean;
  taints: Taint[] | undefined;

  /** `from`: make a copy of that node info (clone()); one constructor keeps copies the same shape. */
  constructor(node: Node, from?: NodeInfo) {
    this.node = node;
    if (from) {
      this.name = from.name;
      this.allocatable = from.allocatable;
      this.allowedPodNumber = from.allowedPodNumber;
      this.requested = cloneResource(from.requested);
      this.nonZeroCPU = from.nonZeroCPU;
      this.nonZeroMem = from.nonZeroMem;
      this.pods = from.pods.slice();
      this.podsWithAffinity = from.podsWithAffinity.slice();
      this.podsWithRequiredAntiAffinity = from.podsWithRequiredAntiAffinity.slice();
      this.usedPorts =
        from.usedPorts.size === 0 ? new Map() : new Map([...from.usedPorts].map(([k, v]) => [k, [...v]]));
      this.labelIndex = null;
      this.images = from.images;
      this.generation = from.generation;
      this.nominated = from.nominated;
      this.unschedulable = from.unschedulable;
      this.taints = from.taints;
      return;
    }
    this.name = node.metadata.name ?? '';
    const alloc = node.status?.allocatable ?? node.status?.capacity;
    this.allocatable = resourceFromList(alloc);
    this.allowedPodNumber = alloc?.pods !== undefined ? parseQuantity(alloc.pods) : 110;
    this.requested = emptyResource();
    this.nonZeroCPU = 0;
    this.nonZeroMem = 0;
    this.pods = [];
    this.podsWithAffinity = [];
    this.podsWithRequiredAntiAffinity = [];
    this.usedPorts = new Map();
    this.labelIndex = null;
    this.images = new Map();
    this.generation = 0;
    this.nominated = NO_NOMINATED;
    this.unschedulable = node.spec?.unschedulable === true;
    this.taints = node.spec?.taints;
    this.setImages(node);
  }

  private setImages(node: Node): void {
    this.images.clear();
    for (const img of node.status?.images ?? []) {
      for (const n of img.names ?? []) this.images.set(normalizedImageName(n), img.sizeBytes ?? 0);
    }
  }

  setNode(node: Node): void {
    this.node = node;
    this.unschedulable = node.spec?.unschedulable === true;
    this.taints = node.spec?.taints;
    this.name = node.metadata.name ?? this.name;
    const alloc = node.status?.allocatable ?? node.status?.capacity;
    this.allocatable = resourceFromList(alloc);
    this.allowedPodNumber = alloc?.pods !== undefined ? parseQuantity(alloc.pods) : 110;
    this.setImages(node);
    this.generation++;
  }

  get labels(): Record<string, string> | undefined {
    return this.node.metadata.labels;
  }

  addPod(pi: PodInfo): void {
    this.pods.push(pi);
    addResource(this.requested, pi.requests);
    this.nonZeroCPU += pi.nonZeroCPU;
    this.nonZeroMem += pi.nonZeroMem;
    if (hasAffinity(pi)) this.podsWithAffinity.push(pi);
    if (pi.requiredAntiAffinity.length > 0) this.podsWithRequiredAntiAffinity.push(pi);
    for (const p of pi.ports) {
      const l = this.usedPorts.get(p.key);
      if (l) l.push(p.ip);
      else this.usedPorts.set(p.key, [p.ip]);
    }
    if (this.labelIndex) indexLabels(this.labelIndex, pi);
    this.generation++;
  }

  removePod(key: string): PodInfo | undefined {
    let i = -1;
    for (let j = 0; j < this.pods.length; j++) {
      if (this.pods[j].key === key) {
        i = j;
        break;
      }
    }
    if (i < 0) return undefined;
    return this.removeAt(i);
  }

  /**
   * Runs `fn` with these pods (each on the node once) taken off, then puts the node back exactly as it
   * was, whatever `fn` added or removed meanwhile. Cheaper than a copy for a preemption dry run.
   */
  withoutPods<T>(gone: readonly PodInfo[], fn: () => T): T {
    const { pods, podsWithAffinity, podsWithRequiredAntiAffinity, usedPorts, labelIndex } = this;
    const { milliCPU, memory, ephemeral, scalar } = this.requested;
    const { nonZeroCPU, nonZeroMem, generation } = this;
    // Work on new lists and a copy of the ports, and let the label index be rebuilt if asked for:
    // whatever fn does then leaves the originals alone.
    this.pods = without(pods, gone);
    this.podsWithAffinity = without(podsWithAffinity, gone);
    this.podsWithRequiredAntiAffinity = without(podsWithRequiredAntiAffinity, gone);
    this.usedPorts = usedPorts.size === 0 ? new Map() : new Map([...usedPorts].map(([k, v]) => [k, [...v]]));
    this.labelIndex = null;
    if (scalar) this.requested.scalar = new Map(scalar);
    try {
      this.subtract(gone);
      return fn();
    } finally {
      this.pods = pods;
      this.podsWithAffinity = podsWithAffinity;
      this.podsWithRequiredAntiAffinity = podsWithRequiredAntiAffinity;
      this.usedPorts = usedPorts;
      this.labelIndex = labelIndex;
      const r = this.requested;
      r.milliCPU = milliCPU;
      r.memory = memory;
      r.ephemeral = ephemeral;
      r.scalar = scalar;
      this.nonZeroCPU = nonZeroCPU;
      this.nonZeroMem = nonZeroMem;
      this.generation = generation;
    }
  }

  /** Remove these pods (each on the node once) in one pass; dry runs take all lower-priority pods off. */
  removePods(gone: readonly PodInfo[]): void {
    if (gone.length === 0) return;
    this.pods = without(this.pods, gone);
    if (this.podsWithAffinity.length > 0) this.podsWithAffinity = without(this.podsWithAffinity, gone);
    if (this.podsWithRequiredAntiAffinity.length > 0) {
      this.podsWithRequiredAntiAffinity = without(this.podsWithRequiredAntiAffinity, gone);
    }
    this.subtract(gone);
  }

  /** The aggregates part of removing pods whose list entries are already gone. */
  private subtract(gone: readonly PodInfo[]): void {
    for (const pi of gone) {
      addResource(this.requested, pi.requests, -1);
      this.nonZeroCPU -= pi.nonZeroCPU;
      this.nonZeroMem -= pi.nonZeroMem;
      if (pi.ports.length > 0) this.releasePorts(pi);
      if (this.labelIndex) this.unindexLabels(pi);
    }
    this.generation++;
  }

  /** Undo the latest addPod of this very pod (dry runs add a pod and take it off again). */
  removeLastPod(pi: PodInfo): void {
    const i = this.pods.lastIndexOf(pi);
    if (i >= 0) this.removeAt(i);
  }

  private removeAt(i: number): PodInfo {
    const pi = this.pods[i];
    if (i === this.pods.length - 1) this.pods.pop();
    else this.pods.splice(i, 1);
    addResource(this.requested, pi.requests, -1);
    this.nonZeroCPU -= pi.nonZeroCPU;
    this.nonZeroMem -= pi.nonZeroMem;
    if (this.podsWithAffinity.length > 0) removeFrom(this.podsWithAffinity, pi);
    if (this.podsWithRequiredAntiAffinity.length > 0) removeFrom(this.podsWithRequiredAntiAffinity, pi);
    if (pi.ports.length > 0) this.releasePorts(pi);
    if (this.labelIndex) this.unindexLabels(pi);
    this.generation++;
    return pi;
  }

  /** Where the node stands now, to return to with rollback() after adding pods for one filter pass. */
  checkpoint(): NodeCheckpoint {
    const r = this.requested;
    return {
      pods: this.pods.length,
      withAffinity: this.podsWithAffinity.length,
      withAnti: this.podsWithRequiredAntiAffinity.length,
      milliCPU: r.milliCPU,
      memory: r.memory,
      ephemeral: r.ephemeral,
      scalar: r.scalar ? new Map(r.scalar) : null,
      nonZeroCPU: this.nonZeroCPU,
      nonZeroMem: this.nonZeroMem,
      generation: this.generation,
    };
  }

  /** Undo every addPod since the checkpoint (only additions may have happened since). */
  rollback(cp: NodeCheckpoint): void {
    for (let i = this.pods.length - 1; i >= cp.pods; i--) {
      const pi = this.pods[i];
      if (pi.ports.length > 0) this.releasePorts(pi);
      if (this.labelIndex && pi.labels) this.unindexLabels(pi);
    }
    // pop(): cheaper than setting length for the few pods a filter pass adds.
    while (this.pods.length > cp.pods) this.pods.pop();
    while (this.podsWithAffinity.length > cp.withAffinity) this.podsWithAffinity.pop();
    while (this.podsWithRequiredAntiAffinity.length > cp.withAnti) this.podsWithRequiredAntiAffinity.pop();
    const r = this.requested;
    r.milliCPU = cp.milliCPU;
    r.memory = cp.memory;
    r.ephemeral = cp.ephemeral;
    r.scalar = cp.scalar;
    this.nonZeroCPU = cp.nonZeroCPU;
    this.nonZeroMem = cp.nonZeroMem;
    this.generation = cp.generation;
  }

  private releasePorts(pi: PodInfo): void {
    for (const p of pi.ports) {
      const l = this.usedPorts.get(p.key);
      if (l) {
        const j = l.lastIndexOf(p.ip);
        if (j >= 0) l.splice(j, 1);
        if (l.length === 0) this.usedPorts.delete(p.key);
      }
    }
  }

  private unindexLabels(pi: PodInfo): void {
    const labels = pi.labels;
    if (!labels || !this.labelIndex) return;
    for (const k in labels) {
      const lk = `${k}=${labels[k]}`;
      const l = this.labelIndex.get(lk);
      if (l) {
        removeFrom(l, pi);
        if (l.length === 0) this.labelIndex.delete(lk);
      }
    }
  }

  /** Pods whose labels may match a selector: the label-index bucket when the selector has an equality. */
  candidatePods(firstEq: string | undefined): PodInfo[] {
    if (firstEq === undefined) return this.pods;
    if (this.labelIndex === null) {
      // Built on first use: most nodes are never asked, and copies made for dry runs skip it.
      this.labelIndex = new Map();
      for (const p of this.pods) indexLabels(this.labelIndex, p);
    }
    return this.labelIndex.get(firstEq) ?? EMPTY;
  }

  /** A copy that can be mutated (preemption dry runs) without touching the cache. */
  clone(): NodeInfo {
    return new NodeInfo(this.node, this);
  }
}

const EMPTY: PodInfo[] = [];
const NO_NOMINATED: readonly PodInfo[] = [];

export interface NodeCheckpoint {
  pods: number;
  withAffinity: number;
  withAnti: number;
  milliCPU: number;
  memory: number;
  ephemeral: number;
  scalar: Map<string, number> | null;
  nonZeroCPU: number;
  nonZeroMem: number;
  generation: number;
}

function indexLabels(index: Map<string, PodInfo[]>, pi: PodInfo): void {
  const labels = pi.labels;
  if (!labels) return;
  for (const k in labels) {
    const lk = `${k}=${labels[k]}`;
    const l = index.get(lk);
    if (l) l.push(pi);
    else index.set(lk, [pi]);
  }
}

/** A new list of the pods in `list` that are not in `gone` (a plain loop: this runs per dry run). */
function without(list: PodInfo[], gone: readonly PodInfo[]): PodInfo[] {
  const out: PodInfo[] = [];
  for (let i = 0; i < list.length; i++) if (!gone.includes(list[i])) out.push(list[i]);
  return out;
}

function removeFrom(arr: PodInfo[], pi: PodInfo): void {
  const i = arr.indexOf(pi);
  if (i >= 0) arr.splice(i, 1);
}
