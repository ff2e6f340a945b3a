import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createMemoryStore, type KubeObject, type Store } from '@kemu/core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AdmissionAttributes } from '../auth-seams.js';
import { CertificateAuthority } from '../ca.js';
import { WebhookAdmission } from './admission-webhooks.js';

const V = 'admissionregistration.k8s.io/v1';
let server: https.Server;
let base: string;
let caBundle: string;
const seen: { path: string; review: any }[] = [];

// A user's webhook: deny, mutate (JSONPatch), hang, answer garbage or the wrong uid, by path.
beforeAll(async () => {
  const ca = await CertificateAuthority.create('webhook-ca');
  const serving = await ca.issueServing();
  caBundle = Buffer.from(ca.certPem).toString('base64');
  server = https.createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'https://x').pathname;
      const review = JSON.parse(text);
      seen.push({ path, review });
      const uid = review.request.uid;
      const answer = (response: object) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, ...response } }));
      };
      if (path === '/validate') {
        const ok = review.request.object?.metadata?.labels?.team !== undefined;
        return answer(ok ? { allowed: true, warnings: ['labels checked'] } : { allowed: false, status: { code: 403, message: 'every pod needs a team label' } });
      }
      if (path === '/mutate') {
        const patch = [{ op: 'add', path: '/metadata/labels', value: { ...(review.request.object.metadata.labels ?? {}), injected: 'yes' } }];
        return answer({ allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(patch)).toString('base64') });
      }
      if (path === '/garbage') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end('{"this is": "not a review"');
      }
      if (path === '/wrong-uid') return answer({ uid: 'someone-else', allowed: true });
      // /hang: never answers; the API server's timeout ends it.
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const pod = (labels: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'dev', labels },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
});
function attrs(obj: KubeObject): AdmissionAttributes {
  return {
    operation: 'CREATE',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    subresource: '',
    namespace: 'dev',
    name: obj.metadata.name!,
    object: obj,
    dryRun: false,
    userInfo: { name: 'alice', groups: ['system:authenticated'] },
    warnings: [],
  };
}

describe('admission webhooks', () => {
  let store: Store;
  let hooks: WebhookAdmission;
  const rules = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
  const webhook = async (kind: 'Validating' | 'Mutating', path: string, extra: Record<string, unknown> = {}) => {
    await store.create({
      apiVersion: V,
      kind: `${kind}WebhookConfiguration`,
      metadata: { name: `${kind.toLowerCase()}-${path.slice(1)}` },
      webhooks: [{ name: `${path.slice(1)}.example.com`, clientConfig: { url: `${base}${path}`, caBundle }, rules, sideEffects: 'None', admissionReviewVersions: ['v1'], ...extra }],
    });
    const inf = kind === 'Validating' ? hooks.validating : hooks.mutating;
    for (let i = 0; i < 200 && !inf.indexer.get(undefined, `${kind.toLowerCase()}-${path.slice(1)}`); i++) await new Promise((r) => setTimeout(r, 5));
  };

  const remove = async (name: string) => {
    await store.delete('ValidatingWebhookConfiguration', '', name);
    for (let i = 0; i < 200 && hooks.validating.indexer.get(undefined, name); i++) await new Promise((r) => setTimeout(r, 5));
  };

  beforeEach(async () => {
    store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dev' } });
    hooks = new WebhookAdmission(store);
    await hooks.start();
    seen.length = 0;
  });
  afterEach(() => hooks.stop());

  it("sends an AdmissionReview v1 and refuses with the webhook's message and code", async () => {
    await webhook('Validating', '/validate');
    await expect(hooks.validate(attrs(pod()))).rejects.toMatchObject({ code: 403, message: 'admission webhook "validate.example.com" denied the request: every pod needs a team label' });
    expect(seen[0].review).toMatchObject({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: { operation: 'CREATE', namespace: 'dev', name: 'web', resource: { group: '', version: 'v1', resource: 'pods' }, userInfo: { username: 'alice' }, object: { metadata: { name: 'web' } } },
    });
    const ok = attrs(pod({ team: 'a' }));
    await hooks.validate(ok);
    expect(ok.warnings).toEqual(['labels checked']);
  });

  it("applies a mutating webhook's JSONPatch to the object", async () => {
    await webhook('Mutating', '/mutate');
    const a = attrs(pod({ team: 'a' }));
    await hooks.admit(a);
    expect(a.object!.metadata.labels).toEqual({ team: 'a', injected: 'yes' });
  });

  it('fails a request when a webhook times out or answers garbage under failurePolicy Fail, and skips it under Ignore', async () => {
    await webhook('Validating', '/hang', { timeoutSeconds: 1 });
    const started = Date.now();
    await expect(hooks.validate(attrs(pod()))).rejects.toMatchObject({
      code: 500,
      reason: 'InternalError',
      message: `Internal error occurred: failed calling webhook "hang.example.com": failed to call webhook: Post "${base}/hang?timeout=1s": context deadline exceeded`,
    });
    expect(Date.now() - started).toBeLessThan(5000);
    await remove('validating-hang');
    await webhook('Validating', '/garbage');
    await expect(hooks.validate(attrs(pod()))).rejects.toMatchObject({ code: 500, message: expect.stringMatching(/^Internal error occurred: failed calling webhook "garbage.example.com": received invalid webhook response: /) });
    await remove('validating-garbage');
    await webhook('Validating', '/wrong-uid');
    await expect(hooks.validate(attrs(pod()))).rejects.toMatchObject({ message: expect.stringMatching(/expected response\.uid="[0-9a-f-]+", got "someone-else"$/) });
    await remove('validating-wrong-uid');
    await webhook('Validating', '/hang', { timeoutSeconds: 1, failurePolicy: 'Ignore' });
    await expect(hooks.validate(attrs(pod()))).resolves.toBeUndefined();
  });

  it('does not call a webhook whose rules, selectors or matchConditions exclude the request', async () => {
    await webhook('Validating', '/validate', {
      objectSelector: { matchLabels: { checked: 'true' } },
    });
    await hooks.validate(attrs(pod()));
    expect(seen).toHaveLength(0);
    await remove('validating-validate');
    await webhook('Validating', '/validate', { matchConditions: [{ name: 'not-alice', expression: "request.userInfo.username != 'alice'" }] });
    await hooks.validate(attrs(pod()));
    expect(seen).toHaveLength(0);
  });
});
