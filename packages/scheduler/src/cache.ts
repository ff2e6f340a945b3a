// The scheduler cache: nodes and the pods on them, including pods assumed onto a node before their
// binding finished. Scheduling cycles run synchronously on one thread, so the cache itself serves as
// the cycle's snapshot; derived lists are rebuilt lazily when a generation counter moves.
import { NodeInfo, normalizedImageName } from './node-info.js';
import { type AffinityTerm, hasAffinity, newPodInfo, podKey, type PodInfo } from './pod-info.js';
import type { Node, Pod } from './types.js';

export const ZONE_LABEL = 'topology.kubernetes.io/zone';
export const REGION_LABEL = 'topology.kubernetes.io/region';

interface PodState {
  pi: PodInfo;
  nodeName: string;
  assumed: boolean;
}

export interface AntiGroup {
  term: AffinityTerm;
  /** Topology value → pods with this term there. */
  counts: Map<string, number>;
  members: number;
}

export interface Snapshot {
  list(): NodeInfo[];
  get(name: string): NodeInfo | undefined;
  havePodsWithAffinity(): NodeInfo[];
  havePodsWithRequiredAntiAffinity(): NodeInfo[];
  /** Number of nodes that have the image (for ImageLocality's spread factor). */
  imageNumNodes(image: string): number;
  numNodes(): number;
  /** Placed pods carrying label `k=v` (every placed pod when undefined); callers still match fully. */
  podsWithLabel(firstEq: string | undefined): Iterable<PodInfo>;
  /** Placed pods with required pod anti-affinity terms. */
  podsWithRequiredAntiAffinity(): Set<PodInfo>;
  /** Placed pods with any pod affinity or anti-affinity term. */
  podsWithAffinity(): Set<PodInfo>;
  /**
   * For nodes carrying every one of `keys`: value → node count, per key (same order). Memoised until
   * the node set changes.
   */
  topologyDomains(keys: string[]): Map<string, number>[];
  /** Live counts per topology value of pods in `ns` carrying label `eq` (treat as read-only). */
  eqTopologyCounts(ns: string, eq: string, tk: string): Map<string, number>;
  /** Existing required anti-affinity terms, identical terms grouped (treat as read-only). */
  antiAffinityGroups(): Iterable<AntiGroup>;
}

export class SchedulerCache implements Snapshot {
  private nodes = new Map<string, NodeInfo>();
  private podStates = new Map<string, PodState>();
  /** Pods reported on nodes the cache has not seen yet. */
  private orphans = new Map<string, PodInfo[]>();
  private imageCount = new Map<string, number>();
  private ordered: NodeInfo[] | null = null;
  private positionsOf: NodeInfo[] | null = null;
  /** Nominated pods by node name, including nodes not (yet) in the cache. */
  private nominatedByNode = new Map<string, readonly PodInfo[]>();
  private positionIndex = new Map<string, number>();
  private affinityDirty = true;
  private withAffinity: NodeInfo[] = [];
  private withAntiAffinity: NodeInfo[] = [];
  private byLabel = new Map<string, Set<PodInfo>>();
  private allPlaced = new Set<PodInfo>();
  private antiPods = new Set<PodInfo>();
  private affinityPods = new Set<PodInfo>();
  private domains = new Map<string, Map<string, number>[]>();
  private eqIndexes = new Map<string, { ns: string; tk: string; counts: Map<string, number> }>();
  private eqByLabel = new Map<string, { ns: string; tk: string; counts: Map<string, number> }[]>();
  private antiGroups: Map<string, AntiGroup> | null = null;

  podsWithLabel(firstEq: string | undefined): Iterable<PodInfo> {
    if (firstEq === undefined) return this.allPlaced;
    return this.byLabel.get(firstEq) ?? EMPTY_SET;
  }

  podsWithRequiredAntiAffinity(): Set<PodInfo> {
    return this.antiPods;
  }

  podsWithAffinity(): Set<PodInfo> {
    return this.affinityPods;
  }

  topologyDomains(keys: string[]): Map<string, number>[] {
    const k = keys.join('\0');
    const hit = this.domains.get(k);
    if (hit) return hit;
    const out = keys.map(() => new Map<string, number>());
    for (const n of this.nodes.values()) {
      const l = n.labels;
      if (!l) continue;
      let all = true;
      for (const key of keys) if (l[key] === undefined) all = false;
      if (!all) continue;
      for (let i = 0; i < keys.length; i++) out[i].set(l[keys[i]], (out[i].get(l[keys[i]]) ?? 0) + 1);
    }
    this.domains.set(k, out);
    return out;
  }

  /** value → count of non-terminating pods in `ns` labelled `eq`, by their node's `tk` label. */
  eqTopologyCounts(ns: string, eq: string, tk: string): Map<string, number> {
    const key = `${ns}\0${eq}\0${tk}`;
    const hit = this.eqIndexes.get(key);
    if (hit) return hit.counts;
    const idx = { ns, tk, counts: new Map<string, number>() };
    for (const pi of this.byLabel.get(eq) ?? EMPTY_SET) {
      if (pi.namespace !== ns || pi.pod.metadata.deletionTimestamp) continue;
      const v = pi.node?.labels?.[tk];
      if (v !== undefined) idx.counts.set(v, (idx.counts.get(v) ?? 0) + 1);
    }
    this.eqIndexes.set(key, idx);
    const l = this.eqByLabel.get(eq) ?? [];
    l.push(idx);
    this.eqByLabel.set(eq, l);
    return idx.counts;
  }

  /** Existing pods' required anti-affinity terms, identical terms grouped, with per-value counts. */
  antiAffinityGroups(): Iterable<AntiGroup> {
    if (this.antiGroups === null) {
      this.antiGroups = new Map();
      for (const pi of this.antiPods) this.groupAnti(pi, 1);
    }
    return this.antiGroups.values();
  }

  private groupAnti(pi: PodInfo, sign: number): void {
    const groups = this.antiGroups!;
    for (const t of pi.requiredAntiAffinity) {
      let g = groups.get(t.key);
      if (!g) {
        if (sign < 0) continue;
        g = { term: t, counts: new Map(), members: 0 };
        groups.set(t.key, g);
      }
      g.members += sign;
      const v = pi.node?.labels?.[t.topologyKey];
      if (v !== undefined) {
        const n = (g.counts.get(v) ?? 0) + sign;
        if (n <= 0) g.counts.delete(v);
        else g.counts.set(v, n);
      }
      if (g.members <= 0) groups.delete(t.key);
    }
  }

  private invalidateDerived(): void {
    this.domains.clear();
    this.eqIndexes.clear();
    this.eqByLabel.clear();
    this.antiGroups = null;
  }

  private index(pi: PodInfo, add: boolean): void {
    const sign = add ? 1 : -1;
    if (this.antiGroups !== null && pi.requiredAntiAffinity.length > 0) this.groupAnti(pi, sign);
    if (this.eqByLabel.size > 0 && pi.labels && !pi.pod.metadata.deletionTimestamp) {
      for (const key in pi.labels) {
        const l = this.eqByLabel.get(`${key}=${pi.labels[key]}`);
        if (!l) continue;
        for (const idx of l) {
          if (idx.ns !== pi.namespace) continue;
          const v = pi.node?.labels?.[idx.tk];
          if (v === undefined) continue;
          const n = (idx.counts.get(v) ?? 0) + sign;
          if (n <= 0) idx.counts.delete(v);
          else idx.counts.set(v, n);
        }
      }
    }
    if (add) this.allPlaced.add(pi);
    else this.allPlaced.delete(pi);
    const labels = pi.labels;
    if (labels) {
      for (const key in labels) {
        const lk = `${key}=${labels[key]}`;
        let s = this.byLabel.get(lk);
        if (add) {
          if (!s) {
            s = new Set();
            this.byLabel.set(lk, s);
          }
          s.add(pi);
        } else if (s) {
          s.delete(pi);
          if (s.size === 0) this.byLabel.delete(lk);
        }
      }
    }
    if (pi.requiredAntiAffinity.length > 0) {
      if (add) this.antiPods.add(pi);
      else this.antiPods.delete(pi);
    }
    if (hasAffinity(pi)) {
      if (add) this.affinityPods.add(pi);
      else this.affinityPods.delete(pi);
    }
  }

  list(): NodeInfo[] {
    this.ordered ??= interleaveByZone([...this.nodes.values()]);
    return this.ordered;
  }

  /** Node name → position in list(). */
  positions(): ReadonlyMap<string, number> {
    const list = this.list();
    if (this.positionsOf !== list) {
      this.positionsOf = list;
      this.positionIndex = new Map(list.map((n, i) => [n.name, i]));
    }
    return this.positionIndex;
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
      this.invalidateDerived();
      return existing;
    }
    const ni = new NodeInfo(node);
    ni.nominated = this.nominatedByNode.get(name) ?? ni.nominated;
    this.nodes.set(name, ni);
    this.countImages(ni, 1);
    for (const pi of this.orphans.get(name) ?? []) {
      pi.node = ni;
      ni.addPod(pi);
    }
    this.orphans.delete(name);
    this.ordered = null;
    this.invalidateDerived();
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
    for (const pi of ni.pods) pi.node = undefined;
    this.ordered = null;
    this.invalidateDerived();
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
    pi.nodeName = nodeName;
    const ni = this.nodes.get(nodeName);
    pi.node = ni;
    this.index(pi, true);
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
    if (pi) {
      this.index(pi, false);
      pi.node = undefined;
      pi.nodeName = '';
      if (hasAffinity(pi)) this.affinityDirty = true;
    }
  }

  /** Mirror of the queue's nominated pods for one node (see NodeInfo.nominated). */
  setNominatedPods(nodeName: string, pods: readonly PodInfo[]): void {
    if (pods.length === 0) this.nominatedByNode.delete(nodeName);
    else this.nominatedByNode.set(nodeName, pods);
    const ni = this.nodes.get(nodeName);
    if (ni) ni.nominated = pods;
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
        st.pi.nodeName = nodeName;
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

const EMPTY_SET: Set<PodInfo> = new Set();
