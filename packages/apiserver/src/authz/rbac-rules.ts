// RBAC's matching rules, as upstream's authorizer applies them: which PolicyRule covers a request, and
// which binding subject names a user.
import type { PolicyRule, Subject } from '@kemu/core';
import type { RequestInfo, UserInfo } from '../auth-seams.js';

export const VERB_ALL = '*';
export const API_GROUP_ALL = '*';
export const RESOURCE_ALL = '*';
export const NON_RESOURCE_ALL = '*';

/** The attributes a rule is matched against (a request, or a review's resourceAttributes). */
export type RuleRequest = Pick<
  RequestInfo,
  'isResourceRequest' | 'verb' | 'apiGroup' | 'resource' | 'subresource' | 'name' | 'path'
>;

export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return rule.verbs.includes(VERB_ALL) || rule.verbs.includes(verb);
}

export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  const groups = rule.apiGroups ?? [];
  return groups.includes(API_GROUP_ALL) || groups.includes(group);
}

/**
 * `resource` (or `resource/subresource`) matches itself and `*`; a request for a subresource also matches
 * `*\/subresource`. `resource/*` is not a wildcard upstream, and is not here.
 */
export function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  for (const r of rule.resources ?? []) {
    if (r === RESOURCE_ALL || r === combined) return true;
    if (subresource && r.length === subresource.length + 2 && r.startsWith('*/') && r.endsWith(subresource)) return true;
  }
  return false;
}

export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(name);
}

/** `*` matches every path; a URL ending in `*` matches by prefix. */
export function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  for (const u of rule.nonResourceURLs ?? []) {
    if (u === NON_RESOURCE_ALL || u === path) return true;
    if (u.endsWith('*') && path.startsWith(u.replace(/\*+$/, ''))) return true;
  }
  return false;
}

/** Whether one rule allows a request. */
export function ruleAllows(req: RuleRequest, rule: PolicyRule): boolean {
  if (!rule?.verbs) return false;
  if (req.isResourceRequest) {
    const combined = req.subresource ? `${req.resource}/${req.subresource}` : req.resource;
    return (
      verbMatches(rule, req.verb) &&
      apiGroupMatches(rule, req.apiGroup) &&
      resourceMatches(rule, combined, req.subresource) &&
      resourceNameMatches(rule, req.name)
    );
  }
  return verbMatches(rule, req.verb) && nonResourceURLMatches(rule, req.path);
}

export function rulesAllow(req: RuleRequest, rules: readonly PolicyRule[]): boolean {
  return rules.some((r) => ruleAllows(req, r));
}

/** `system:serviceaccount:<namespace>:<name>`, the user name of a ServiceAccount's tokens. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** The groups every ServiceAccount of a namespace is in. */
export function serviceAccountGroups(namespace: string): string[] {
  return ['system:serviceaccounts', `system:serviceaccounts:${namespace}`];
}

/** Whether a binding subject names the user; `bindingNamespace` defaults a ServiceAccount's namespace. */
export function subjectMatches(subject: Subject, user: UserInfo, bindingNamespace: string): boolean {
  switch (subject.kind) {
    case 'User':
      return user.name === subject.name;
    case 'Group':
      return user.groups.includes(subject.name);
    case 'ServiceAccount':
      return user.name === serviceAccountUsername(subject.namespace || bindingNamespace, subject.name);
    default:
      return false;
  }
}

/**
 * The key a subject is indexed under: the user name it matches (`u:` prefix) or the group (`g:`), so a
 * lookup costs one probe per group of the user instead of a scan of every binding.
 */
export function subjectKey(subject: Subject, bindingNamespace: string): string | undefined {
  switch (subject.kind) {
    case 'User':
      return `u:${subject.name}`;
    case 'Group':
      return `g:${subject.name}`;
    case 'ServiceAccount':
      return `u:${serviceAccountUsername(subject.namespace || bindingNamespace, subject.name)}`;
    default:
      return undefined;
  }
}

export function userKeys(user: UserInfo): string[] {
  return [`u:${user.name}`, ...user.groups.map((g) => `g:${g}`)];
}
