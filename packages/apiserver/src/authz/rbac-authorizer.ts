// The RBAC authorizer: allow when a rule of a role bound to the user (through a ClusterRoleBinding, or a
// RoleBinding in the request's namespace) covers the request; otherwise no opinion, as upstream.
import type { KubeObject, PolicyRule, RoleRef, Subject } from '@kemu/core';
import type { AuthorizationAttributes, AuthorizationResult, Authorizer, UserInfo } from '../auth-seams.js';
import { type RuleRequest, ruleAllows, subjectMatches, userKeys } from './rbac-rules.js';
import type { RBACSource } from './rbac-source.js';

/** A binding that applies to a user, with the rules of the role it references (or why they are missing). */
export interface AppliedBinding {
  binding: KubeObject;
  subject: Subject;
  rules: readonly PolicyRule[];
  error?: string;
}

function describeSubject(s: Subject, ns: string): string {
  if (s.kind === 'ServiceAccount') return `ServiceAccount "${s.name}/${s.namespace || ns}"`;
  return `${s.kind} "${s.name}"`;
}

function describeBinding(a: AppliedBinding): string {
  const b = a.binding;
  const ref = b.roleRef as RoleRef;
  const ns = b.metadata.namespace ?? '';
  const name = ns ? `${b.metadata.name}/${ns}` : b.metadata.name;
  return `${b.kind} "${name}" of ${ref.kind} "${ref.name}" to ${describeSubject(a.subject, ns)}`;
}

export class RBACAuthorizer implements Authorizer {
  constructor(readonly source: RBACSource) {}

  /** The rules a role reference grants, or the NotFound text upstream reports for a missing role. */
  roleRefRules(ref: RoleRef, namespace: string): { rules: readonly PolicyRule[]; error?: string } {
    if (ref.kind === 'ClusterRole') {
      const r = this.source.clusterRole(ref.name);
      return r ? { rules: r.rules ?? [] } : { rules: [], error: `clusterrole.rbac.authorization.k8s.io "${ref.name}" not found` };
    }
    if (ref.kind === 'Role') {
      const r = namespace ? this.source.role(namespace, ref.name) : undefined;
      return r ? { rules: r.rules ?? [] } : { rules: [], error: `role.rbac.authorization.k8s.io "${ref.name}" not found` };
    }
    return { rules: [], error: `unsupported role reference kind: "${ref.kind}"` };
  }

  /**
   * Visits every binding that applies to the user in the namespace ('' = cluster bindings only), cluster
   * bindings first; stop early by returning true from `visit`.
   */
  visit(user: UserInfo, namespace: string, visit: (a: AppliedBinding) => boolean): void {
    const keys = userKeys(user);
    const one = (b: KubeObject, ns: string): boolean => {
      const subject = ((b.subjects ?? []) as Subject[]).find((s) => subjectMatches(s, user, ns));
      if (!subject) return false;
      const { rules, error } = this.roleRefRules(b.roleRef, ns);
      return visit({ binding: b, subject, rules, error });
    };
    for (const b of this.source.clusterRoleBindings(keys)) if (one(b, '')) return;
    if (!namespace) return;
    for (const b of this.source.roleBindings(namespace, keys)) if (one(b, namespace)) return;
  }

  /** Whether the user may do what `req` describes in `namespace` (upstream's visitor, without the HTTP). */
  decide(user: UserInfo, namespace: string, req: RuleRequest): AuthorizationResult {
    let allowedBy: AppliedBinding | undefined;
    const errors: string[] = [];
    this.visit(user, namespace, (a) => {
      if (a.error) errors.push(a.error);
      if (a.rules.some((r) => ruleAllows(req, r))) {
        allowedBy = a;
        return true;
      }
      return false;
    });
    if (allowedBy) return { decision: 'allow', reason: `RBAC: allowed by ${describeBinding(allowedBy)}` };
    const reason = errors.length === 0 ? '' : `RBAC: ${errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`}`;
    return { decision: 'no-opinion', reason };
  }

  /**
   * Whether a rule naming no objects allows the request, so that it is allowed for every object name: the
   * answer one cached decision can stand for, whatever object the request names.
   */
  decideForEveryName(user: UserInfo, namespace: string, req: RuleRequest): AuthorizationResult {
    let allowedBy: AppliedBinding | undefined;
    this.visit(user, namespace, (a) => {
      if (a.rules.some((r) => !r.resourceNames?.length && ruleAllows(req, r))) allowedBy = a;
      return Boolean(allowedBy);
    });
    return allowedBy ? { decision: 'allow', reason: `RBAC: allowed by ${describeBinding(allowedBy)}` } : { decision: 'no-opinion', reason: '' };
  }

  async authorize(attrs: AuthorizationAttributes): Promise<AuthorizationResult> {
    return this.decide(attrs.user, attrs.isResourceRequest ? attrs.namespace : '', attrs);
  }

  /** Every rule the user holds in the namespace (cluster-wide ones included), and resolution errors. */
  rulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; errors: string[] } {
    const rules: PolicyRule[] = [];
    const errors: string[] = [];
    this.visit(user, namespace, (a) => {
      if (a.error) errors.push(a.error);
      rules.push(...a.rules);
      return false;
    });
    return { rules, errors };
  }
}
