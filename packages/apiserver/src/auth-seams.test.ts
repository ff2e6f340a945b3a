import { describe, expect, it } from 'vitest';
import {
  type AuthenticationRequest,
  type AuthorizationAttributes,
  admissionChain,
  allowAllAuthorizer,
  unionAuthenticator,
  unionAuthorizer,
} from './auth-seams.js';

const req: AuthenticationRequest = { method: 'GET', url: '/api', headers: {}, localSocket: false };
const attrs: AuthorizationAttributes = {
  user: { name: 'u', groups: [] },
  isResourceRequest: true,
  path: '/api/v1/pods',
  verb: 'list',
  apiPrefix: 'api',
  apiGroup: '',
  apiVersion: 'v1',
  namespace: '',
  resource: 'pods',
  subresource: '',
  name: '',
};

describe('auth seams', () => {
  it('a union authenticator takes the first that claims the request', async () => {
    const a = unionAuthenticator(
      { authenticate: async () => null },
      { authenticate: async () => ({ user: { name: 'second', groups: ['g'] } }) },
      { authenticate: async () => ({ user: { name: 'third', groups: [] } }) },
    );
    expect((await a.authenticate(req))?.user.name).toBe('second');
    expect(await unionAuthenticator({ authenticate: async () => null }).authenticate(req)).toBeNull();
  });

  it('a union authorizer stops at the first allow or deny and keeps no-opinion reasons', async () => {
    const deny = unionAuthorizer(
      { authorize: async () => ({ decision: 'no-opinion', reason: 'rbac: no binding' }) },
      { authorize: async () => ({ decision: 'deny', reason: 'node authorizer' }) },
      allowAllAuthorizer,
    );
    expect(await deny.authorize(attrs)).toEqual({ decision: 'deny', reason: 'node authorizer' });
    const none = unionAuthorizer({ authorize: async () => ({ decision: 'no-opinion', reason: 'a' }) });
    expect(await none.authorize(attrs)).toEqual({ decision: 'no-opinion', reason: 'a' });
    // Every authorizer's reason, one a line, as kube-apiserver joins them; empty ones leave no line.
    const two = unionAuthorizer(
      { authorize: async () => ({ decision: 'no-opinion', reason: "no relationship found between node 'n1' and this object" }) },
      { authorize: async () => ({ decision: 'no-opinion', reason: '' }) },
      { authorize: async () => ({ decision: 'no-opinion', reason: 'webhook: not mine' }) },
    );
    expect(await two.authorize(attrs)).toEqual({ decision: 'no-opinion', reason: "no relationship found between node 'n1' and this object\nwebhook: not mine" });
  });

  it('an admission chain runs every mutation before any validation', async () => {
    const seen: string[] = [];
    const chain = admissionChain(
      { admit: async () => void seen.push('m1'), validate: async () => void seen.push('v1') },
      { admit: async () => void seen.push('m2'), validate: async () => void seen.push('v2') },
    );
    const a = {
      operation: 'CREATE' as const,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      subresource: '',
      namespace: 'default',
      name: 'p',
      dryRun: false,
      userInfo: attrs.user,
    };
    await chain.admit(a);
    await chain.validate(a);
    expect(seen).toEqual(['m1', 'm2', 'v1', 'v2']);
  });
});
