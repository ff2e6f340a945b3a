// The authorization.k8s.io review requests: SubjectAccessReview, LocalSubjectAccessReview,
// SelfSubjectAccessReview (`kubectl auth can-i`) and SelfSubjectRulesReview (`kubectl auth can-i --list`).
// Each is a create that stores nothing and answers with the request plus its status.
import {
  AUTHORIZATION_GROUP,
  BadRequestError,
  FieldErrors,
  InvalidError,
  type NonResourceRule,
  type ResourceAttributes,
  type NonResourceAttributes,
  type ResourceRule,
  type SubjectAccessReviewStatus,
} from '@kemu/core';
import type { AuthorizationAttributes, Authorizer, UserInfo } from '../auth-seams.js';
import type { RBACAuthorizer } from './rbac-authorizer.js';

interface ReviewBody {
  apiVersion?: string;
  kind?: string;
  metadata?: Record<string, unknown>;
  spec?: Record<string, any>;
}

function attributesOf(user: UserInfo, spec: { resourceAttributes?: ResourceAttributes; nonResourceAttributes?: NonResourceAttributes }): AuthorizationAttributes {
  const r = spec.resourceAttributes;
  if (r) {
    return {
      user,
      isResourceRequest: true,
      path: '',
      verb: r.verb ?? '',
      apiPrefix: r.group ? 'apis' : 'api',
      apiGroup: r.group ?? '',
      apiVersion: r.version ?? '',
      namespace: r.namespace ?? '',
      resource: r.resource ?? '',
      subresource: r.subresource ?? '',
      name: r.name ?? '',
    };
  }
  const n = spec.nonResourceAttributes ?? {};
  return { user, isResourceRequest: false, path: n.path ?? '', verb: n.verb ?? '', apiPrefix: '', apiGroup: '', apiVersion: '', namespace: '', resource: '', subresource: '', name: '' };
}

function metadataEmpty(e: FieldErrors, meta: Record<string, unknown> | undefined, allow: string[] = []): void {
  const extra = Object.entries(meta ?? {}).filter(([k, v]) => !allow.includes(k) && v !== undefined && v !== null && v !== '');
  if (extra.length) e.invalid('metadata', meta, 'must be empty');
}

function attributesSpec(e: FieldErrors, spec: Record<string, any>): void {
  const hasR = spec.resourceAttributes != null;
  const hasN = spec.nonResourceAttributes != null;
  if (!hasR && !hasN) e.required('spec.resourceAttributes', 'exactly one of nonResourceAttributes or resourceAttributes must be specified');
  if (hasR && hasN) e.invalid('spec.nonResourceAttributes', spec.nonResourceAttributes, 'cannot be specified in combination with resourceAttributes');
}

function assertOk(e: FieldErrors, kind: string): void {
  if (!e.ok) throw new InvalidError(kind, '', AUTHORIZATION_GROUP, e.list);
}

function checkBody(body: ReviewBody, kind: string): Record<string, any> {
  if (!body || typeof body !== 'object' || typeof body.spec !== 'object' || body.spec === null) {
    throw new InvalidError(kind, '', AUTHORIZATION_GROUP, [{ field: 'spec', type: 'FieldValueRequired', message: 'Required value' }]);
  }
  return body.spec;
}

async function decide(authz: Authorizer, attrs: AuthorizationAttributes): Promise<SubjectAccessReviewStatus> {
  const r = await authz.authorize(attrs);
  const status: SubjectAccessReviewStatus = { allowed: r.decision === 'allow' };
  if (r.decision === 'deny') status.denied = true;
  if (r.reason) status.reason = r.reason;
  return status;
}

function answer<S>(body: ReviewBody, kind: string, status: S, meta: Record<string, unknown> = {}) {
  return { kind, apiVersion: `${AUTHORIZATION_GROUP}/v1`, metadata: { creationTimestamp: null, ...meta }, spec: body.spec, status };
}

/** SelfSubjectAccessReview: may the requesting user do this? */
export async function selfSubjectAccessReview(authz: Authorizer, user: UserInfo, body: ReviewBody) {
  const spec = checkBody(body, 'SelfSubjectAccessReview');
  const e = new FieldErrors();
  metadataEmpty(e, body.metadata);
  attributesSpec(e, spec);
  assertOk(e, 'SelfSubjectAccessReview');
  return answer(body, 'SelfSubjectAccessReview', await decide(authz, attributesOf(user, spec)));
}

function subjectOf(spec: Record<string, any>): UserInfo {
  return { name: spec.user ?? '', groups: spec.groups ?? [], ...(spec.uid ? { uid: spec.uid } : {}), ...(spec.extra ? { extra: spec.extra } : {}) };
}

/** SubjectAccessReview: may the named user (or groups) do this? */
export async function subjectAccessReview(authz: Authorizer, body: ReviewBody) {
  const spec = checkBody(body, 'SubjectAccessReview');
  const e = new FieldErrors();
  metadataEmpty(e, body.metadata);
  attributesSpec(e, spec);
  if (!spec.user && !spec.groups?.length) e.invalid('spec.user', spec.user ?? '', 'at least one of user or group must be specified');
  assertOk(e, 'SubjectAccessReview');
  return answer(body, 'SubjectAccessReview', await decide(authz, attributesOf(subjectOf(spec), spec)));
}

/** LocalSubjectAccessReview: a SubjectAccessReview confined to the namespace of its URL. */
export async function localSubjectAccessReview(authz: Authorizer, namespace: string, body: ReviewBody) {
  const spec = checkBody(body, 'LocalSubjectAccessReview');
  const metaNs = (body.metadata?.namespace as string | undefined) ?? namespace;
  if (metaNs !== namespace) throw new BadRequestError(`namespace of the request (${namespace}) does not match the namespace of the object (${metaNs})`);
  const e = new FieldErrors();
  metadataEmpty(e, body.metadata, ['namespace']);
  if (spec.nonResourceAttributes) e.invalid('spec.nonResourceAttributes', spec.nonResourceAttributes, 'disallowed on this kind of request');
  if (!spec.resourceAttributes) e.required('spec.resourceAttributes');
  else if ((spec.resourceAttributes.namespace ?? '') !== namespace) {
    e.invalid('spec.resourceAttributes.namespace', spec.resourceAttributes.namespace ?? '', 'must match metadata.namespace');
  }
  if (!spec.user && !spec.groups?.length) e.invalid('spec.user', spec.user ?? '', 'at least one of user or group must be specified');
  assertOk(e, 'LocalSubjectAccessReview');
  return answer(body, 'LocalSubjectAccessReview', await decide(authz, attributesOf(subjectOf(spec), spec)), { namespace });
}

/** SelfSubjectRulesReview: every rule the requesting user holds in a namespace. */
export function selfSubjectRulesReview(rbac: RBACAuthorizer, user: UserInfo, body: ReviewBody) {
  const spec = checkBody(body, 'SelfSubjectRulesReview');
  const { rules, errors } = rbac.rulesFor(user, spec.namespace ?? '');
  const resourceRules: ResourceRule[] = [];
  const nonResourceRules: NonResourceRule[] = [];
  for (const r of rules) {
    if (r.nonResourceURLs?.length) nonResourceRules.push({ verbs: r.verbs, nonResourceURLs: r.nonResourceURLs });
    else {
      resourceRules.push({
        verbs: r.verbs,
        ...(r.apiGroups ? { apiGroups: r.apiGroups } : {}),
        ...(r.resources ? { resources: r.resources } : {}),
        ...(r.resourceNames ? { resourceNames: r.resourceNames } : {}),
      });
    }
  }
  return answer(body, 'SelfSubjectRulesReview', {
    resourceRules,
    nonResourceRules,
    incomplete: false,
    ...(errors.length ? { evaluationError: errors.join(', ') } : {}),
  });
}
