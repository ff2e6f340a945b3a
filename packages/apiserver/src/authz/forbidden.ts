// The 403 a denied request gets, worded as kube-apiserver words it:
// `pods is forbidden: User "x" cannot list resource "pods" in API group "" in the namespace "y"`.
import { StatusError } from '@kemu/core';
import type { AuthorizationAttributes } from '../auth-seams.js';

/** The sentence naming who cannot do what (upstream `forbiddenMessage`). */
export function forbiddenMessage(attrs: AuthorizationAttributes): string {
  const user = attrs.user?.name ?? '';
  if (!attrs.isResourceRequest) return `User "${user}" cannot ${attrs.verb} path "${attrs.path}"`;
  const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  const scope = attrs.namespace ? `in the namespace "${attrs.namespace}"` : 'at the cluster scope';
  return `User "${user}" cannot ${attrs.verb} resource "${resource}" in API group "${attrs.apiGroup}" ${scope}`;
}

/**
 * A Forbidden status for a resource (upstream `NewForbidden`): the name is quoted only when there is one, and
 * empty detail fields are left out as upstream's JSON leaves them.
 */
export function forbiddenError(group: string, resource: string, name: string, why: string): StatusError {
  const qualified = resource ? (group ? `${resource}.${group}` : resource) : '';
  const message = !qualified ? `forbidden: ${why}` : name ? `${qualified} "${name}" is forbidden: ${why}` : `${qualified} is forbidden: ${why}`;
  return new StatusError('Forbidden', 403, message, { ...(name ? { name } : {}), ...(group ? { group } : {}), ...(resource ? { kind: resource } : {}) });
}

/** The 403 for a request the authorizer did not allow; `reason` is the authorizer's, appended as upstream. */
export function authorizationForbidden(attrs: AuthorizationAttributes, reason = ''): StatusError {
  const msg = forbiddenMessage(attrs);
  const why = reason ? `${msg}: ${reason}` : msg;
  return attrs.isResourceRequest ? forbiddenError(attrs.apiGroup, attrs.resource, attrs.name, why) : forbiddenError('', '', '', why);
}
