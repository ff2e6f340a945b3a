// The Store contract: one suite, run against every backend (memory, file, etcd) by its *.test.ts file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigMap, Pod } from './api-core.js';
import type { KubeObject } from './api-meta.js';
import { AlreadyExistsError, ConflictError, ExpiredError, InvalidError, NotFoundError, StatusError } from './errors.js';
import type { Store, Watch, WatchEvent } from './store.js';

export interface ContractHarness {
  store: Store;
  /** Make history before `rv` unavailable (memory: drop watch history; etcd: compact). */
  compact(rv: string): Promise<void>;
  cleanup(): Promise<void>;
}

let seq = 0;
/** Unique namespace per test so tests never see each other's objects. */
async function freshNamespace(store: Store): Promise<string> {
  const name = `t${process.pid % 1000}-${++seq}-${Math.random().toString(36).slice(2, 6)}`;
  await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  return name;
}

export function pod(ns: string, name: string, extra: Partial<Pod['spec']> = {}, labels?: Record<string, string>): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, ...(labels ? { labels } : {}) },
    spec: { containers: [{ name: 'app', image: 'nginx:1.25' }], ...extra },
  };
}

function cm(ns: string, name: string, data: Record<string, string> = {}, labels?: Record<string, string>): ConfigMap {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, ...(labels ? { labels } : {}) }, data };
}

/** Next `n` events of a watch, failing after `ms`. */
async function take(w: Watch<any>, n: number, ms = 5000): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  const it = w[Symbol.asyncIterator]();
  const deadline = Date.now() + ms;
  while (out.length < n) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`timed out after ${out.length}/${n} events: ${JSON.stringify(out.map((e) => e.type))}`);
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([
      it.next(),
      new Promise<'timeout'>((res) => {
        timer = setTimeout(() => res('timeout'), left);
      }),
    ]);
    clearTimeout(timer);
    if (r === 'timeout') throw new Error(`timed out after ${out.length}/${n} events: ${JSON.stringify(out.map((e) => e.type))}`);
    if (r.done) break;
    if (r.value.type === 'BOOKMARK') continue;
    out.push(r.value);
  }
  return out;
}

async function eventually<T>(fn: () => Promise<T>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

const names = (objs: KubeObject[]) => objs.map((o) => o.metadata.name).sort();

export function storeContract(backend: string, open: () => Promise<ContractHarness>): void {
  describe(`Store contract: ${backend}`, () => {
    let h: ContractHarness;
    let store: Store;
    beforeAll(async () => {
      h = await open();
      store = h.store;
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    it('create assigns uid, timestamps, resourceVersion, generation and API-server defaults', async () => {
      const ns = await freshNamespace(store);
      const created = await store.create(pod(ns, 'web', { containers: [{ name: 'app', image: 'nginx', ports: [{ containerPort: 80 }], resources: { limits: { cpu: '500m' } } }] }));
      expect(created.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
      expect(created.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(Number(created.metadata.resourceVersion)).toBeGreaterThan(0);
      expect(created.metadata.generation).toBe(1);
      expect(created.spec.restartPolicy).toBe('Always');
      expect(created.spec.dnsPolicy).toBe('ClusterFirst');
      expect(created.spec.terminationGracePeriodSeconds).toBe(30);
      expect(created.spec.schedulerName).toBe('default-scheduler');
      expect(created.spec.priority).toBe(0);
      const c = created.spec.containers[0];
      expect(c.imagePullPolicy).toBe('Always'); // untagged image means :latest
      expect(c.ports![0].protocol).toBe('TCP');
      expect(c.resources!.requests).toEqual({ cpu: '500m' }); // requests default to limits
      expect(created.status?.phase).toBe('Pending');
      expect(created.status?.qosClass).toBe('Burstable');
      const got = await store.get('Pod', ns, 'web');
      expect(got).toEqual(created);
    });

    it('defaults the namespace to "default" and PVC/PV fields', async () => {
      const p = await store.create({ ...pod('', `d-${seq++}`), metadata: { name: `d-${seq++}` } } as Pod);
      expect(p.metadata.namespace).toBe('default');
      await store.delete('Pod', 'default', p.metadata.name!);
      const ns = await freshNamespace(store);
      const pvc = await store.create({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'data', namespace: ns },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      });
      expect(pvc.spec.volumeMode).toBe('Filesystem');
      expect(pvc.status?.phase).toBe('Pending');
      const pv = await store.create({
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: `pv-${ns}` },
        spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], csi: { driver: 'x.csi.kemu.dev', volumeHandle: 'v1' } },
      });
      expect(pv.spec.persistentVolumeReclaimPolicy).toBe('Retain');
      expect(pv.metadata.namespace).toBeUndefined();
    });

    it('get of a missing object is a typed NotFound', async () => {
      const ns = await freshNamespace(store);
      const err = await store.get('Pod', ns, 'nope').catch((e) => e);
      expect(err).toBeInstanceOf(NotFoundError);
      expect(err.reason).toBe('NotFound');
      expect(err.code).toBe(404);
      expect(err.message).toBe('pods "nope" not found');
      const sc = await store.get('StorageClass', '', 'nope').catch((e) => e);
      expect(sc.message).toBe('storageclasses.storage.k8s.io "nope" not found');
    });

    it('create of an existing name is AlreadyExists', async () => {
      const ns = await freshNamespace(store);
      await store.create(cm(ns, 'a'));
      const err = await store.create(cm(ns, 'a')).catch((e) => e);
      expect(err).toBeInstanceOf(AlreadyExistsError);
      expect(err.code).toBe(409);
      expect(err.message).toBe('configmaps "a" already exists');
    });

    it('rejects invalid objects with field paths and writes nothing', async () => {
      const ns = await freshNamespace(store);
      const bad = pod(ns, 'web');
      delete bad.spec.containers[0].image;
      const err = await store.create(bad).catch((e) => e);
      expect(err).toBeInstanceOf(InvalidError);
      expect(err.code).toBe(422);
      expect(err.message).toBe('Pod "web" is invalid: spec.containers[0].image: Required value');
      expect(err.causes).toEqual([{ field: 'spec.containers[0].image', type: 'FieldValueRequired', message: 'Required value' }]);
      await expect(store.get('Pod', ns, 'web')).rejects.toBeInstanceOf(NotFoundError);
      const two = pod(ns, 'Bad_Name', { restartPolicy: 'Sometimes' as 'Always' });
      const e2 = await store.create(two).catch((e) => e);
      expect(e2.message).toMatch(/^Pod "Bad_Name" is invalid: \[metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain .*spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"\]$/);
      const list = await store.list('Pod', { namespace: ns });
      expect(list.items).toHaveLength(0);
    });

    it('create in a missing namespace is NotFound for the namespace', async () => {
      const err = await store.create(cm('no-such-ns', 'x')).catch((e) => e);
      expect(err).toBeInstanceOf(NotFoundError);
      expect(err.message).toBe('namespaces "no-such-ns" not found');
    });

    it('generateName produces a unique name', async () => {
      const ns = await freshNamespace(store);
      const a = await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cfg-', namespace: ns } });
      const b = await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cfg-', namespace: ns } });
      expect(a.metadata.name).toMatch(/^cfg-[a-z0-9]{5}$/);
      expect(a.metadata.name).not.toBe(b.metadata.name);
    });

    it('update enforces resourceVersion, bumps generation only on spec change, ignores status', async () => {
      const ns = await freshNamespace(store);
      const p = await store.create(pod(ns, 'web'));
      const stale = structuredClone(p);
      p.metadata.labels = { app: 'web' };
      const labelled = await store.update(p);
      expect(Number(labelled.metadata.resourceVersion)).toBeGreaterThan(Number(p.metadata.resourceVersion));
      expect(labelled.metadata.generation).toBe(1);
      stale.metadata.labels = { app: 'other' };
      const err = await store.update(stale).catch((e) => e);
      expect(err).toBeInstanceOf(ConflictError);
      expect(err.message).toBe(
        'Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again',
      );
      const next = structuredClone(labelled);
      next.spec.containers[0].image = 'nginx:1.26';
      next.status = { phase: 'Running' };
      const updated = await store.update(next);
      expect(updated.metadata.generation).toBe(2);
      expect(updated.spec.containers[0].image).toBe('nginx:1.26');
      expect(updated.status?.phase).toBe('Pending');
      // No-op update: same resourceVersion.
      const again = await store.update(updated);
      expect(again.metadata.resourceVersion).toBe(updated.metadata.resourceVersion);
      // Immutable pod fields.
      const moved = structuredClone(updated);
      moved.spec.restartPolicy = 'Never';
      const e2 = await store.update(moved).catch((e) => e);
      expect(e2).toBeInstanceOf(InvalidError);
      expect(e2.message).toMatch(/^Pod "web" is invalid: spec: Forbidden: pod updates may not change fields other than/);
    });

    it('updateStatus changes only status', async () => {
      const ns = await freshNamespace(store);
      const p = await store.create(pod(ns, 'web'));
      const s = structuredClone(p);
      s.status = { phase: 'Running', podIP: '10.0.0.5', podIPs: [{ ip: '10.0.0.5' }] };
      s.metadata.labels = { ignored: 'yes' };
      const out = await store.updateStatus(s);
      expect(out.status?.phase).toBe('Running');
      expect(out.metadata.labels).toBeUndefined();
      expect(out.metadata.generation).toBe(1);
      const stale = structuredClone(p);
      stale.status = { phase: 'Failed' };
      await expect(store.updateStatus(stale)).rejects.toBeInstanceOf(ConflictError);
    });

    it('exactly one of two racing updates from the same resourceVersion wins', async () => {
      const ns = await freshNamespace(store);
      const c = await store.create(cm(ns, 'race', { v: '0' }));
      const a = { ...structuredClone(c), data: { v: 'a' } };
      const b = { ...structuredClone(c), data: { v: 'b' } };
      const results = await Promise.allSettled([store.update(a), store.update(b)]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(rejected.reason).toBeInstanceOf(ConflictError);
    });

    it('lists with label selectors, field selectors and namespaces', async () => {
      const ns = await freshNamespace(store);
      const ns2 = await freshNamespace(store);
      await store.create(pod(ns, 'a', {}, { app: 'web', tier: 'front' }));
      await store.create(pod(ns, 'b', {}, { app: 'db' }));
      await store.create(pod(ns, 'c', {}, { app: 'web' }));
      await store.create(pod(ns2, 'd', {}, { app: 'web' }));
      await store.bind({ apiVersion: 'v1', kind: 'Binding', metadata: { name: 'a', namespace: ns }, target: { kind: 'Node', name: 'node-1' } });
      expect(names((await store.list('Pod', { namespace: ns })).items)).toEqual(['a', 'b', 'c']);
      expect(names((await store.list('Pod', { namespace: ns, labelSelector: 'app=web' })).items)).toEqual(['a', 'c']);
      expect(names((await store.list('Pod', { namespace: ns, labelSelector: 'app in (web,db),!tier' })).items)).toEqual(['b', 'c']);
      expect(names((await store.list('Pod', { namespace: ns, labelSelector: { matchExpressions: [{ key: 'tier', operator: 'Exists' }] } })).items)).toEqual(['a']);
      expect(names((await store.list('Pod', { fieldSelector: 'spec.nodeName=node-1' })).items)).toEqual(['a']);
      expect(names((await store.list('Pod', { namespace: ns, fieldSelector: 'spec.nodeName=' })).items)).toEqual(['b', 'c']);
      expect(names((await store.list('Pod', { fieldSelector: `metadata.namespace=${ns2}` })).items)).toEqual(['d']);
      const all = await store.list('Pod', { labelSelector: 'app=web' });
      expect(names(all.items.filter((p) => [ns, ns2].includes(p.metadata.namespace!)))).toEqual(['a', 'c', 'd']);
      expect(all.kind).toBe('PodList');
      expect(Number(all.metadata.resourceVersion)).toBeGreaterThan(0);
      const bad = await store.list('Pod', { fieldSelector: 'spec.bogus=1' }).catch((e) => e);
      expect(bad).toBeInstanceOf(StatusError);
      expect(bad.code).toBe(400);
      expect(bad.message).toMatch(/^field label not supported: spec.bogus/);
      const badSel = await store.list('Pod', { labelSelector: 'app in (' }).catch((e) => e);
      expect(badSel.reason).toBe('BadRequest');
    });

    it('paginates with limit and continue tokens', async () => {
      const ns = await freshNamespace(store);
      for (let i = 0; i < 25; i++) await store.create(cm(ns, `cm-${String(i).padStart(2, '0')}`));
      const seen: string[] = [];
      let cont: string | undefined;
      let pages = 0;
      do {
        const page = await store.list('ConfigMap', { namespace: ns, limit: 10, continue: cont });
        pages++;
        seen.push(...page.items.map((i) => i.metadata.name!));
        cont = page.metadata.continue;
        if (pages === 1) expect(page.metadata.remainingItemCount).toBe(15);
      } while (cont);
      expect(pages).toBe(3);
      expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => `cm-${String(i).padStart(2, '0')}`));
      const bad = await store.list('ConfigMap', { namespace: ns, limit: 10, continue: 'garbage' }).catch((e) => e);
      expect(bad.code).toBe(400);
    });

    it('patches: JSON merge, strategic (containers by name) and JSON patch; bad results change nothing', async () => {
      const ns = await freshNamespace(store);
      await store.create(
        pod(ns, 'web', {
          containers: [
            { name: 'app', image: 'nginx:1.25' },
            { name: 'side', image: 'busybox:1' },
          ],
        }),
      );
      const merged = await store.patch('Pod', ns, 'web', { metadata: { labels: { a: '1' } } }, 'merge');
      expect(merged.metadata.labels).toEqual({ a: '1' });
      const strategic = await store.patch('Pod', ns, 'web', { spec: { containers: [{ name: 'side', image: 'busybox:2' }] } }, 'strategic');
      expect(strategic.spec.containers.map((c) => `${c.name}=${c.image}`)).toEqual(['app=nginx:1.25', 'side=busybox:2']);
      expect(strategic.metadata.generation).toBe(2);
      const jp = await store.patch('Pod', ns, 'web', [{ op: 'add', path: '/metadata/annotations', value: { x: 'y' } }], 'json');
      expect(jp.metadata.annotations).toEqual({ x: 'y' });
      const before = await store.get('Pod', ns, 'web');
      const err = await store.patch('Pod', ns, 'web', { metadata: { labels: { 'bad key!': 'v' } } }, 'merge').catch((e) => e);
      expect(err).toBeInstanceOf(InvalidError);
      expect(err.message).toMatch(/^Pod "web" is invalid: metadata.labels: Invalid value: "bad key!"/);
      expect(await store.get('Pod', ns, 'web')).toEqual(before);
      const status = await store.patch('Pod', ns, 'web', { status: { phase: 'Running' } }, 'merge', { subresource: 'status' });
      expect(status.status?.phase).toBe('Running');
      const failedTest = await store.patch('Pod', ns, 'web', [{ op: 'test', path: '/spec/nodeName', value: 'x' }], 'json').catch((e) => e);
      expect(failedTest.code).toBe(400);
      await expect(store.patch('Pod', ns, 'nope', {}, 'merge')).rejects.toBeInstanceOf(NotFoundError);
    });

    it('delete honours finalizers and deletionTimestamp', async () => {
      const ns = await freshNamespace(store);
      const created = await store.create({ ...cm(ns, 'fin'), metadata: { name: 'fin', namespace: ns, finalizers: ['kemu.dev/hold'] } });
      const w = await store.watch('ConfigMap', { namespace: ns, resourceVersion: created.metadata.resourceVersion });
      const marked = await store.delete('ConfigMap', ns, 'fin');
      expect(marked.metadata.deletionTimestamp).toBeDefined();
      const still = await store.get('ConfigMap', ns, 'fin');
      expect(still.metadata.deletionTimestamp).toBeDefined();
      const addMore = structuredClone(still);
      addMore.metadata.finalizers = ['kemu.dev/hold', 'kemu.dev/other'];
      await expect(store.update(addMore)).rejects.toBeInstanceOf(InvalidError);
      still.metadata.finalizers = [];
      await store.update(still);
      await expect(store.get('ConfigMap', ns, 'fin')).rejects.toBeInstanceOf(NotFoundError);
      const evs = await take(w, 2);
      expect(evs.map((e) => e.type)).toEqual(['MODIFIED', 'DELETED']);
      w.stop();
    });

    it('delete preconditions and graceful pod deletion', async () => {
      const ns = await freshNamespace(store);
      const p = await store.create(pod(ns, 'web'));
      const pre = await store.delete('Pod', ns, 'web', { preconditions: { uid: 'other' } }).catch((e) => e);
      expect(pre).toBeInstanceOf(ConflictError);
      await store.bind({ apiVersion: 'v1', kind: 'Binding', metadata: { name: 'web', namespace: ns }, target: { kind: 'Node', name: 'n1' } });
      const marked = await store.delete('Pod', ns, 'web');
      expect(marked.metadata.deletionGracePeriodSeconds).toBe(30);
      expect(marked.metadata.deletionTimestamp).toBeDefined();
      expect((await store.get('Pod', ns, 'web')).metadata.uid).toBe(p.metadata.uid);
      await store.delete('Pod', ns, 'web', { gracePeriodSeconds: 0 });
      await expect(store.get('Pod', ns, 'web')).rejects.toBeInstanceOf(NotFoundError);
      await expect(store.delete('Pod', ns, 'web')).rejects.toBeInstanceOf(NotFoundError);
    });

    it('bind assigns a node once and sets PodScheduled', async () => {
      const ns = await freshNamespace(store);
      await store.create(pod(ns, 'web'));
      const bound = await store.bind({ apiVersion: 'v1', kind: 'Binding', metadata: { name: 'web', namespace: ns }, target: { kind: 'Node', name: 'n1' } });
      expect(bound.spec.nodeName).toBe('n1');
      expect(bound.status?.conditions?.find((c) => c.type === 'PodScheduled')?.status).toBe('True');
      const again = await store
        .bind({ apiVersion: 'v1', kind: 'Binding', metadata: { name: 'web', namespace: ns }, target: { kind: 'Node', name: 'n2' } })
        .catch((e) => e);
      expect(again).toBeInstanceOf(ConflictError);
      expect(again.message).toMatch(/already assigned to node "n1"/);
      const moved = structuredClone(bound);
      moved.spec.nodeName = 'n2';
      await expect(store.update(moved)).rejects.toBeInstanceOf(InvalidError);
    });

    it('cascades deletion to dependents (background) and orphans on request', async () => {
      const ns = await freshNamespace(store);
      const owner = await store.create(cm(ns, 'owner'));
      const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid!, controller: true };
      await store.create({ ...pod(ns, 'dep1'), metadata: { name: 'dep1', namespace: ns, ownerReferences: [ref] } });
      await store.create({ ...cm(ns, 'dep2'), metadata: { name: 'dep2', namespace: ns, ownerReferences: [ref] } });
      await store.create(pod(ns, 'unrelated'));
      await store.delete('ConfigMap', ns, 'owner');
      await eventually(async () => {
        await expect(store.get('Pod', ns, 'dep1')).rejects.toBeInstanceOf(NotFoundError);
        await expect(store.get('ConfigMap', ns, 'dep2')).rejects.toBeInstanceOf(NotFoundError);
      });
      await store.get('Pod', ns, 'unrelated');
      const owner2 = await store.create(cm(ns, 'owner2'));
      await store.create({
        ...cm(ns, 'kept'),
        metadata: { name: 'kept', namespace: ns, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner2', uid: owner2.metadata.uid! }] },
      });
      await store.delete('ConfigMap', ns, 'owner2', { propagationPolicy: 'Orphan' });
      await eventually(async () => {
        expect((await store.get('ConfigMap', ns, 'kept')).metadata.ownerReferences).toBeUndefined();
      });
    });

    it('foreground deletion keeps the owner until its dependents are gone', async () => {
      const ns = await freshNamespace(store);
      const owner = await store.create(cm(ns, 'fg-owner'));
      const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'fg-owner', uid: owner.metadata.uid!, blockOwnerDeletion: true };
      await store.create({ ...cm(ns, 'fg-dep'), metadata: { name: 'fg-dep', namespace: ns, ownerReferences: [ref], finalizers: ['kemu.dev/hold'] } });
      const marked = await store.delete('ConfigMap', ns, 'fg-owner', { propagationPolicy: 'Foreground' });
      expect(marked.metadata.finalizers).toEqual(['foregroundDeletion']);
      expect(marked.metadata.deletionTimestamp).toBeDefined();
      // The dependent is being deleted but its own finalizer holds it, so the owner stays too.
      await eventually(async () => {
        expect((await store.get('ConfigMap', ns, 'fg-dep')).metadata.deletionTimestamp).toBeDefined();
      });
      await new Promise((r) => setTimeout(r, 100));
      expect((await store.get('ConfigMap', ns, 'fg-owner')).metadata.uid).toBe(owner.metadata.uid);
      await store.patch('ConfigMap', ns, 'fg-dep', { metadata: { finalizers: null } }, 'merge');
      await eventually(async () => {
        await expect(store.get('ConfigMap', ns, 'fg-owner')).rejects.toBeInstanceOf(NotFoundError);
      });
    });

    it('deleting a namespace removes its contents, then the namespace', async () => {
      const ns = await freshNamespace(store);
      await store.create(cm(ns, 'a'));
      await store.create(pod(ns, 'p'));
      const marked = await store.delete('Namespace', '', ns);
      expect(marked.status?.phase).toBe('Terminating');
      const err = await store.create(cm(ns, 'late')).catch((e) => e);
      expect(err.reason).toBe('Forbidden');
      await eventually(async () => {
        await expect(store.get('Namespace', '', ns)).rejects.toBeInstanceOf(NotFoundError);
      });
      expect((await store.list('ConfigMap', { namespace: ns })).items).toHaveLength(0);
    });

    it('resolves priorityClassName into priority and rejects unknown classes', async () => {
      const ns = await freshNamespace(store);
      const name = `high-${ns}`;
      await store.create({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value: 1000 });
      const p = await store.create(pod(ns, 'p', { priorityClassName: name }));
      expect(p.spec.priority).toBe(1000);
      expect(p.spec.preemptionPolicy).toBe('PreemptLowerPriority');
      const crit = await store.create(pod(ns, 'crit', { priorityClassName: 'system-node-critical' }));
      expect(crit.spec.priority).toBe(2000001000);
      const err = await store.create(pod(ns, 'q', { priorityClassName: 'missing' })).catch((e) => e);
      expect(err.reason).toBe('Forbidden');
      expect(err.message).toBe('pods "q" is forbidden: no PriorityClass with name missing was found');
    });

    it('dry-run create validates but persists nothing', async () => {
      const ns = await freshNamespace(store);
      const out = await store.create(cm(ns, 'dry'), { dryRun: true });
      expect(out.metadata.uid).toBeDefined();
      await expect(store.get('ConfigMap', ns, 'dry')).rejects.toBeInstanceOf(NotFoundError);
    });

    it('watches from a resourceVersion with ADDED/MODIFIED/DELETED in order', async () => {
      const ns = await freshNamespace(store);
      const list = await store.list('ConfigMap', { namespace: ns });
      const w = await store.watch('ConfigMap', { namespace: ns, resourceVersion: list.metadata.resourceVersion });
      const a = await store.create(cm(ns, 'a', { v: '1' }));
      await store.update({ ...a, data: { v: '2' } });
      await store.delete('ConfigMap', ns, 'a');
      const evs = await take(w, 3);
      expect(evs.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
      const rvs = evs.map((e) => Number((e.object as KubeObject).metadata.resourceVersion));
      expect(rvs[0]).toBeLessThan(rvs[1]);
      expect(rvs[1]).toBeLessThan(rvs[2]);
      expect((evs[1].object as ConfigMap).data).toEqual({ v: '2' });
      w.stop();
      expect(w.stopped).toBe(true);
    });

    it('replays history when watching from an older resourceVersion', async () => {
      const ns = await freshNamespace(store);
      const a = await store.create(cm(ns, 'a'));
      await store.create(cm(ns, 'b'));
      await store.delete('ConfigMap', ns, 'a');
      const w = await store.watch('ConfigMap', { namespace: ns, resourceVersion: a.metadata.resourceVersion });
      const evs = await take(w, 2);
      expect(evs.map((e) => `${e.type}:${(e.object as KubeObject).metadata.name}`)).toEqual(['ADDED:b', 'DELETED:a']);
      w.stop();
    });

    it('watch without a resourceVersion starts with the current state', async () => {
      const ns = await freshNamespace(store);
      await store.create(cm(ns, 'a'));
      await store.create(cm(ns, 'b'));
      const w = await store.watch('ConfigMap', { namespace: ns });
      const evs = await take(w, 2);
      expect(evs.every((e) => e.type === 'ADDED')).toBe(true);
      expect(names(evs.map((e) => e.object as KubeObject))).toEqual(['a', 'b']);
      await store.create(cm(ns, 'c'));
      const [c] = await take(w, 1);
      expect((c.object as KubeObject).metadata.name).toBe('c');
      w.stop();
    });

    it('field-selector watches see pods arrive on and leave their node', async () => {
      const ns = await freshNamespace(store);
      const rv = await store.resourceVersion();
      const n1 = await store.watch('Pod', { fieldSelector: 'spec.nodeName=w-node-1', resourceVersion: rv });
      const unassigned = await store.watch('Pod', { namespace: ns, fieldSelector: 'spec.nodeName=', resourceVersion: rv });
      await store.create(pod(ns, 'p'));
      await store.create(pod(ns, 'q', {}, { x: 'y' }));
      await store.bind({ apiVersion: 'v1', kind: 'Binding', metadata: { name: 'p', namespace: ns }, target: { kind: 'Node', name: 'w-node-1' } });
      await store.delete('Pod', ns, 'p', { gracePeriodSeconds: 0 });
      const onNode = await take(n1, 2);
      expect(onNode.map((e) => `${e.type}:${(e.object as KubeObject).metadata.name}`)).toEqual(['ADDED:p', 'DELETED:p']);
      const pending = await take(unassigned, 3);
      expect(pending.map((e) => `${e.type}:${(e.object as KubeObject).metadata.name}`)).toEqual(['ADDED:p', 'ADDED:q', 'DELETED:p']);
      // The DELETED for "left the selection" carries the new resourceVersion.
      expect(Number((pending[2].object as KubeObject).metadata.resourceVersion)).toBeGreaterThan(Number((pending[0].object as KubeObject).metadata.resourceVersion));
      n1.stop();
      unassigned.stop();
    });

    it('create and update with readOnlyResult return what was stored; without it a private copy', async () => {
      const ns = await freshNamespace(store);
      const a = await store.create(cm(ns, 'ro', { k: 'a' }), { readOnlyResult: true });
      expect(a).toEqual(await store.get('ConfigMap', ns, 'ro'));
      const b = await store.update({ ...(await store.get('ConfigMap', ns, 'ro')), data: { k: 'b' } }, { readOnlyResult: true });
      expect(b).toEqual(await store.get('ConfigMap', ns, 'ro'));
      expect(b.data).toEqual({ k: 'b' });
      const c = await store.create(cm(ns, 'rw'));
      c.metadata.labels = { changed: 'here' };
      expect((await store.get('ConfigMap', ns, 'rw')).metadata.labels).toBeUndefined();
    });

    it('create and update with adoptInput store and return what they would without it', async () => {
      const ns = await freshNamespace(store);
      const created = await store.create(cm(ns, 'adopted', { k: 'a' }, { x: 'y' }), { adoptInput: true });
      expect(created.metadata.uid).toBeTruthy();
      expect(created).toEqual(await store.get('ConfigMap', ns, 'adopted'));
      const updated = await store.update({ ...created, data: { k: 'b' } }, { adoptInput: true });
      expect(updated.data).toEqual({ k: 'b' });
      expect(updated).toEqual(await store.get('ConfigMap', ns, 'adopted'));
    });

    it('a field-selector watch still applies its namespace, labels and other terms', async () => {
      const ns = await freshNamespace(store);
      const ns2 = await freshNamespace(store);
      const rv = await store.resourceVersion();
      const labelled = await store.watch('ConfigMap', { namespace: ns, fieldSelector: 'metadata.name=a', labelSelector: 'team=x', resourceVersion: rv });
      const twoTerms = await store.watch('Pod', { fieldSelector: `metadata.name=p,metadata.namespace=${ns}`, resourceVersion: rv });
      await store.create(cm(ns2, 'a', {}, { team: 'x' }));
      const a = await store.create(cm(ns, 'a', {}, { team: 'y' }));
      await store.update({ ...a, metadata: { ...a.metadata, labels: { team: 'x' } } });
      await store.delete('ConfigMap', ns, 'a');
      await store.create(pod(ns2, 'p'));
      await store.create(pod(ns, 'p'));
      const evs = await take(labelled, 2);
      expect(evs.map((e) => `${e.type}:${(e.object as KubeObject).metadata.namespace}/${(e.object as KubeObject).metadata.labels?.team}`)).toEqual([`ADDED:${ns}/x`, `DELETED:${ns}/x`]);
      const [p] = await take(twoTerms, 1);
      expect(`${p.type}:${(p.object as KubeObject).metadata.namespace}`).toBe(`ADDED:${ns}`);
      labelled.stop();
      twoTerms.stop();
    });

    it('label-selector watches translate label changes into ADDED/DELETED', async () => {
      const ns = await freshNamespace(store);
      const w = await store.watch('ConfigMap', { namespace: ns, labelSelector: 'team=a', resourceVersion: await store.resourceVersion() });
      const c = await store.create(cm(ns, 'x', {}, { team: 'b' }));
      const c2 = await store.update({ ...c, metadata: { ...c.metadata, labels: { team: 'a' } } });
      const c3 = await store.update({ ...c2, data: { k: 'v' } });
      await store.update({ ...c3, metadata: { ...c3.metadata, labels: { team: 'b' } } });
      const evs = await take(w, 3);
      expect(evs.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
      w.stop();
    });

    it('a watch from a compacted resourceVersion fails with 410 Expired', async () => {
      const ns = await freshNamespace(store);
      const a = await store.create(cm(ns, 'a'));
      await store.create(cm(ns, 'b'));
      const b2 = await store.create(cm(ns, 'c'));
      await h.compact(b2.metadata.resourceVersion!);
      const err = await store.watch('ConfigMap', { namespace: ns, resourceVersion: a.metadata.resourceVersion }).then(
        async (w) => {
          // Some backends report it as the first event instead of rejecting.
          const [ev] = await take(w, 1);
          return ev.type === 'ERROR' ? ev.object : ev;
        },
        (e) => e,
      );
      if (err instanceof StatusError) {
        expect(err).toBeInstanceOf(ExpiredError);
        expect(err.code).toBe(410);
        expect(err.message).toMatch(/too old resource version/);
      } else {
        expect(err.code).toBe(410);
        expect(err.reason).toBe('Expired');
        expect(err.message).toMatch(/too old resource version/);
      }
    });

    it('delivers bookmarks to watches that allow them', async () => {
      const ns = await freshNamespace(store);
      const w = await store.watch('ConfigMap', { namespace: ns, allowBookmarks: true, resourceVersion: await store.resourceVersion() });
      const it2 = w[Symbol.asyncIterator]();
      const first = await Promise.race([it2.next(), new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 5000))]);
      expect(first).not.toBe('timeout');
      const ev = (first as IteratorResult<WatchEvent>).value as WatchEvent;
      expect(ev.type).toBe('BOOKMARK');
      expect(Number((ev.object as KubeObject).metadata.resourceVersion)).toBeGreaterThan(0);
      w.stop();
    });

    it('sendInitialEvents marks the end of the initial state with a bookmark', async () => {
      const ns = await freshNamespace(store);
      await store.create(cm(ns, 'a'));
      const rv = await store.resourceVersion();
      const w = await store.watch('ConfigMap', { namespace: ns, resourceVersion: rv, sendInitialEvents: true, allowBookmarks: true });
      const it2 = w[Symbol.asyncIterator]();
      const e1 = (await it2.next()).value as WatchEvent;
      const e2 = (await it2.next()).value as WatchEvent;
      expect(e1.type).toBe('ADDED');
      expect(e2.type).toBe('BOOKMARK');
      expect((e2.object as KubeObject).metadata.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
      w.stop();
    });

    it('subscribe pushes the events iteration would see, pauses when the sink asks and resumes in order', async () => {
      const ns = await freshNamespace(store);
      await store.create(cm(ns, 'a'));
      const w = await store.watch('ConfigMap', { namespace: ns });
      const seen: string[] = [];
      let accept = true;
      let ended = 0;
      w.subscribe({
        event: (ev) => {
          seen.push(`${ev.type}:${(ev.object as KubeObject).metadata.name}`);
          return accept;
        },
        end: () => ended++,
      });
      // The queued initial state is delivered before subscribe returns.
      expect(seen).toEqual(['ADDED:a']);
      expect(() => w[Symbol.asyncIterator]()).toThrow(/one consumer/);
      expect(() => w.subscribe({ event: () => true, end: () => {} })).toThrow(/one consumer/);
      const b = await store.create(cm(ns, 'b'));
      await eventually(async () => expect(seen).toEqual(['ADDED:a', 'ADDED:b']));
      accept = false;
      // A second watch from the same point shows when the hub has handed every change to both.
      const probe = await store.watch('ConfigMap', { namespace: ns, resourceVersion: b.metadata.resourceVersion });
      await store.update({ ...b, data: { v: '2' } });
      await store.delete('ConfigMap', ns, 'a');
      await store.create(cm(ns, 'c'));
      await take(probe, 3);
      probe.stop();
      // The sink paused after the first of them; the rest wait for resume().
      expect(seen).toEqual(['ADDED:a', 'ADDED:b', 'MODIFIED:b']);
      accept = true;
      w.resume();
      expect(seen).toEqual(['ADDED:a', 'ADDED:b', 'MODIFIED:b', 'DELETED:a', 'ADDED:c']);
      expect(ended).toBe(0);
      w.stop();
      w.stop();
      expect(ended).toBe(1);
      expect(w.stopped).toBe(true);
    });

    it('rejects unknown kinds and wrong apiVersions as BadRequest', async () => {
      const e1 = await store.get('Widget', 'default', 'x').catch((e) => e);
      expect(e1.code).toBe(400);
      const e2 = await store.create({ apiVersion: 'v2', kind: 'ConfigMap', metadata: { name: 'x' } }).catch((e) => e);
      expect(e2.code).toBe(400);
      expect(e2.message).toMatch(/does not match the expected API version \(v1\)/);
    });

    it('cluster-scoped kinds reject a namespace and list across the cluster', async () => {
      const name = `n-${Date.now()}`;
      const err = await store.create({ apiVersion: 'v1', kind: 'Node', metadata: { name, namespace: 'default' } }).catch((e) => e);
      expect(err).toBeInstanceOf(InvalidError);
      expect(err.message).toBe(`Node "${name}" is invalid: metadata.namespace: Forbidden: not allowed on this type`);
      await store.create({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { zone: 'a' } }, status: { capacity: { cpu: '4', memory: '8Gi', pods: '110' } } });
      const nodes = await store.list('Node', { labelSelector: 'zone=a' });
      expect(nodes.items.map((n) => n.metadata.name)).toContain(name);
      const got = await store.get('Node', undefined, name);
      expect(got.status?.capacity?.memory).toBe('8Gi');
    });
  });
}
