// Which requests an admission policy or webhook applies to, as upstream matches them: rules on operations,
// API groups and versions, resources (with `*`, `resource/sub`, `*\/sub`, `resource/*`, `*\/*`), scope and
// resource names, then the namespace and object label selectors. One home for VAP and webhooks.
import { type LabelSelector, matchLabels, type NamedRuleWithOperations, type Store } from '@kemu/core';
import type { AdmissionAttributes } from '../auth-seams.js';

const has = (list: readonly string[] | undefined, v: string) => (list ?? []).includes('*') || (list ?? []).includes(v);

function resourceMatches(patterns: readonly string[] | undefined, resource: string, sub: string): boolean {
  for (const p of patterns ?? []) {
    if (!sub) {
      if (p === '*' || p === resource) return true;
      continue;
    }
    const [r, s] = p.split('/', 2);
    if (s === undefined) continue;
    if ((r === '*' || r === resource) && (s === '*' || s === sub)) return true;
  }
  return false;
}

/** Whether one rule covers the request. */
export function ruleMatches(rule: NamedRuleWithOperations, attrs: AdmissionAttributes): boolean {
  if (!has(rule.operations, attrs.operation)) return false;
  if (!has(rule.apiGroups, attrs.resource.group)) return false;
  if (!has(rule.apiVersions, attrs.resource.version)) return false;
  if (!resourceMatches(rule.resources, attrs.resource.resource, attrs.subresource)) return false;
  const scope = rule.scope ?? '*';
  if (scope === 'Cluster' && attrs.namespace) return false;
  if (scope === 'Namespaced' && !attrs.namespace) return false;
  if (rule.resourceNames?.length && !rule.resourceNames.includes(attrs.name)) return false;
  return true;
}

export function rulesMatch(rules: readonly NamedRuleWithOperations[] | undefined, attrs: AdmissionAttributes): boolean {
  return (rules ?? []).some((r) => ruleMatches(r, attrs));
}

/** The labels of the request's namespace (the namespace itself for a Namespace request), or undefined. */
export async function namespaceLabels(store: Store, attrs: AdmissionAttributes): Promise<Record<string, string> | undefined> {
  if (attrs.resource.group === '' && attrs.resource.resource === 'namespaces') return (attrs.object ?? attrs.oldObject)?.metadata?.labels ?? {};
  if (!attrs.namespace) return undefined;
  try {
    return (await store.get('Namespace', '', attrs.namespace)).metadata.labels ?? {};
  } catch {
    return {};
  }
}

/**
 * Whether the namespace and object selectors accept the request. A cluster-scoped object passes any
 * namespace selector; the object selector is tried on the new and the old object, as upstream does.
 */
export async function selectorsMatch(store: Store, attrs: AdmissionAttributes, nsSel?: LabelSelector, objSel?: LabelSelector): Promise<boolean> {
  const nonEmpty = (s?: LabelSelector) => s && (Object.keys(s.matchLabels ?? {}).length || (s.matchExpressions ?? []).length);
  if (nonEmpty(nsSel)) {
    const labels = await namespaceLabels(store, attrs);
    if (labels !== undefined && !matchLabels(nsSel, labels)) return false;
  }
  if (nonEmpty(objSel)) {
    const objs = [attrs.object, attrs.oldObject].filter(Boolean);
    if (!objs.some((o) => matchLabels(objSel, o!.metadata?.labels ?? {}))) return false;
  }
  return true;
}
