// The ResourceQuota admission plugin: a create or update that would take a namespace's usage past any of
// its quotas' hard limits is refused with upstream's `exceeded quota` 403; otherwise the quotas' status.used
// is raised at once (as upstream's plugin does), so the next request sees it. Writes are serialised per
// namespace so two racing creates cannot both take the last unit. `ResourceQuotaStatusController`
// recomputes status.used from the objects themselves (after deletes, and for a new quota).
import { deepCopy, isConflict, type KubeObject, lookupKind, parseQuantity, type Quantity, SharedInformer, type Store } from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain } from '../auth-seams.js';
import { forbiddenError } from '../authz/forbidden.js';
import { kindsForQuotaResource, missingComputeResources, objectUsage, type Usage, usageDelta } from './quota-usage.js';

const pretty = (m: Map<string, Quantity>) =>
  [...m.keys()]
    .sort()
    .map((k) => `${k}=${m.get(k)!.toString()}`)
    .join(',');

export class ResourceQuotaAdmission implements AdmissionChain {
  private readonly locks = new Map<string, Promise<void>>();

  constructor(private readonly store: Store) {}

  async admit(): Promise<void> {}

  async validate(attrs: AdmissionAttributes): Promise<void> {
    if (attrs.operation !== 'CREATE' && attrs.operation !== 'UPDATE') return;
    if (!attrs.namespace || !attrs.object || attrs.subresource) return;
    const { group, resource } = attrs.resource;
    const next = objectUsage(group, resource, attrs.object);
    const prev = attrs.operation === 'UPDATE' && attrs.oldObject ? objectUsage(group, resource, attrs.oldObject) : undefined;
    const delta = usageDelta(next, prev);
    const growing = [...delta].filter(([, q]) => q.nanos > 0n);
    if (!growing.length && !(group === '' && resource === 'pods' && attrs.operation === 'CREATE')) return;
    await this.serialised(attrs.namespace, () => this.check(attrs, delta));
  }

  private async serialised(ns: string, fn: () => Promise<void>): Promise<void> {
    const prior = this.locks.get(ns) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const chained = prior.then(() => mine);
    this.locks.set(ns, chained);
    await prior;
    try {
      await fn();
    } finally {
      release();
      if (this.locks.get(ns) === chained) this.locks.delete(ns);
    }
  }

  private async check(attrs: AdmissionAttributes, delta: Usage): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const quotas = (await this.store.list('ResourceQuota', { namespace: attrs.namespace })).items;
      if (!quotas.length) return;
      const updates: KubeObject[] = [];
      for (const q of quotas) {
        const hard = q.spec?.hard ?? {};
        const keys = Object.keys(hard);
        const isPod = attrs.resource.group === '' && attrs.resource.resource === 'pods';
        if (isPod && attrs.operation === 'CREATE') {
          const missing = missingComputeResources(attrs.object!.spec ?? {}, keys);
          if (missing.size) {
            const parts = [...missing.keys()].sort().map((r) => `${r} for: ${missing.get(r)!.sort().join(',')}`);
            throw forbiddenError(attrs.resource.group, attrs.resource.resource, attrs.name, `failed quota: ${q.metadata.name}: must specify ${parts.join('; ')}`);
          }
        }
        const relevant = keys.filter((k) => delta.has(k));
        if (!relevant.length) continue;
        const used = q.status?.used ?? {};
        const requested = new Map<string, Quantity>();
        const usedNow = new Map<string, Quantity>();
        const limited = new Map<string, Quantity>();
        const newUsed: Record<string, string> = { ...used };
        for (const k of relevant) {
          if (used[k] === undefined) {
            throw forbiddenError(attrs.resource.group, attrs.resource.resource, attrs.name, `status unknown for quota: ${q.metadata.name}, resource: ${k}`);
          }
          const u = parseQuantity(used[k]);
          const h = parseQuantity(hard[k]);
          const after = u.add(delta.get(k)!);
          if (delta.get(k)!.nanos > 0n && after.cmp(h) > 0) {
            requested.set(k, delta.get(k)!);
            usedNow.set(k, u);
            limited.set(k, h);
          }
          newUsed[k] = (after.nanos < 0n ? parseQuantity(0) : after).toString();
        }
        if (requested.size) {
          throw forbiddenError(
            attrs.resource.group,
            attrs.resource.resource,
            attrs.name,
            `exceeded quota: ${q.metadata.name}, requested: ${pretty(requested)}, used: ${pretty(usedNow)}, limited: ${pretty(limited)}`,
          );
        }
        updates.push({ ...deepCopy(q), status: { hard: q.status?.hard ?? hard, used: newUsed } });
      }
      if (attrs.dryRun) return;
      try {
        for (const u of updates) await this.store.updateStatus(u);
        return;
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
    }
    throw forbiddenError(attrs.resource.group, attrs.resource.resource, attrs.name, 'unable to update quota status after repeated conflicts');
  }
}

/** Recomputes each quota's status (hard from spec, used from the objects) when quotas or counted objects change. */
export class ResourceQuotaStatusController {
  private readonly informers = new Map<string, SharedInformer>();
  private readonly quotas: SharedInformer;
  private readonly dirty = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly countedKinds: readonly string[] = ['Pod', 'Service', 'ConfigMap', 'Secret', 'PersistentVolumeClaim', 'ReplicationController'],
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    this.quotas = new SharedInformer(store, 'ResourceQuota');
    const mark = (o: KubeObject) => this.mark(o.metadata.namespace ?? '');
    this.quotas.addEventHandler({
      onAdd: mark,
      onUpdate: (a, b) => {
        if (JSON.stringify(a.spec) !== JSON.stringify(b.spec)) mark(b);
      },
    });
    for (const kind of countedKinds) {
      const inf = new SharedInformer(store, kind);
      // Creates are counted by admission; deletes and phase changes (terminal pods) need a recount.
      inf.addEventHandler({ onDelete: mark, onUpdate: (a, b) => a.status?.phase !== b.status?.phase && mark(b) });
      this.informers.set(kind, inf);
    }
  }

  async start(): Promise<void> {
    const all = [this.quotas, ...this.informers.values()];
    for (const i of all) i.start();
    await Promise.all(all.map((i) => i.waitForSync()));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await Promise.all([this.quotas, ...this.informers.values()].map((i) => i.stop()));
  }

  private mark(ns: string): void {
    if (!ns || this.stopped) return;
    this.dirty.add(ns);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      const namespaces = [...this.dirty];
      this.dirty.clear();
      this.running = this.running.then(async () => {
        for (const n of namespaces) await this.recompute(n).catch(this.onError);
      });
    }, 10);
  }

  /** Sets status.hard and status.used of every quota in a namespace from the objects there now. */
  async recompute(namespace: string): Promise<void> {
    const quotas = (await this.store.list('ResourceQuota', { namespace })).items;
    for (const q of quotas) {
      const hard: Record<string, string> = q.spec?.hard ?? {};
      const kinds = new Set(Object.keys(hard).flatMap(kindsForQuotaResource));
      const used = new Map<string, Quantity>();
      for (const k of Object.keys(hard)) used.set(k, parseQuantity(0));
      for (const kind of kinds) {
        const list = await this.store.list(kind, { namespace });
        for (const o of list.items) {
          const info = lookupKind(kind)!;
          for (const [k, v] of objectUsage(info.group, info.resource, o)) if (used.has(k)) used.set(k, used.get(k)!.add(v));
        }
      }
      const status = { hard: { ...hard }, used: Object.fromEntries([...used].map(([k, v]) => [k, v.toString()])) };
      if (JSON.stringify(status) === JSON.stringify(q.status)) continue;
      try {
        await this.store.updateStatus({ ...deepCopy(q), status });
      } catch (err) {
        if (!isConflict(err)) throw err;
        this.mark(namespace);
      }
    }
  }
}
