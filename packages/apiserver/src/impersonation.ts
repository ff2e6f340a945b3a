// The default impersonation filter, as upstream's: the Impersonate-User / -Group / -Uid / -Extra-<key>
// headers name the user to act as, and each requested identity must be allowed by the authorizer for the
// `impersonate` verb (users, groups, uids and userextras/<key> in the core or authentication.k8s.io group).
import { BadRequestError, StatusError } from '@kemu/core';
import {
  AUTHENTICATED_GROUP,
  type AuthenticationRequest,
  type AuthorizationAttributes,
  type Authorizer,
  type Impersonator,
  type UserInfo,
} from './auth-seams.js';

function values(h: string | string[] | undefined): string[] {
  if (h === undefined) return [];
  return Array.isArray(h) ? h : [h];
}

export const defaultImpersonator: Impersonator = {
  async impersonate(user: UserInfo, req: AuthenticationRequest, authorizer: Authorizer) {
    const names = values(req.headers['impersonate-user']);
    const groups = values(req.headers['impersonate-group']);
    const uids = values(req.headers['impersonate-uid']);
    const extra: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (!k.startsWith('impersonate-extra-')) continue;
      const key = decodeURIComponent(k.slice('impersonate-extra-'.length));
      extra[key] = values(v).flatMap((s) => s.split(',').map((x) => x.trim()));
    }
    if (!names.length) {
      if (groups.length || uids.length || Object.keys(extra).length)
        throw new BadRequestError('requested impersonation of groups, uid or extra without impersonating a user');
      return { user };
    }
    if (names.length > 1 || uids.length > 1) throw new BadRequestError('only one Impersonate-User and one Impersonate-Uid header may be given');
    const check = async (resource: string, name: string, subresource = '', apiGroup = '') => {
      const attrs: AuthorizationAttributes = {
        user,
        verb: 'impersonate',
        isResourceRequest: true,
        path: '',
        apiPrefix: '',
        apiGroup,
        apiVersion: '',
        namespace: '',
        resource,
        subresource,
        name,
      };
      const d = await authorizer.authorize(attrs);
      if (d.decision !== 'allow')
        throw new StatusError('Forbidden', 403, `${resource} "${name}" is forbidden: User "${user.name}" cannot impersonate resource "${resource}" in API group "${apiGroup}" at the cluster scope${d.reason ? `: ${d.reason}` : ''}`, {
          name,
          kind: resource,
          group: apiGroup,
        });
    };
    const target = names[0];
    const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(target);
    if (sa) await check('serviceaccounts', sa[2]);
    else await check('users', target);
    for (const g of groups) await check('groups', g);
    for (const u of uids) await check('uids', u, '', 'authentication.k8s.io');
    for (const [k, vs] of Object.entries(extra)) for (const v of vs) await check('userextras', v, k, 'authentication.k8s.io');
    const impersonated: UserInfo = {
      name: target,
      ...(uids[0] ? { uid: uids[0] } : {}),
      groups: [...groups, ...(target !== 'system:anonymous' && !groups.includes(AUTHENTICATED_GROUP) ? [AUTHENTICATED_GROUP] : [])],
      ...(Object.keys(extra).length ? { extra } : {}),
    };
    return { user: impersonated, impersonatedBy: user };
  },
};
