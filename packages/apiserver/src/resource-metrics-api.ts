// The metrics.k8s.io/v1beta1 API (NodeMetrics as `nodes`, PodMetrics as `pods`) that kube-apiserver proxies to
// metrics-server and kubectl top reads: get and list only, label selectors matched against the Node's or
// Pod's own labels as metrics-server matches them, and NotFound named as metrics-server names it.
import { type KindInfo, type KubeObject, NotFoundError, StatusError, type Store, toSelector } from '@kemu/core';
import type { RequestInfo } from './auth-seams.js';
import type { ResourceInfo } from './resource-catalog.js';
import { type OutgoingResponse, send } from './responses.js';
import type { ApiExtensions } from './server-extensions.js';

export const METRICS_GROUP = 'metrics.k8s.io';
const VERSION = 'v1beta1';
const API_VERSION = `${METRICS_GROUP}/${VERSION}`;

function metricsResource(resource: 'nodes' | 'pods', kind: string, namespaced: boolean): ResourceInfo {
  const info: KindInfo = { kind, apiVersion: API_VERSION, group: METRICS_GROUP, version: VERSION, resource, namespaced, hasStatus: false, fields: {} };
  return { info, singularName: '', shortNames: [], categories: [], verbs: ['get', 'list'], subresources: [] };
}

/** What discovery lists for the group while a metrics source is configured. */
export function resourceMetricsDiscovery(): ResourceInfo[] {
  return [metricsResource('nodes', 'NodeMetrics', false), metricsResource('pods', 'PodMetrics', true)];
}

/** Serve one metrics.k8s.io request from the extension's current metrics. */
export async function serveResourceMetrics(
  ext: Required<Pick<ApiExtensions, 'resourceMetrics'>>,
  store: Store,
  info: RequestInfo,
  query: URLSearchParams,
  res: OutgoingResponse,
): Promise<void> {
  const resource = info.resource;
  if (info.apiVersion !== VERSION || (resource !== 'nodes' && resource !== 'pods') || info.subresource)
    throw new StatusError('NotFound', 404, 'the server could not find the requested resource', {});
  if (resource === 'nodes' && info.namespace) throw new StatusError('NotFound', 404, 'the server could not find the requested resource', {});
  if (info.verb !== 'get' && info.verb !== 'list')
    throw new StatusError('MethodNotAllowed', 405, 'the server does not allow this method on the requested resource');
  const all = await ext.resourceMetrics();
  let items = (resource === 'nodes' ? all.nodes : all.pods).filter((m) => !info.namespace || m.metadata.namespace === info.namespace);
  if (info.verb === 'get') {
    const found = items.find((m) => m.metadata.name === info.name);
    if (!found) throw new NotFoundError({ resource, group: METRICS_GROUP, name: info.name });
    return send(res, 200, found);
  }
  const labelSelector = query.get('labelSelector');
  if (labelSelector) {
    const sel = toSelector(labelSelector);
    // Metrics carry no labels of their own here: match the Node's or Pod's, as metrics-server does.
    const objects = (await store.list(resource === 'nodes' ? 'Node' : 'Pod', info.namespace ? { namespace: info.namespace } : {})).items as KubeObject[];
    const labels = new Map(objects.map((o) => [`${o.metadata.namespace ?? ''}/${o.metadata.name}`, o.metadata.labels ?? {}]));
    items = items.filter((m) => sel.matches(labels.get(`${m.metadata.namespace ?? ''}/${m.metadata.name}`) ?? {}));
  }
  items = [...items].sort((a, b) => `${a.metadata.namespace ?? ''}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace ?? ''}/${b.metadata.name}`));
  send(res, 200, { kind: resource === 'nodes' ? 'NodeMetricsList' : 'PodMetricsList', apiVersion: API_VERSION, metadata: {}, items });
}
