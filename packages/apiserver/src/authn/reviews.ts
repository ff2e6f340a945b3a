// The authentication.k8s.io review requests: SelfSubjectReview (`kubectl auth whoami`) and TokenReview
// (what webhooks and aggregated servers use to check a token). Neither is stored.
import { AUTHENTICATION_GROUP, BadRequestError, type UserInfo as ApiUserInfo } from '@kemu/core';
import type { UserInfo } from '../auth-seams.js';
import { authenticateToken, type TokenAuthenticator } from './bearer-token.js';

/** A pipeline user as the API's `UserInfo` (`username`, not `name`). */
export function apiUserInfo(u: UserInfo): ApiUserInfo {
  return {
    username: u.name,
    ...(u.uid ? { uid: u.uid } : {}),
    groups: [...u.groups],
    ...(u.extra ? { extra: u.extra } : {}),
  };
}

export function selfSubjectReview(user: UserInfo) {
  return {
    kind: 'SelfSubjectReview',
    apiVersion: `${AUTHENTICATION_GROUP}/v1`,
    metadata: { creationTimestamp: null },
    status: { userInfo: apiUserInfo(user) },
  };
}

/** TokenReview: who a token names, for the audiences asked (the API's own by default). */
export async function tokenReview(
  authenticators: readonly TokenAuthenticator[],
  apiAudiences: string[],
  body: { spec?: { token?: string; audiences?: string[] } },
) {
  const token = body?.spec?.token;
  if (!token) throw new BadRequestError('token is required for TokenReview in authentication');
  const audiences = body.spec?.audiences?.length ? body.spec.audiences : apiAudiences;
  let status: Record<string, unknown>;
  try {
    const r = await authenticateToken(authenticators, token, audiences);
    status = r
      ? { authenticated: true, user: apiUserInfo(r.user), audiences: r.audiences ?? audiences }
      : { user: {}, error: '[invalid bearer token, token lookup failed]' };
  } catch (err) {
    status = { user: {}, error: (err as { detail?: string }).detail ?? (err as Error).message };
  }
  return {
    kind: 'TokenReview',
    apiVersion: `${AUTHENTICATION_GROUP}/v1`,
    metadata: { creationTimestamp: null },
    spec: body.spec,
    status,
  };
}
