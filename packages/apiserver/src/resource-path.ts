// The URL path of a resource, as kube-apiserver lays them out: /api/v1 for the core group,
// /apis/<group>/<version> for the others, then namespaces/<ns>/<resource>/<name>/<subresource>.
import type { KindInfo } from '@kemu/core';

export function resourcePath(info: KindInfo, namespace?: string, name?: string, sub?: string): string {
  const base = info.group ? `/apis/${info.group}/${info.version}` : '/api/v1';
  const ns = info.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${ns}/${info.resource}${name ? `/${encodeURIComponent(name)}` : ''}${sub ? `/${sub}` : ''}`;
}
