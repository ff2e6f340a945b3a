// What discovery says about each served resource beyond the kind registry: short names, categories,
// subresources (with the kind they answer with and their verbs), as kube-apiserver advertises them for the
// built-in resources. A KindInfo may carry its own `shortNames`/`categories`, which win.
import { type KindInfo, storedKinds } from '@kemu/core';
import type { AuthEndpoint } from './auth-seams.js';
import { customResourceScale } from './crd/scale.js';
import { EVENTS_V1, eventsV1Resource } from './events-v1.js';

export interface SubresourceInfo {
  name: string;
  /** The kind the subresource reads and writes, with its group/version when not the parent's. */
  kind: string;
  group?: string;
  version?: string;
  verbs: string[];
}

export interface ResourceInfo {
  info: KindInfo;
  singularName: string;
  shortNames: string[];
  categories: string[];
  verbs: string[];
  subresources: SubresourceInfo[];
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
const STATUS_VERBS = ['get', 'patch', 'update'];

/** Upstream's short names, keyed by `resource.group` (core group: just the resource). */
const SHORT_NAMES: Record<string, string[]> = {
  pods: ['po'],
  nodes: ['no'],
  namespaces: ['ns'],
  configmaps: ['cm'],
  events: ['ev'],
  'events.events.k8s.io': ['ev'],
  persistentvolumes: ['pv'],
  persistentvolumeclaims: ['pvc'],
  services: ['svc'],
  endpoints: ['ep'],
  serviceaccounts: ['sa'],
  replicationcontrollers: ['rc'],
  resourcequotas: ['quota'],
  limitranges: ['limits'],
  'storageclasses.storage.k8s.io': ['sc'],
  'priorityclasses.scheduling.k8s.io': ['pc'],
  'deployments.apps': ['deploy'],
  'replicasets.apps': ['rs'],
  'daemonsets.apps': ['ds'],
  'statefulsets.apps': ['sts'],
  'cronjobs.batch': ['cj'],
  'horizontalpodautoscalers.autoscaling': ['hpa'],
  'poddisruptionbudgets.policy': ['pdb'],
  'networkpolicies.networking.k8s.io': ['netpol'],
  'ingresses.networking.k8s.io': ['ing'],
  'customresourcedefinitions.apiextensions.k8s.io': ['crd', 'crds'],
  'certificatesigningrequests.certificates.k8s.io': ['csr'],
};

const ALL = ['all'];
const CATEGORIES: Record<string, string[]> = {
  pods: ALL,
  services: ALL,
  replicationcontrollers: ALL,
  'deployments.apps': ALL,
  'replicasets.apps': ALL,
  'statefulsets.apps': ALL,
  'daemonsets.apps': ALL,
  'jobs.batch': ALL,
  'cronjobs.batch': ALL,
  'horizontalpodautoscalers.autoscaling': ALL,
  'customresourcedefinitions.apiextensions.k8s.io': ['api-extensions'],
};

const SCALE = { name: 'scale', kind: 'Scale', group: 'autoscaling', version: 'v1', verbs: STATUS_VERBS };
const EXTRA_SUBRESOURCES: Record<string, SubresourceInfo[]> = {
  pods: [
    { name: 'attach', kind: 'PodAttachOptions', verbs: ['create', 'get'] },
    { name: 'binding', kind: 'Binding', verbs: ['create'] },
    { name: 'ephemeralcontainers', kind: 'Pod', verbs: STATUS_VERBS },
    { name: 'eviction', kind: 'Eviction', group: 'policy', version: 'v1', verbs: ['create'] },
    { name: 'exec', kind: 'PodExecOptions', verbs: ['create', 'get'] },
    { name: 'log', kind: 'Pod', verbs: ['get'] },
    { name: 'portforward', kind: 'PodPortForwardOptions', verbs: ['create', 'get'] },
  ],
  namespaces: [{ name: 'finalize', kind: 'Namespace', verbs: ['update'] }],
  nodes: [{ name: 'proxy', kind: 'NodeProxyOptions', verbs: ['get'] }],
  'deployments.apps': [SCALE],
  'replicasets.apps': [SCALE],
  'statefulsets.apps': [SCALE],
  replicationcontrollers: [SCALE],
};

function key(info: KindInfo): string {
  return info.group ? `${info.resource}.${info.group}` : info.resource;
}

export function resourceInfo(info: KindInfo): ResourceInfo {
  const k = key(info);
  const own = info as KindInfo & { shortNames?: string[]; categories?: string[] };
  const subresources: SubresourceInfo[] = [];
  if (info.hasStatus) subresources.push({ name: 'status', kind: info.kind, verbs: STATUS_VERBS });
  subresources.push(...(EXTRA_SUBRESOURCES[k] ?? []));
  if (customResourceScale(info.kind)) subresources.push(SCALE);
  subresources.sort((a, b) => a.name.localeCompare(b.name));
  return {
    info,
    singularName: info.kind.toLowerCase(),
    shortNames: own.shortNames ?? SHORT_NAMES[k] ?? [],
    categories: own.categories ?? CATEGORIES[k] ?? [],
    verbs: VERBS,
    subresources,
  };
}

/**
 * Every served resource (registered kinds the store keeps, create-only endpoints such as reviews, and
 * `extra` resources served by other means, such as metrics.k8s.io),
 * grouped by `group/version` ('' group = core).
 */
export function servedGroupVersions(endpoints: readonly AuthEndpoint[] = [], extra: readonly ResourceInfo[] = []): Map<string, ResourceInfo[]> {
  const out = new Map<string, ResourceInfo[]>();
  for (const r of extra) {
    if (!out.has(r.info.apiVersion)) out.set(r.info.apiVersion, []);
    out.get(r.info.apiVersion)!.push(r);
  }
  for (const info of storedKinds()) {
    const gv = info.apiVersion;
    if (!out.has(gv)) out.set(gv, []);
    out.get(gv)!.push(resourceInfo(info));
  }
  // events.k8s.io/v1 serves the core Events under the newer group (one storage, as upstream).
  out.set(EVENTS_V1, [...(out.get(EVENTS_V1) ?? []), eventsV1Resource()]);
  for (const e of endpoints) {
    const gv = e.group ? `${e.group}/${e.version}` : e.version;
    if (!out.has(gv)) out.set(gv, []);
    const list = out.get(gv)!;
    if (e.subresource) {
      const parent = list.find((r) => r.info.resource === e.resource);
      parent?.subresources.push({ name: e.subresource, kind: e.kind, group: e.group, version: e.version, verbs: ['create'] });
      continue;
    }
    const info: KindInfo = { kind: e.kind, apiVersion: gv, group: e.group, version: e.version, resource: e.resource, namespaced: e.namespaced, hasStatus: false, fields: {} };
    list.push({ info, singularName: e.kind.toLowerCase(), shortNames: [], categories: [], verbs: ['create'], subresources: [] });
  }
  for (const list of out.values()) list.sort((a, b) => a.info.resource.localeCompare(b.info.resource));
  return out;
}

export function findSubresource(info: KindInfo, name: string): SubresourceInfo | undefined {
  return resourceInfo(info).subresources.find((s) => s.name === name);
}
