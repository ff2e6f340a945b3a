// Impersonation headers (Impersonate-User, -Group, -Uid, -Extra-<key>), as kube-apiserver's filter reads
// them: each requested identity needs the `impersonate` verb on users/serviceaccounts, groups, uids or
// userextras/<key>; the request then runs as the impersonated user, who is in system:authenticated
// (system:unauthenticated for system:anonymous).
import { StatusError } from '@kemu/core';
import {
  ANONYMOUS_USER,
  AUTHENTICATED_GROUP,
  type AuthenticationRequest,
  type AuthorizationAttributes,
  type Authorizer,
  type Impersonator,
  UNAUTHENTICATED_GROUP,
  type UserInfo,
} from '../auth-seams.js';
import { authorizationForbidden } from '../authz/forbidden.js';
import { serviceAccountGroups } from '../authz/rbac-rules.js';

const SA_PREFIX = 'system:serviceaccount:';

function values(h: string | string[] | undefined): string[] {
  if (h === undefined) return [];
  return Array.isArray(h) ? h : [h];
}

function check(user: UserInfo, resource: string, group: string, name: string, namespace = '', subresource = ''): AuthorizationAttributes {
  return {
    user,
    isResourceRequest: true,
    path: '',
    verb: 'impersonate',
    apiPrefix: 'apis',
    apiGroup: group,
    apiVersion: '',
    namespace,
    resource,
    subresource,
    name,
  };
}

export class HeaderImpersonator implements Impersonator {
  async impersonate(user: UserInfo, req: AuthenticationRequest, authorizer: Authorizer): Promise<{ user: UserInfo; impersonatedBy?: UserInfo }> {
    const h = req.headers;
    const users = values(h['impersonate-user']);
    const groups = values(h['impersonate-group']);
    const uids = values(h['impersonate-uid']);
    const extra: Record<string, string[]> = {};
    // (A key walk, not Object.entries: this runs on every request, nearly all of them without such headers.)
    for (const k in h) {
      if (!k.startsWith('impersonate-extra-')) continue;
      const v = h[k];
      let key: string;
      try {
        key = decodeURIComponent(k.slice('impersonate-extra-'.length)).toLowerCase();
      } catch {
        throw new StatusError('BadRequest', 400, `malformed impersonation header: ${k}`);
      }
      extra[key] = values(v).flatMap((s) => s.split(',').map((x) => x.trim()));
    }
    if (!users.length) {
      if (groups.length || uids.length || Object.keys(extra).length) {
        throw new StatusError('InternalError', 500, 'Internal error occurred: requested impersonation of groups, uid or extra without impersonating a user');
      }
      return { user };
    }
    if (users.length > 1 || uids.length > 1) throw new StatusError('BadRequest', 400, 'only one Impersonate-User and one Impersonate-Uid may be given');
    const name = users[0];
    const checks: AuthorizationAttributes[] = [];
    let impGroups: string[] = [];
    if (name.startsWith(SA_PREFIX) && name.split(':').length === 4) {
      const [, , ns, sa] = name.split(':');
      checks.push(check(user, 'serviceaccounts', '', sa, ns));
      impGroups = serviceAccountGroups(ns);
    } else {
      checks.push(check(user, 'users', '', name));
    }
    for (const g of groups) checks.push(check(user, 'groups', '', g));
    for (const u of uids) checks.push(check(user, 'uids', 'authentication.k8s.io', u));
    for (const [k, vs] of Object.entries(extra)) for (const v of vs) checks.push(check(user, 'userextras', 'authentication.k8s.io', v, '', k));
    for (const c of checks) {
      const r = await authorizer.authorize(c);
      if (r.decision !== 'allow') throw authorizationForbidden(c, r.reason);
    }
    impGroups.push(...groups);
    const always = name === ANONYMOUS_USER ? UNAUTHENTICATED_GROUP : AUTHENTICATED_GROUP;
    if (!impGroups.includes(always)) impGroups.push(always);
    return {
      user: { name, groups: impGroups, ...(uids[0] ? { uid: uids[0] } : {}), ...(Object.keys(extra).length ? { extra } : {}) },
      impersonatedBy: user,
    };
  }
}

/** The impersonator a RequestHandler uses unless given another. */
export const defaultImpersonator: Impersonator = new HeaderImpersonator();
