// Output formatted like kubectl's: the columns (and -o wide ones) are the API server's Table printers, so
// `kemu get` and `kubectl get` show the same thing; this file only lays the cells out as kubectl does.
import { buildTable, humanDuration, podStatusReason } from '@kemu/apiserver';
import { type KubeObject, lookupKind } from '@kemu/core';

export { humanDuration, podStatusReason };

/** Renders rows as kubectl does: upper-case headers, columns padded and separated by three spaces. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('   ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

export interface PrintOptions {
  wide?: boolean;
  allNamespaces?: boolean;
  now?: number;
}

/** A kubectl-style table for objects of one kind. */
export function printTable(kind: string, items: KubeObject[], o: PrintOptions = {}): string {
  if (!items.length) return '';
  const apiVersion = lookupKind(kind)?.apiVersion ?? items[0].apiVersion;
  const t = buildTable(apiVersion, kind, items, { includeObject: 'None', now: o.now });
  const shown = t.columnDefinitions.map((c, i) => [c, i] as const).filter(([c]) => c.priority === 0 || o.wide);
  const headers = shown.map(([c]) => c.name.toUpperCase());
  const rows = t.rows.map((r) => shown.map(([, i]) => (r.cells[i] === null || r.cells[i] === undefined ? '' : String(r.cells[i]))));
  return o.allNamespaces
    ? table(
        ['NAMESPACE', ...headers],
        rows.map((r, i) => [items[i].metadata.namespace ?? '', ...r]),
      )
    : table(headers, rows);
}

/** `kubectl get` names for kinds: plural, singular and short names. */
export const KIND_ALIASES: Record<string, string> = {
  po: 'Pod',
  pod: 'Pod',
  pods: 'Pod',
  no: 'Node',
  node: 'Node',
  nodes: 'Node',
  ns: 'Namespace',
  namespace: 'Namespace',
  namespaces: 'Namespace',
  pvc: 'PersistentVolumeClaim',
  persistentvolumeclaim: 'PersistentVolumeClaim',
  persistentvolumeclaims: 'PersistentVolumeClaim',
  pv: 'PersistentVolume',
  persistentvolume: 'PersistentVolume',
  persistentvolumes: 'PersistentVolume',
  sc: 'StorageClass',
  storageclass: 'StorageClass',
  storageclasses: 'StorageClass',
  volumeattachment: 'VolumeAttachment',
  volumeattachments: 'VolumeAttachment',
  ev: 'Event',
  event: 'Event',
  events: 'Event',
  cm: 'ConfigMap',
  configmap: 'ConfigMap',
  configmaps: 'ConfigMap',
  lease: 'Lease',
  leases: 'Lease',
  csidriver: 'CSIDriver',
  csidrivers: 'CSIDriver',
  csinode: 'CSINode',
  csinodes: 'CSINode',
  pc: 'PriorityClass',
  priorityclass: 'PriorityClass',
  priorityclasses: 'PriorityClass',
  ippool: 'IPPool',
  ippools: 'IPPool',
  ipamblock: 'IPAMBlock',
  ipamblocks: 'IPAMBlock',
  blockaffinity: 'BlockAffinity',
  blockaffinities: 'BlockAffinity',
  csistoragecapacity: 'CSIStorageCapacity',
  csistoragecapacities: 'CSIStorageCapacity',
  deploy: 'Deployment',
  deployment: 'Deployment',
  deployments: 'Deployment',
  rs: 'ReplicaSet',
  replicaset: 'ReplicaSet',
  replicasets: 'ReplicaSet',
  sts: 'StatefulSet',
  statefulset: 'StatefulSet',
  statefulsets: 'StatefulSet',
  ds: 'DaemonSet',
  daemonset: 'DaemonSet',
  daemonsets: 'DaemonSet',
  controllerrevision: 'ControllerRevision',
  controllerrevisions: 'ControllerRevision',
  rc: 'ReplicationController',
  replicationcontroller: 'ReplicationController',
  replicationcontrollers: 'ReplicationController',
  podtemplate: 'PodTemplate',
  podtemplates: 'PodTemplate',
  job: 'Job',
  jobs: 'Job',
  cj: 'CronJob',
  cronjob: 'CronJob',
  cronjobs: 'CronJob',
  svc: 'Service',
  service: 'Service',
  services: 'Service',
  ep: 'Endpoints',
  endpoints: 'Endpoints',
  endpointslice: 'EndpointSlice',
  endpointslices: 'EndpointSlice',
  netpol: 'NetworkPolicy',
  networkpolicy: 'NetworkPolicy',
  networkpolicies: 'NetworkPolicy',
  ing: 'Ingress',
  ingress: 'Ingress',
  ingresses: 'Ingress',
  ingressclass: 'IngressClass',
  ingressclasses: 'IngressClass',
  sa: 'ServiceAccount',
  serviceaccount: 'ServiceAccount',
  serviceaccounts: 'ServiceAccount',
  quota: 'ResourceQuota',
  resourcequota: 'ResourceQuota',
  resourcequotas: 'ResourceQuota',
  limits: 'LimitRange',
  limitrange: 'LimitRange',
  limitranges: 'LimitRange',
  pdb: 'PodDisruptionBudget',
  poddisruptionbudget: 'PodDisruptionBudget',
  poddisruptionbudgets: 'PodDisruptionBudget',
  hpa: 'HorizontalPodAutoscaler',
  horizontalpodautoscaler: 'HorizontalPodAutoscaler',
  horizontalpodautoscalers: 'HorizontalPodAutoscaler',
};

export function resolveKind(word: string): string | undefined {
  return KIND_ALIASES[word.toLowerCase()];
}
