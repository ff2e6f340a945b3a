// Under --use-service-account-credentials each controller writes with a client of its own: the manager's
// `storeFor` gives each its store by ServiceAccount name, and the EndpointSlice controller keeps Endpoints
// under the endpoint controller's account, as the two upstream controllers would.
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore, type Store } from '@kemu/core';
import { ControllerManager } from './controller-manager.js';
import { fakeKubelet, until } from './test-helpers.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** Records `account verb kind` for every write made through the store. */
function recording(store: Store, account: string, log: Set<string>): Store {
  const note = (verb: string, kind: string) => log.add(`${account} ${verb} ${kind}`);
  return {
    ...store,
    create: (o, opts) => (note('create', o.kind), store.create(o, opts)),
    update: (o, opts) => (note('update', o.kind), store.update(o, opts)),
    updateStatus: (o, opts) => (note('updateStatus', o.kind), store.updateStatus(o, opts)),
    patch: (kind, ns, name, p, t, opts) => (note('patch', kind), store.patch(kind, ns, name, p, t, opts)),
    delete: (kind, ns, name, opts) => (note('delete', kind), store.delete(kind, ns, name, opts)),
    get: (kind, ns, name) => store.get(kind, ns, name),
    list: (kind, opts) => store.list(kind, opts),
    watch: (kind, opts) => store.watch(kind, opts),
    bind: (b, opts) => store.bind(b, opts),
    resourceVersion: () => store.resourceVersion(),
    close: () => store.close(),
  };
}

describe('controller identities', () => {
  it('writes each kind through the store of the upstream controller that owns it', async () => {
    const store = await MemoryStore.open();
    const stop = await fakeKubelet(store, {});
    const log = new Set<string>();
    const cm = new ControllerManager({ store, controllers: 'deployment,replicaset,endpointslice,endpoint', leaderElect: false, storeFor: (sa) => recording(store, sa, log) });
    await cm.start();
    cleanup.push(() => store.close(), stop, () => cm.stop());
    const tpl = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'busybox', ports: [{ containerPort: 80 }] }] } };
    await store.create({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'default' }, spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: tpl } });
    await store.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } });
    await until('every controller to write', () => log.has('endpoint-controller create Endpoints') && log.has('endpointslice-controller create EndpointSlice') && log.has('replicaset-controller create Pod'));
    expect(log).toContain('deployment-controller create ReplicaSet');
    expect(log).toContain('deployment-controller update Deployment');
    // Nothing created under another controller's account.
    const owners: Record<string, string> = { ReplicaSet: 'deployment-controller', Pod: 'replicaset-controller', EndpointSlice: 'endpointslice-controller', Endpoints: 'endpoint-controller' };
    for (const entry of log) {
      const [account, verb, kind] = entry.split(' ');
      if (verb === 'create' && owners[kind]) expect(`${kind} by ${account}`).toBe(`${kind} by ${owners[kind]}`);
    }
  });
});
