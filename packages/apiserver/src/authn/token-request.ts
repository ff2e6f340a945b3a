// The serviceaccounts/token subresource (TokenRequest, `kubectl create token`): mints a token for an existing
// ServiceAccount, optionally bound to a Pod, Secret or Node of the same namespace, with kube-apiserver's
// defaults (one hour, the API audiences) and checks.
import {
  AUTHENTICATION_GROUP,
  BadRequestError,
  ConflictError,
  FieldErrors,
  InvalidError,
  type KubeObject,
  rfc3339,
  type Store,
  type TokenRequest,
} from '@kemu/core';
import type { ServiceAccountTokens } from './service-account-token.js';

export const DEFAULT_EXPIRATION_SECONDS = 3600;
const MIN_EXPIRATION_SECONDS = 600;
const MAX_EXPIRATION_SECONDS = 2 ** 32;

export interface TokenRequestContext {
  store: Store;
  tokens: ServiceAccountTokens;
  namespace: string;
  /** The ServiceAccount named in the URL. */
  name: string;
  body: unknown;
  /** Longest lifetime a token may be given; longer requests are cut to it (upstream's max expiration). */
  maxExpirationSeconds?: number;
}

function validate(req: TokenRequest): void {
  const e = new FieldErrors();
  const exp = req.spec.expirationSeconds;
  if (exp !== undefined) {
    if (!Number.isInteger(exp)) e.invalid('spec.expirationSeconds', exp, 'must be an integer');
    else if (exp < MIN_EXPIRATION_SECONDS) e.invalid('spec.expirationSeconds', exp, 'may not specify a duration less than 10 minutes');
    else if (exp > MAX_EXPIRATION_SECONDS) e.invalid('spec.expirationSeconds', exp, 'may not specify a duration larger than 2^32 seconds');
  }
  if (req.spec.audiences !== undefined && (!Array.isArray(req.spec.audiences) || req.spec.audiences.some((a) => typeof a !== 'string'))) {
    e.invalid('spec.audiences', req.spec.audiences, 'must be a list of strings');
  }
  if (!e.ok) throw new InvalidError('TokenRequest', req.metadata?.name ?? '', AUTHENTICATION_GROUP, e.list);
}

export async function createToken(ctx: TokenRequestContext): Promise<TokenRequest> {
  const body = ctx.body as TokenRequest;
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new BadRequestError('the request body must be a TokenRequest');
  const req: TokenRequest = { ...body, spec: { ...(body.spec ?? {}) } };
  if (req.kind !== undefined && req.kind !== 'TokenRequest') throw new BadRequestError(`expected a TokenRequest, got a ${req.kind}`);
  validate(req);
  const sa = await ctx.store.get('ServiceAccount', ctx.namespace, ctx.name);
  const audiences = req.spec.audiences?.length ? req.spec.audiences : ctx.tokens.apiAudiences;
  let expirationSeconds = req.spec.expirationSeconds ?? DEFAULT_EXPIRATION_SECONDS;
  if (ctx.maxExpirationSeconds && expirationSeconds > ctx.maxExpirationSeconds) expirationSeconds = ctx.maxExpirationSeconds;

  let bound: { kind: 'Pod' | 'Secret' | 'Node'; object: KubeObject } | undefined;
  const ref = req.spec.boundObjectRef;
  if (ref) {
    if (ref.kind !== 'Pod' && ref.kind !== 'Secret' && ref.kind !== 'Node') {
      throw new BadRequestError(`cannot bind token for serviceaccount "${ctx.name}" to object of kind "${ref.kind ?? ''}"`);
    }
    if (!ref.name) throw new BadRequestError(`cannot bind token for serviceaccount "${ctx.name}" to an object without a name`);
    const object = await ctx.store.get(ref.kind, ref.kind === 'Node' ? '' : ctx.namespace, ref.name);
    if (ref.uid && ref.uid !== object.metadata.uid) {
      throw new ConflictError(
        { resource: `${ref.kind.toLowerCase()}s`, group: '', name: ref.name },
        `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
      );
    }
    if (ref.kind === 'Pod' && (object.spec?.serviceAccountName ?? 'default') !== ctx.name) {
      throw new BadRequestError(`cannot bind token for serviceaccount "${ctx.name}" to pod running with different serviceaccount name.`);
    }
    bound = { kind: ref.kind, object };
  }
  const { token, expirationTimestamp } = await ctx.tokens.issue({ namespace: ctx.namespace, serviceAccount: sa, audiences, expirationSeconds, bound });
  return {
    apiVersion: `${AUTHENTICATION_GROUP}/v1`,
    kind: 'TokenRequest',
    metadata: { name: ctx.name, namespace: ctx.namespace, creationTimestamp: rfc3339() },
    spec: {
      audiences,
      expirationSeconds,
      ...(bound ? { boundObjectRef: { kind: bound.kind, apiVersion: 'v1', name: bound.object.metadata.name, uid: bound.object.metadata.uid } } : {}),
    },
    status: { token, expirationTimestamp: rfc3339(expirationTimestamp) },
  };
}
