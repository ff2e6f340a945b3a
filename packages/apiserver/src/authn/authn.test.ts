import { createMemoryStore, type KubeObject, lookupKind, registerKind, type Store } from '@kemu/core';
import { beforeEach, describe, expect, it } from 'vitest';
import type { AuthenticationRequest } from '../auth-seams.js';
import { CertificateAuthority } from '../ca.js';
import { BearerTokenAuthenticator } from './bearer-token.js';
import { selfSubjectReview, tokenReview } from './reviews.js';
import { ServiceAccountKeys, ServiceAccountTokens } from './service-account-token.js';
import { parseTokenFile, StaticTokenAuthenticator, TokenFileError } from './token-file.js';
import { createToken } from './token-request.js';
import { UnauthorizedError } from './unauthorized.js';
import { X509Authenticator } from './x509.js';

// ServiceAccount is registered by the workload kinds; these tests only need it to be storable.
if (!lookupKind('ServiceAccount')) registerKind({ kind: 'ServiceAccount', apiVersion: 'v1', resource: 'serviceaccounts', namespaced: true, hasStatus: false });

const request = (headers: Record<string, string> = {}, peerCertificates?: Buffer[]): AuthenticationRequest => ({
  method: 'GET',
  url: '/api',
  headers,
  localSocket: false,
  peerCertificates,
});
const der = (pem: string) => Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');

async function rejects(p: Promise<unknown>, detail: RegExp): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UnauthorizedError);
  expect((err as UnauthorizedError).toStatus()).toMatchObject({ code: 401, reason: 'Unauthorized', message: 'Unauthorized' });
  expect((err as UnauthorizedError).detail).toMatch(detail);
}

describe('client certificates', () => {
  it('names the user by CN and groups by O, and refuses a certificate of another CA or out of date', async () => {
    const ca = await CertificateAuthority.create('cluster-ca');
    const other = await CertificateAuthority.create('cluster-ca');
    const a = new X509Authenticator(ca.certPem);
    const good = await ca.issueClient({ user: 'alice', groups: ['dev', 'ops'] });
    expect(await a.authenticate(request({}, [der(good.cert)]))).toEqual({ user: { name: 'alice', groups: ['dev', 'ops', 'system:authenticated'] } });
    expect(await a.authenticate(request())).toBeNull();
    // Same subject and issuer name, another key: a forgery.
    const forged = await other.issueClient({ user: 'admin', groups: ['system:masters'] });
    await rejects(a.authenticate(request({}, [der(forged.cert)])), /unknown authority/);
    const later = new X509Authenticator(ca.certPem, () => new Date(Date.now() + 400 * 24 * 3600 * 1000));
    await rejects(later.authenticate(request({}, [der(good.cert)])), /expired/);
    // A serving certificate is not for client auth.
    const serving = await ca.issueServing();
    await rejects(a.authenticate(request({}, [der(serving.cert)])), /key usage/);
  });
});

describe('static token file', () => {
  it('reads token,user,uid,"groups" lines and names the line of a bad one', () => {
    const t = parseTokenFile('# comment\nsecret1,alice,1001,"dev,ops"\nsecret2,bob,1002\n');
    expect(t.get('secret1')).toEqual({ name: 'alice', uid: '1001', groups: ['dev', 'ops', 'system:authenticated'] });
    expect(t.get('secret2')).toEqual({ name: 'bob', uid: '1002', groups: ['system:authenticated'] });
    expect(() => parseTokenFile('a,b\n', 'tokens.csv')).toThrow(new TokenFileError('tokens.csv, line 1: token file must have at least 3 columns (token, user name, uid)'));
    expect(() => parseTokenFile('a,b,c\na,d,e\n', 'tokens.csv')).toThrow('tokens.csv, line 2: duplicate token');
  });

  it('answers 401 for a bearer token nobody knows, and leaves a request without one to others', async () => {
    const bearer = new BearerTokenAuthenticator([new StaticTokenAuthenticator(parseTokenFile('s3cret,alice,1\n'))]);
    expect((await bearer.authenticate(request({ authorization: 'Bearer s3cret' })))?.user.name).toBe('alice');
    await rejects(bearer.authenticate(request({ authorization: 'Bearer nope' })), /invalid bearer token/);
    expect(await bearer.authenticate(request({ authorization: 'Basic Zm9vOmJhcg==' }))).toBeNull();
    expect(await bearer.authenticate(request())).toBeNull();
  });
});

describe('ServiceAccount tokens', () => {
  let store: Store;
  let tokens: ServiceAccountTokens;
  let clock: Date;
  let sa: KubeObject;
  const mint = (body: unknown = { spec: {} }, name = 'builder') => createToken({ store, tokens, namespace: 'dev', name, body });

  beforeEach(async () => {
    store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dev' } });
    sa = await store.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'builder', namespace: 'dev' } });
    clock = new Date();
    tokens = new ServiceAccountTokens({ keys: await ServiceAccountKeys.create(), store, now: () => clock });
  });

  it('mints a one-hour token for the API audience that authenticates as the ServiceAccount', async () => {
    const tr = await mint();
    expect(tr.spec).toEqual({ audiences: ['https://kubernetes.default.svc.cluster.local'], expirationSeconds: 3600 });
    expect(Date.parse(tr.status!.expirationTimestamp) - clock.getTime()).toBeGreaterThan(3590_000);
    const r = await tokens.authenticateToken(tr.status!.token);
    expect(r?.user).toMatchObject({
      name: 'system:serviceaccount:dev:builder',
      uid: sa.metadata.uid,
      groups: ['system:serviceaccounts', 'system:serviceaccounts:dev', 'system:authenticated'],
    });
  });

  it('refuses an expired token, a token for another audience and one whose ServiceAccount was recreated', async () => {
    const tr = await mint({ spec: { expirationSeconds: 600 } });
    clock = new Date(clock.getTime() + 601_000);
    await rejects(tokens.authenticateToken(tr.status!.token), /expired/);
    clock = new Date();
    const vault = await mint({ spec: { audiences: ['vault'] } });
    await rejects(tokens.authenticateToken(vault.status!.token), /audiences/);
    expect((await tokens.authenticateToken(vault.status!.token, ['vault']))?.audiences).toEqual(['vault']);
    const ok = await mint();
    await store.delete('ServiceAccount', 'dev', 'builder');
    await rejects(tokens.authenticateToken(ok.status!.token), /no longer exists/);
    await store.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'builder', namespace: 'dev' } });
    await rejects(tokens.authenticateToken(ok.status!.token), /does not match claim/);
  });

  it('leaves a token of another signer to other authenticators, so the bearer chain answers 401', async () => {
    const foreign = new ServiceAccountTokens({ keys: await ServiceAccountKeys.create(), store });
    const tr = await createToken({ store, tokens: foreign, namespace: 'dev', name: 'builder', body: { spec: {} } });
    expect(await tokens.authenticateToken(tr.status!.token)).toBeUndefined();
    const bearer = new BearerTokenAuthenticator([tokens]);
    await rejects(bearer.authenticate(request({ authorization: `Bearer ${tr.status!.token}` })), /invalid bearer token/);
    // A tampered payload fails the signature the same way.
    const good = (await mint()).status!.token.split('.');
    const claims = JSON.parse(Buffer.from(good[1], 'base64url').toString());
    claims.sub = 'system:serviceaccount:kube-system:admin';
    const tampered = [good[0], Buffer.from(JSON.stringify(claims)).toString('base64url'), good[2]].join('.');
    await rejects(bearer.authenticate(request({ authorization: `Bearer ${tampered}` })), /invalid bearer token/);
  });

  it('binds a token to a pod: valid while the pod lives, refused once it is gone', async () => {
    const pod = await store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'dev' },
      spec: { serviceAccountName: 'builder', containers: [{ name: 'c', image: 'busybox' }] },
    });
    const tr = await mint({ spec: { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: pod.metadata.uid } } });
    const r = await tokens.authenticateToken(tr.status!.token);
    expect(r?.user.extra?.['authentication.kubernetes.io/pod-name']).toEqual(['web']);
    await store.delete('Pod', 'dev', 'web', { gracePeriodSeconds: 0 });
    await rejects(tokens.authenticateToken(tr.status!.token), /no longer exists|being deleted/);
  });

  it('checks a TokenRequest as kube-apiserver does', async () => {
    await expect(mint({ spec: { expirationSeconds: 599 } })).rejects.toMatchObject({
      code: 422,
      message: 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes',
    });
    await expect(mint({ spec: {} }, 'ghost')).rejects.toMatchObject({ code: 404, message: 'serviceaccounts "ghost" not found' });
    await store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'other', namespace: 'dev' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
    await expect(mint({ spec: { boundObjectRef: { kind: 'Pod', name: 'other' } } })).rejects.toMatchObject({
      code: 400,
      message: 'cannot bind token for serviceaccount "builder" to pod running with different serviceaccount name.',
    });
    await expect(mint({ spec: { boundObjectRef: { kind: 'Pod', name: 'other', uid: 'x' } } })).rejects.toMatchObject({ code: 409 });
  });

  it('answers TokenReview and SelfSubjectReview', async () => {
    const tr = await mint();
    const review = await tokenReview([tokens], tokens.apiAudiences, { spec: { token: tr.status!.token } });
    expect(review.status).toMatchObject({ authenticated: true, user: { username: 'system:serviceaccount:dev:builder' } });
    const bad = await tokenReview([tokens], tokens.apiAudiences, { spec: { token: 'garbage' } });
    expect(bad.status).toMatchObject({ error: expect.any(String) });
    expect(bad.status.authenticated).toBeUndefined();
    await expect(tokenReview([tokens], tokens.apiAudiences, { spec: {} })).rejects.toMatchObject({ code: 400 });
    expect(selfSubjectReview({ name: 'alice', groups: ['dev', 'system:authenticated'] }).status).toEqual({
      userInfo: { username: 'alice', groups: ['dev', 'system:authenticated'] },
    });
  });
});
