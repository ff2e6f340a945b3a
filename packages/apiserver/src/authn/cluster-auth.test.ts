import { createMemoryStore, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CertificateAuthority } from '../ca.js';
import { type ClusterAuth, startClusterAuth } from './cluster-auth.js';
import { ServiceAccountKeys } from './service-account-token.js';

describe('a cluster auth stack', () => {
  let store: Store;
  let auth: ClusterAuth;
  beforeEach(async () => {
    store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dev' } });
    await store.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'ci', namespace: 'dev' } });
    const ca = await CertificateAuthority.create();
    auth = await startClusterAuth({ store, caCertPem: ca.certPem, serviceAccountKeys: await ServiceAccountKeys.create() });
  });
  afterEach(() => auth.stop());

  it('mints a token through its TokenRequest endpoint that authenticates, then is authorized only as RBAC says', async () => {
    const ep = auth.seams.endpoints!.find((e) => e.subresource === 'token')!;
    const admin = { name: 'root', groups: ['system:masters'] };
    const tr = (await ep.create({ user: admin, namespace: 'dev', name: 'ci', body: { spec: {} }, dryRun: false })) as { status: { token: string } };
    const r = await auth.seams.authenticator!.authenticate({ method: 'GET', url: '/api/v1/namespaces/dev/pods', headers: { authorization: `Bearer ${tr.status.token}` }, localSocket: false });
    expect(r?.user.name).toBe('system:serviceaccount:dev:ci');
    const attrs = { isResourceRequest: true, path: '/api/v1/namespaces/dev/pods', verb: 'list', apiPrefix: 'api', apiGroup: '', apiVersion: 'v1', namespace: 'dev', resource: 'pods', subresource: '', name: '' };
    expect((await auth.seams.authorizer!.authorize({ ...attrs, user: r!.user })).decision).toBe('no-opinion');
    const whoami = auth.seams.endpoints!.find((e) => e.resource === 'selfsubjectreviews')!;
    expect(await whoami.create({ user: r!.user, namespace: '', name: '', body: {}, dryRun: false })).toMatchObject({ status: { userInfo: { username: 'system:serviceaccount:dev:ci' } } });
  });
});
