// Per-pod data derived once when a pod enters the scheduler: parsed requests, ports, and compiled
// affinity terms, so Filter/Score never re-parse a spec.
import { labelSelectorMatcher, type LabelMatcher, type Labels } from './labels.js';
import type { NodeInfo } from './node-info.js';
import { podRequests, type Resource } from './resources.js';
import type { LabelSelector, Pod, PodAffinityTerm } from './types.js';

export interface AffinityTerm {
  matcher: LabelMatcher;
  /** Explicit namespaces; null with nsSelector null means "the pod's own namespace". */
  namespaces: Set<string>;
  nsSelector: LabelMatcher | null;
  topologyKey: string;
  weight: number;
  /** Identity of the term's meaning (owner namespace + spec), to group identical terms of many pods. */
  key: string;
}

export interface PodInfo {
  pod: Pod;
  key: string;
  uid: string;
  namespace: string;
  labels: Labels;
  priority: number;
  requests: Resource;
  nonZeroCPU: number;
  nonZeroMem: number;
  /** `protocol/port` → hostIP of each requested hostPort. */
  ports: { key: string; ip: string }[];
  requiredAffinity: AffinityTerm[];
  requiredAntiAffinity: AffinityTerm[];
  preferredAffinity: AffinityTerm[];
  preferredAntiAffinity: AffinityTerm[];
  startTime: number;
  /** Node the cache placed the pod on ('' while pending). */
  nodeName: string;
  /** That node's NodeInfo while the cache knows the node. */
  node?: NodeInfo;
}

export function podKey(pod: Pod): string {
  return `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`;
}

function mergeMatchLabelKeys(term: PodAffinityTerm, pod: Pod): LabelSelector | undefined {
  const sel = term.labelSelector;
  const keys = term.matchLabelKeys ?? [];
  const mkeys = term.mismatchLabelKeys ?? [];
  if (!sel || (keys.length === 0 && mkeys.length === 0)) return sel;
  const labels = pod.metadata.labels ?? {};
  const extra = [
    ...keys
      .filter((k) => labels[k] !== undefined)
      .map((k) => ({ key: k, operator: 'In' as const, values: [labels[k]] })),
    ...mkeys
      .filter((k) => labels[k] !== undefined)
      .map((k) => ({ key: k, operator: 'NotIn' as const, values: [labels[k]] })),
  ];
  return { matchLabels: sel.matchLabels, matchExpressions: [...(sel.matchExpressions ?? []), ...extra] };
}

function compileTerm(term: PodAffinityTerm, pod: Pod, weight: number): AffinityTerm {
  const ns = pod.metadata.namespace ?? 'default';
  const namespaces = new Set(term.namespaces ?? []);
  const nsSelector = term.namespaceSelector ? labelSelectorMatcher(term.namespaceSelector) : null;
  if (namespaces.size === 0 && !nsSelector) namespaces.add(ns);
  const sel = mergeMatchLabelKeys(term, pod);
  return {
    matcher: labelSelectorMatcher(sel),
    namespaces,
    nsSelector,
    topologyKey: term.topologyKey,
    weight,
    key: JSON.stringify([
      ns,
      [...namespaces].sort(),
      term.namespaceSelector ?? null,
      sel ?? null,
      term.topologyKey,
    ]),
  };
}

/** Does `target` (in namespace `ns` with `labels`) match the term? `nsLabels` resolves namespace labels. */
export function termMatches(
  t: AffinityTerm,
  ns: string,
  labels: Labels,
  nsLabels: (ns: string) => Labels,
): boolean {
  if (!t.namespaces.has(ns)) {
    if (!t.nsSelector) return false;
    if (!t.nsSelector.everything && !t.nsSelector(nsLabels(ns))) return false;
  }
  return t.matcher(labels);
}

export function newPodInfo(pod: Pod): PodInfo {
  const requests = podRequests(pod);
  const nz = podRequests(pod, true);
  const ports: { key: string; ip: string }[] = [];
  for (const c of pod.spec.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (p.hostPort && p.hostPort > 0)
        ports.push({ key: `${p.protocol ?? 'TCP'}/${p.hostPort}`, ip: p.hostIP || '0.0.0.0' });
    }
  }
  for (const c of pod.spec.initContainers ?? []) {
    if (c.restartPolicy !== 'Always') continue;
    for (const p of c.ports ?? []) {
      if (p.hostPort && p.hostPort > 0)
        ports.push({ key: `${p.protocol ?? 'TCP'}/${p.hostPort}`, ip: p.hostIP || '0.0.0.0' });
    }
  }
  const a = pod.spec.affinity;
  const pa = a?.podAffinity;
  const paa = a?.podAntiAffinity;
  const st = pod.status?.startTime ?? pod.metadata.creationTimestamp;
  return {
    pod,
    key: podKey(pod),
    uid: pod.metadata.uid ?? podKey(pod),
    namespace: pod.metadata.namespace ?? 'default',
    labels: pod.metadata.labels,
    priority: pod.spec.priority ?? 0,
    requests,
    nonZeroCPU: nz.milliCPU,
    nonZeroMem: nz.memory,
    ports: ports.length > 0 ? ports : NO_PORTS,
    requiredAffinity: terms(pa?.requiredDuringSchedulingIgnoredDuringExecution, (t) => compileTerm(t, pod, 1)),
    requiredAntiAffinity: terms(paa?.requiredDuringSchedulingIgnoredDuringExecution, (t) =>
      compileTerm(t, pod, 1),
    ),
    preferredAffinity: terms(pa?.preferredDuringSchedulingIgnoredDuringExecution, (t) =>
      compileTerm(t.podAffinityTerm, pod, t.weight),
    ),
    preferredAntiAffinity: terms(paa?.preferredDuringSchedulingIgnoredDuringExecution, (t) =>
      compileTerm(t.podAffinityTerm, pod, t.weight),
    ),
    startTime: st ? Date.parse(st) : 0,
    nodeName: pod.spec.nodeName ?? '',
  };
}

// Most pods have no terms and no host ports: they share these empty lists, so checking a pod for them
// does not touch four or five more objects per pod. Never mutated (nothing edits a PodInfo's lists);
// not frozen either, because frozen arrays make the loops over terms noticeably slower.
const NO_TERMS: AffinityTerm[] = [];
const NO_PORTS: { key: string; ip: string }[] = [];

function terms<T>(list: T[] | undefined, compile: (t: T) => AffinityTerm): AffinityTerm[] {
  return list === undefined || list.length === 0 ? NO_TERMS : list.map(compile);
}

export function hasAffinity(pi: PodInfo): boolean {
  return (
    pi.requiredAffinity.length +
      pi.requiredAntiAffinity.length +
      pi.preferredAffinity.length +
      pi.preferredAntiAffinity.length >
    0
  );
}
