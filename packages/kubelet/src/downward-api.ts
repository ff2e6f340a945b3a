// Values the downward API exposes, for env (fieldRef/resourceFieldRef) and downwardAPI volume files:
// upstream's fieldpath.ExtractFieldPathAsString plus the kubelet's runtime fields, and
// ExtractContainerResourceValue with limits defaulted to the node's allocatable.
import { type Container, parseQuantity, type Pod, type ResourceList } from '@kemu/core';

export interface DownwardContext {
  /** The pod's IPs, from its sandbox (host network pods: the node's). */
  podIPs: string[];
  hostIPs: string[];
}

/** Error of an unsupported field path or resource (the kubelet's wording). */
export class DownwardAPIError extends Error {
  override readonly name = 'DownwardAPIError';
}

/** `k="v"` lines, keys sorted, values quoted (Go's `%q`), as downward API label/annotation files hold them. */
export function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(m![k])}`)
    .join('\n');
}

const SUBSCRIPT = /^(metadata\.(?:labels|annotations))\['(.*)'\]$/;

/** The value of a pod field path (`metadata.name`, `metadata.labels['app']`, `status.podIP`, ...). */
export function podFieldValue(pod: Pod, fieldPath: string, ctx: DownwardContext): string {
  const meta = pod.metadata;
  const sub = SUBSCRIPT.exec(fieldPath);
  if (sub) {
    const map = sub[1] === 'metadata.labels' ? meta.labels : meta.annotations;
    return map?.[sub[2]] ?? '';
  }
  switch (fieldPath) {
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? '';
    case 'metadata.uid':
      return meta.uid ?? '';
    case 'metadata.labels':
      return formatMap(meta.labels);
    case 'metadata.annotations':
      return formatMap(meta.annotations);
    case 'spec.nodeName':
      return pod.spec.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec.serviceAccountName ?? '';
    case 'status.hostIP':
      return ctx.hostIPs[0] ?? '';
    case 'status.hostIPs':
      return ctx.hostIPs.join(',');
    case 'status.podIP':
      return ctx.podIPs[0] ?? '';
    case 'status.podIPs':
      return ctx.podIPs.join(',');
  }
  throw new DownwardAPIError(`unsupported fieldPath: ${fieldPath}`);
}

const DEFAULTED = ['cpu', 'memory', 'ephemeral-storage'];

/** `limits.cpu`, `requests.memory`, `limits.hugepages-2Mi`, ... of a container, divided by `divisor`, rounded up. */
export function containerResourceValue(
  container: Container,
  resource: string,
  divisor: string | undefined,
  allocatable: ResourceList,
): string {
  const dot = resource.indexOf('.');
  const which = resource.slice(0, dot);
  const name = resource.slice(dot + 1);
  const known = DEFAULTED.includes(name) || name.startsWith('hugepages-');
  if ((which !== 'limits' && which !== 'requests') || !known) {
    throw new DownwardAPIError(`unsupported container resource : ${resource}`);
  }
  let q = container.resources?.[which]?.[name];
  // Limits left unset are the node's allocatable (the kubelet's defaultPodLimitsForDownwardAPI).
  if (q === undefined && which === 'limits' && DEFAULTED.includes(name)) q = allocatable[name];
  const value = parseQuantity(q ?? 0);
  const div = parseQuantity(divisor === undefined || divisor === '' || parseQuantity(divisor).nanos === 0n ? '1' : divisor);
  const n = name === 'cpu' ? Math.ceil(value.milliValue() / div.milliValue()) : Math.ceil(value.value() / div.value());
  return String(n);
}
