// RBAC's privilege-escalation prevention, as kube-apiserver's RBAC storage applies it: a user may write a
// Role or ClusterRole only with rules they already hold (or with the `escalate` verb on it), and a binding
// only to a role whose rules they hold (or with the `bind` verb on it). system:masters is exempt. Run as a
// validating admission plugin, so nothing is written when the check fails.
import { type PolicyRule, RBAC_GROUP, type RoleRef } from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain, AuthorizationAttributes, UserInfo } from '../auth-seams.js';
import { forbiddenError } from './forbidden.js';
import type { RBACAuthorizer } from './rbac-authorizer.js';
import { apiGroupMatches, resourceMatches, verbMatches } from './rbac-rules.js';

const SYSTEM_MASTERS = 'system:masters';

/** One requested rule per verb, group, resource and name, as upstream's BreakdownRule splits it. */
export function breakdownRule(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  const verbs = rule.verbs ?? [];
  for (const group of rule.apiGroups ?? []) {
    for (const resource of rule.resources ?? []) {
      for (const verb of verbs) {
        if (rule.resourceNames?.length) {
          for (const name of rule.resourceNames) out.push({ apiGroups: [group], resources: [resource], verbs: [verb], resourceNames: [name] });
        } else out.push({ apiGroups: [group], resources: [resource], verbs: [verb] });
      }
    }
  }
  for (const url of rule.nonResourceURLs ?? []) for (const verb of verbs) out.push({ nonResourceURLs: [url], verbs: [verb] });
  return out;
}

/** Whether an owner rule covers one broken-down requested rule (wildcards in the owner's rule only). */
function ruleCovers(owner: PolicyRule, want: PolicyRule): boolean {
  if (!verbMatches(owner, want.verbs[0])) return false;
  if (want.nonResourceURLs?.length) {
    const url = want.nonResourceURLs[0];
    return (owner.nonResourceURLs ?? []).some((o) => o === '*' || o === url || (o.endsWith('*') && url.startsWith(o.slice(0, -1))));
  }
  const group = want.apiGroups![0];
  const resource = want.resources![0];
  if (!apiGroupMatches(owner, group)) return false;
  const slash = resource.indexOf('/');
  const sub = slash < 0 ? '' : resource.slice(slash + 1);
  if (!resourceMatches(owner, resource, sub)) return false;
  if (!owner.resourceNames?.length) return true;
  return want.resourceNames?.length === 1 && owner.resourceNames.includes(want.resourceNames[0]);
}

/** Whether the owner's rules cover every requested rule; the requested rights they miss. */
export function covers(ownerRules: readonly PolicyRule[], requested: readonly PolicyRule[]): { ok: boolean; missing: PolicyRule[] } {
  const missing: PolicyRule[] = [];
  for (const r of requested) for (const b of breakdownRule(r)) if (!ownerRules.some((o) => ruleCovers(o, b))) missing.push(b);
  return { ok: missing.length === 0, missing };
}

/** Merges broken-down resource rules that differ only by verb (upstream's CompactRules). */
function compactRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const out: PolicyRule[] = [];
  const simple = new Map<string, PolicyRule>();
  for (const r of rules) {
    if (r.apiGroups?.length === 1 && r.resources?.length === 1 && !r.resourceNames?.length && !r.nonResourceURLs?.length) {
      const key = `${r.apiGroups[0]}\u0000${r.resources[0]}`;
      const seen = simple.get(key);
      if (seen) {
        for (const v of r.verbs) if (!seen.verbs.includes(v)) seen.verbs.push(v);
        continue;
      }
      const copy = { apiGroups: [...r.apiGroups], resources: [...r.resources], verbs: [...r.verbs] };
      simple.set(key, copy);
      out.push(copy);
    } else out.push(r);
  }
  return out;
}

const goQuote = (xs: readonly string[]) => `[${xs.map((x) => JSON.stringify(x)).join(' ')}]`;

/** A rule as upstream's CompactString prints it: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`. */
export function compactString(r: PolicyRule): string {
  const parts: string[] = [];
  if (r.apiGroups?.length) parts.push(`APIGroups:${goQuote(r.apiGroups)}`);
  if (r.resources?.length) parts.push(`Resources:${goQuote(r.resources)}`);
  if (r.nonResourceURLs?.length) parts.push(`NonResourceURLs:${goQuote(r.nonResourceURLs)}`);
  if (r.resourceNames?.length) parts.push(`ResourceNames:${goQuote(r.resourceNames)}`);
  if (r.verbs?.length) parts.push(`Verbs:${goQuote(r.verbs)}`);
  return `{${parts.join(', ')}}`;
}

export class RBACEscalationCheck implements AdmissionChain {
  constructor(private readonly rbac: RBACAuthorizer) {}

  async admit(): Promise<void> {}

  async validate(attrs: AdmissionAttributes): Promise<void> {
    if (attrs.resource.group !== RBAC_GROUP || attrs.subresource) return;
    if (attrs.operation !== 'CREATE' && attrs.operation !== 'UPDATE') return;
    const obj = attrs.object;
    if (!obj) return;
    const user = attrs.userInfo;
    if (user.groups.includes(SYSTEM_MASTERS)) return;
    const resource = attrs.resource.resource;
    const ns = attrs.namespace;
    const name = attrs.name || obj.metadata?.name || '';
    switch (resource) {
      case 'roles':
      case 'clusterroles': {
        if (this.allowed(user, 'escalate', resource, ns, name)) return;
        if (resource === 'clusterroles' && obj.aggregationRule) {
          throw forbiddenError(RBAC_GROUP, resource, name, 'must have cluster-admin privileges to use the aggregationRule');
        }
        this.confirmNoEscalation(user, ns, obj.rules ?? [], resource, name);
        return;
      }
      case 'rolebindings':
      case 'clusterrolebindings': {
        const ref = obj.roleRef as RoleRef | undefined;
        if (!ref) return;
        const refResource = ref.kind === 'Role' ? 'roles' : 'clusterroles';
        if (this.allowed(user, 'bind', refResource, ref.kind === 'Role' ? ns : ns, ref.name)) return;
        const { rules, error } = this.rbac.roleRefRules(ref, ns);
        if (error) throw forbiddenError(RBAC_GROUP, resource, name, error);
        this.confirmNoEscalation(user, ns, rules, resource, name);
        return;
      }
    }
  }

  private allowed(user: UserInfo, verb: string, resource: string, namespace: string, name: string): boolean {
    const attrs: AuthorizationAttributes = {
      user,
      isResourceRequest: true,
      path: '',
      verb,
      apiPrefix: 'apis',
      apiGroup: RBAC_GROUP,
      apiVersion: 'v1',
      namespace,
      resource,
      subresource: '',
      name,
    };
    return this.rbac.decide(user, namespace, attrs).decision === 'allow';
  }

  private confirmNoEscalation(user: UserInfo, namespace: string, rules: readonly PolicyRule[], resource: string, name: string): void {
    const owner = this.rbac.rulesFor(user, namespace);
    const { ok, missing } = covers(owner.rules, rules);
    if (ok) return;
    const lines = [...new Set(compactRules(missing).map(compactString))].sort();
    let msg = `user "${user.name}" (groups=${goQuote(user.groups)}) is attempting to grant RBAC permissions not currently held:\n${lines.join('\n')}`;
    if (owner.errors.length) msg += `; resolution errors: [${owner.errors.join(' ')}]`;
    throw forbiddenError(RBAC_GROUP, resource, name, msg);
  }
}
