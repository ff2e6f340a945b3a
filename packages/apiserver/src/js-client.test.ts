// The official JavaScript client (@kubernetes/client-node) against the API server over HTTPS with the
// kubeconfig's client certificate: an informer follows changes, survives a server restart over a file store
// (restarted the way the client's docs say: on its error callback), and relists after the 410 it gets when
// its resourceVersion predates the restarted store's history.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { createFileStore, type Store } from '@kemu/core';
import { afterAll, describe, expect, it } from 'vitest';
import { CertificateAuthority } from './ca.js';
import { buildKubeconfig, kubeconfigYaml } from './kubeconfig.js';
import { type ApiServer, startApiServer } from './server.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-js-client-'));
let store: Store | undefined;
let api: ApiServer | undefined;

afterAll(async () => {
  await api?.close();
  await store?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function waitFor(cond: () => boolean, what: string, ms = 20_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the official JavaScript client', () => {
  it('an informer follows changes across a 410 and a server restart with a file store', async () => {
    const ca = await CertificateAuthority.create('js-test-ca');
    const serving = await ca.issueServing();
    const start = async (port: number) => {
      store = await createFileStore({ dir: path.join(dir, 'data'), fsync: false });
      api = await startApiServer(store, path.join(dir, 'api.sock'), {}, { tcp: { host: '127.0.0.1', port, tls: { ...serving, clientCA: ca.certPem } } });
    };
    await start(0);
    const port = api!.port!;
    const admin = await ca.issueClient({ user: 'kemu-admin', groups: ['system:masters'] });
    const file = path.join(dir, 'kubeconfig');
    fs.writeFileSync(file, kubeconfigYaml(buildKubeconfig({ name: 'js', server: api!.url!, caPem: ca.certPem, clientCertPem: admin.cert, clientKeyPem: admin.key })));
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(file);
    const core = kc.makeApiClient(k8s.CoreV1Api);

    const seen: string[] = [];
    const informer = k8s.makeInformer(kc, '/api/v1/namespaces/default/configmaps', () => core.listNamespacedConfigMap({ namespace: 'default' }));
    informer.on('add', (o) => seen.push(`add ${o.metadata?.name}`));
    informer.on('update', (o) => seen.push(`update ${o.metadata?.name} ${(o as k8s.V1ConfigMap).data?.k}`));
    informer.on('delete', (o) => seen.push(`delete ${o.metadata?.name}`));
    let errors = 0;
    informer.on('error', () => {
      errors++;
      setTimeout(() => void informer.start().catch(() => {}), 200);
    });
    await informer.start();
    try {
      await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'a' }, data: { k: '1' } } });
      await waitFor(() => seen.includes('add a'), 'the informer to see a');
      await core.patchNamespacedConfigMap({ name: 'a', namespace: 'default', body: { data: { k: '2' } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
      await waitFor(() => seen.includes('update a 2'), 'the update of a');

      // Restart: the server goes away, the store moves on without it, then both come back on the same port.
      await api!.close();
      await store!.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b', namespace: 'default' }, data: { k: '1' } });
      await store!.delete('ConfigMap', 'default', 'a');
      await store!.close();
      await start(port);
      await waitFor(() => seen.includes('add b') && seen.includes('delete a'), 'the informer to relist after the restart');
      expect(errors).toBeGreaterThan(0);
      await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'c' }, data: { k: '1' } } });
      await waitFor(() => seen.includes('add c'), 'the informer to watch again');
      expect(informer.list('default').map((o) => o.metadata?.name).sort()).toEqual(['b', 'c']);
    } finally {
      await informer.stop();
    }
  }, 60_000);
});
