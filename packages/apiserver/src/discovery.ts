// The discovery documents clients read before anything else: /api (APIVersions), /apis (APIGroupList),
// /apis/<group> (APIGroup), /api/v1 and /apis/<group>/<version> (APIResourceList), and aggregated
// discovery (apidiscovery.k8s.io v2 and v2beta1 APIGroupDiscoveryList) when the Accept header asks for it.
import { StatusError } from '@kemu/core';
import type { AuthEndpoint } from './auth-seams.js';
import type { ResourceInfo } from './resource-catalog.js';
import { servedGroupVersions } from './resource-catalog.js';

interface GroupVersions {
  name: string;
  versions: string[];
}

function groups(endpoints: readonly AuthEndpoint[], extra: readonly ResourceInfo[]): { core: ResourceInfo[] | undefined; named: GroupVersions[]; all: Map<string, ResourceInfo[]> } {
  const all = servedGroupVersions(endpoints, extra);
  const byGroup = new Map<string, string[]>();
  for (const gv of all.keys()) {
    if (!gv.includes('/')) continue;
    const [g, v] = gv.split('/');
    if (!byGroup.has(g)) byGroup.set(g, []);
    byGroup.get(g)!.push(v);
  }
  const named = [...byGroup].map(([name, versions]) => ({ name, versions })).sort((a, b) => a.name.localeCompare(b.name));
  return { core: all.get('v1'), named, all };
}

function groupDoc(g: GroupVersions) {
  const versions = g.versions.map((version) => ({ groupVersion: `${g.name}/${version}`, version }));
  return { name: g.name, versions, preferredVersion: versions[0] };
}

function resourceList(groupVersion: string, resources: ResourceInfo[]) {
  const out: Record<string, unknown>[] = [];
  for (const r of resources) {
    out.push({
      name: r.info.resource,
      singularName: r.singularName,
      namespaced: r.info.namespaced,
      kind: r.info.kind,
      verbs: r.verbs,
      ...(r.shortNames.length ? { shortNames: r.shortNames } : {}),
      ...(r.categories.length ? { categories: r.categories } : {}),
    });
    for (const s of r.subresources) {
      out.push({
        name: `${r.info.resource}/${s.name}`,
        singularName: '',
        namespaced: r.info.namespaced,
        ...(s.group !== undefined ? { group: s.group, version: s.version } : {}),
        kind: s.kind,
        verbs: s.verbs,
      });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion, resources: out };
}

function discoveryResource(r: ResourceInfo) {
  const { group, version } = r.info;
  return {
    resource: r.info.resource,
    responseKind: { group, version, kind: r.info.kind },
    scope: r.info.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: r.singularName,
    verbs: r.verbs,
    ...(r.shortNames.length ? { shortNames: r.shortNames } : {}),
    ...(r.categories.length ? { categories: r.categories } : {}),
    ...(r.subresources.length
      ? {
          subresources: r.subresources.map((s) => ({
            subresource: s.name,
            responseKind: { group: s.group ?? group, version: s.version ?? version, kind: s.kind },
            verbs: s.verbs,
          })),
        }
      : {}),
  };
}

function aggregated(version: 'v2' | 'v2beta1', items: { name: string; versions: { version: string; resources: ResourceInfo[] }[] }[]) {
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: `apidiscovery.k8s.io/${version}`,
    metadata: {},
    items: items.map((g) => ({
      metadata: g.name ? { name: g.name, creationTimestamp: null } : { creationTimestamp: null },
      versions: g.versions.map((v) => ({ version: v.version, resources: v.resources.map(discoveryResource), freshness: 'Current' })),
    })),
  };
}

export function aggregatedContentType(version: 'v2' | 'v2beta1'): string {
  return `application/json;g=apidiscovery.k8s.io;v=${version};as=APIGroupDiscoveryList`;
}

export interface DiscoveryRequest {
  parts: string[];
  /** Set when the client asked for aggregated discovery. */
  aggregated?: 'v2' | 'v2beta1';
  serverAddress: string;
  endpoints?: readonly AuthEndpoint[];
  /** Resources served by other means than the store (metrics.k8s.io). */
  extra?: readonly ResourceInfo[];
}

/** The discovery document for a path, or undefined when the path is not a discovery path. */
export function discoveryDocument(req: DiscoveryRequest): { body: unknown; contentType?: string } | undefined {
  const { parts } = req;
  if (parts[0] !== 'api' && parts[0] !== 'apis') return undefined;
  const { core, named, all } = groups(req.endpoints ?? [], req.extra ?? []);
  if (parts.length === 1) {
    if (req.aggregated) {
      const items =
        parts[0] === 'api'
          ? [{ name: '', versions: [{ version: 'v1', resources: core ?? [] }] }]
          : named.map((g) => ({ name: g.name, versions: g.versions.map((v) => ({ version: v, resources: all.get(`${g.name}/${v}`) ?? [] })) }));
      return { body: aggregated(req.aggregated, items), contentType: aggregatedContentType(req.aggregated) };
    }
    if (parts[0] === 'api')
      return {
        body: { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: req.serverAddress }] },
      };
    return { body: { kind: 'APIGroupList', apiVersion: 'v1', groups: named.map(groupDoc) } };
  }
  if (parts[0] === 'api') {
    if (parts.length === 2 && parts[1] === 'v1') return { body: resourceList('v1', core ?? []) };
    if (parts.length === 2) throw pathNotFound();
    return undefined;
  }
  const g = named.find((x) => x.name === parts[1]);
  if (parts.length === 2) {
    if (!g) throw pathNotFound();
    return { body: { kind: 'APIGroup', apiVersion: 'v1', ...groupDoc(g) } };
  }
  if (parts.length === 3) {
    const list = all.get(`${parts[1]}/${parts[2]}`);
    if (!list) throw pathNotFound();
    return { body: resourceList(`${parts[1]}/${parts[2]}`, list) };
  }
  return undefined;
}

/** The 404 kube-apiserver gives for a path it serves nothing at. */
export function pathNotFound(): StatusError {
  return new StatusError('NotFound', 404, 'the server could not find the requested resource', {});
}
