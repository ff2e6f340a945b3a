// The scheduler cache: nodes and the pods on them, including pods assumed onto a node before their
// binding finished. Scheduling cycles run synchronously on one thread, so the cache itself serves as
// the cycle's snapshot; derived lists are rebuilt lazily when a generation counter moves.
import { NodeInfo, normalizedImageName } from './node-info.js';
import { hasAffinity, newPodInfo, podKey, type PodInfo } from './pod-info.js';
import type { Node, Pod } from './types.js';

export const ZONE_LABEL = 'topology.kubernetes.io/zone';
export const REGION_LABEL = 'topology.kubernetes.io/region';

interface PodState {
  pi: PodInfo;
  nodeName: string;
  assumed: boolean;
}

export interface Snapshot {
  list(): NodeInfo[];
  get(name: string): NodeInfo | undefined;
  havePodsWithAffinity(): NodeInfo[];
  havePodsWithRequiredAntiAffinity(): NodeInfo[];
  /** Number of nodes that have the image (for ImageLocality's spread factor). */
  imageNumNodes(image: string): number;
  numNodes(): number;
}

export class SchedulerCache implements Snapshot {
  private nodes = new Map<string, NodeInfo>();
  private podStates = new Map<string, PodState>();
  /** Pods reported on nodes the cache has not seen yet. */
  private orphans = new Map<string, PodInfo[]>();
  private imageCount = new Map<string, number>();
  private ordered: NodeInfo[] | null = null;
  private affinityDirty = true;
  private withAffinity: NodeInfo[] = [];
  private withAntiAffinity: NodeInfo[] = [];

  list(): NodeInfo[] {
    this.ordered ??= interleaveByZone([...this.nodes.values()]);
    return this.ordered;
  }

  get(name: string): NodeInfo | undefined {
    return this.nodes.get(name);
  }

  numNodes(): number {
    return this.nodes.size;
  }

  havePodsWithAffinity(): NodeInfo[] {
    this.refreshAffinity();
    return this.withAffinity;
  }

  havePodsWithRequiredAntiAffinity(): NodeInfo[] {
    this.refreshAffinity();
    return this.withAntiAffinity;
  }

  imageNumNodes(image: string): number {
    return this.imageCount.get(image) ?? 0;
  }

  private refreshAffinity(): void {
    if (!this.affinityDirty) return;
    this.withAffinity = [];
    this.withAntiAffinity = [];
    for (const n of this.list()) {
      if (n.podsWithAffinity.length > 0) this.withAffinity.push(n);
      if (n.podsWithRequiredAntiAffinity.length > 0) this.withAntiAffinity.push(n);
    }
    this.affinityDirty = false;
  }

  addNode(node: Node): NodeInfo {
    const name = node.metadata.name ?? '';
    const existing = this.nodes.get(name);
    if (existing) {
      this.countImages(existing, -1);
      existing.setNode(node);
      this.countImages(existing, 1);
      this.ordered = null;
      return existing;
    }
    const ni = new NodeInfo(node);
    this.nodes.set(name, ni);
    this.countImages(ni, 1);
    for (const pi of this.orphans.get(name) ?? []) ni.addPod(pi);
    this.orphans.delete(name);
    this.ordered = null;
    this.affinityDirty = true;
    return ni;
  }

  updateNode(node: Node): NodeInfo {
    return this.addNode(node);
  }

  removeNode(name: string): void {
    const ni = this.nodes.get(name);
    if (!ni) return;
    this.countImages(ni, -1);
    this.nodes.delete(name);
    // Pods stay known so that deleting them later balances the books.
    if (ni.pods.length > 0) this.orphans.set(name, ni.pods);
    this.ordered = null;
    this.affinityDirty = true;
  }

  private countImages(ni: NodeInfo, sign: number): void {
    for (const img of ni.images.keys()) {
      const n = (this.imageCount.get(img) ?? 0) + sign;
      if (n <= 0) this.imageCount.delete(img);
      else this.imageCount.set(img, n);
    }
  }

  private place(pi: PodInfo, nodeName: string): void {
    const ni = this.nodes.get(nodeName);
    if (ni) ni.addPod(pi);
    else {
      const l = this.orphans.get(nodeName) ?? [];
      l.push(pi);
      this.orphans.set(nodeName, l);
    }
    if (hasAffinity(pi)) this.affinityDirty = true;
  }

  private unplace(key: string, nodeName: string): void {
    const ni = this.nodes.get(nodeName);
    let pi: PodInfo | undefined;
    if (ni) pi = ni.removePod(key);
    else {
      const l = this.orphans.get(nodeName);
      const i = l?.findIndex((p) => p.key === key) ?? -1;
      if (l && i >= 0) pi = l.splice(i, 1)[0];
    }
    if (pi && hasAffinity(pi)) this.affinityDirty = true;
  }

  /** Reserve the pod's resources on a node before the binding is confirmed. */
  assumePod(pi: PodInfo, nodeName: string): void {
    const key = pi.key;
    if (this.podStates.has(key)) throw new Error(`pod ${key} is already in the cache, so can't be assumed`);
    this.podStates.set(key, { pi, nodeName, assumed: true });
    this.place(pi, nodeName);
  }

  /** Undo an assumption (binding failed or a later extension point rejected the pod). */
  forgetPod(key: string): void {
    const st = this.podStates.get(key);
    if (!st?.assumed) return;
    this.unplace(key, st.nodeName);
    this.podStates.delete(key);
  }

  isAssumed(key: string): boolean {
    return this.podStates.get(key)?.assumed === true;
  }

  /** A scheduled pod observed from the store (confirms an assumed pod). */
  addPod(pod: Pod): void {
    const key = podKey(pod);
    const nodeName = pod.spec.nodeName ?? '';
    const st = this.podStates.get(key);
    if (st?.assumed) {
      if (st.nodeName !== nodeName) {
        this.unplace(key, st.nodeName);
        const pi = newPodInfo(pod);
        this.place(pi, nodeName);
        this.podStates.set(key, { pi, nodeName, assumed: false });
      } else {
        // Refresh the object but keep the aggregates computed at assume time.
        st.pi.pod = pod;
        st.assumed = false;
      }
      return;
    }
    if (st) {
      this.updatePod(pod);
      return;
    }
    const pi = newPodInfo(pod);
    this.podStates.set(key, { pi, nodeName, assumed: false });
    this.place(pi, nodeName);
  }

  updatePod(pod: Pod): void {
    const key = podKey(pod);
    const st = this.podStates.get(key);
    if (!st) {
      this.addPod(pod);
      return;
    }
    this.unplace(key, st.nodeName);
    const pi = newPodInfo(pod);
    const nodeName = pod.spec.nodeName ?? st.nodeName;
    this.place(pi, nodeName);
    this.podStates.set(key, { pi, nodeName, assumed: false });
  }

  removePod(pod: Pod | string): void {
    const key = typeof pod === 'string' ? pod : podKey(pod);
    const st = this.podStates.get(key);
    if (!st) return;
    this.unplace(key, st.nodeName);
    this.podStates.delete(key);
  }

  podCount(): number {
    return this.podStates.size;
  }

  nodeOf(key: string): string | undefined {
    return this.podStates.get(key)?.nodeName;
  }
}

/** Nodes ordered zone by zone in turn (the scheduler's node tree), so a partial scan spreads zones. */
function interleaveByZone(nodes: NodeInfo[]): NodeInfo[] {
  const zones = new Map<string, NodeInfo[]>();
  for (const n of nodes) {
    const l = n.labels;
    const z = l ? `${l[REGION_LABEL] ?? ''}:\0:${l[ZONE_LABEL] ?? ''}` : '';
    const arr = zones.get(z);
    if (arr) arr.push(n);
    else zones.set(z, [n]);
  }
  if (zones.size <= 1) return nodes;
  const lists = [...zones.values()];
  const out: NodeInfo[] = [];
  for (let i = 0; out.length < nodes.length; i++) {
    for (const l of lists) if (i < l.length) out.push(l[i]);
  }
  return out;
}

export { normalizedImageName };
