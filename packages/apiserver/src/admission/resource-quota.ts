// The ResourceQuota admission plugin: a create or update that would take a namespace's usage past any of
// its quotas' hard limits is refused with upstream's `exceeded quota` 403; otherwise the quotas' status.used
// is raised at once (as upstream's plugin does), so the next request sees it. Writes are serialised per
// namespace so two racing creates cannot both take the last unit. `ResourceQuotaStatusController`
// recomputes status.used from the objects themselves (after deletes, and for a new quota).
import { deepCopy, type InformerFactory, isConflict, isNotFound, type KubeObject, lookupKind, parseQuantity, type Quantity, SharedInformer, type Store } from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain } from '../auth-seams.js';
import { forbiddenError } from '../authz/forbidden.js';
import { kindsForQuotaResource, missingComputeResources, objectUsage, type Usage, usageDelta } from './quota-usage.js';

const pretty = (m: Map<string, Quantity>) =>
  [...m.keys()]
    .sort()
    .map((k) => `${k}=${m.get(k)!.toString()}`)
    .join(',');

/** One request waiting for its namespace's next quota round. */
interface Waiting {
  attrs: AdmissionAttributes;
  delta: Usage;
  resolve(): void;
  reject(err: unknown): void;
}

/** A quota as one round sees it: the object, its hard limits and its usage, parsed. */
interface QuotaState {
  quota: KubeObject;
  hard: Map<string, Quantity>;
  used: Map<string, Quantity>;
}

const rvOf = (o: KubeObject) => Number(o.metadata.resourceVersion ?? 0);
const quantities = (m: Record<string, string> | undefined) => new Map(Object.entries(m ?? {}).map(([k, v]) => [k, parseQuantity(v)]));

export class ResourceQuotaAdmission implements AdmissionChain {
  /** Requests waiting per namespace; a namespace is in the map while a round for it is running. */
  private readonly waiting = new Map<string, Waiting[]>();
  /**
   * The quotas this plugin last wrote, by namespace/name: newer than the informer's copy until its watch
   * event arrives, so back-to-back rounds read their own writes (upstream keeps the same cache).
   */
  private readonly written = new Map<string, KubeObject>();
  /** Parsed limits and usage per quota version (informer and written objects are never changed in place). */
  private readonly parsed = new WeakMap<KubeObject, { hard: Map<string, Quantity>; used: Map<string, Quantity> }>();

  /**
   * `quotas`, when given, is an informer over ResourceQuotas that rounds read instead of listing the store
   * (a namespace it holds none for is still listed live, so a quota created a moment ago is not missed).
   */
  constructor(
    private readonly store: Store,
    private readonly quotas?: SharedInformer,
  ) {}

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
    await new Promise<void>((resolve, reject) => {
      const queue = this.waiting.get(attrs.namespace);
      if (queue) {
        queue.push({ attrs, delta, resolve, reject });
        return;
      }
      this.waiting.set(attrs.namespace, [{ attrs, delta, resolve, reject }]);
      // The round starts after the requests already being processed have reached this point, so requests
      // that arrived together share one read and one status write per quota.
      setImmediate(() => void this.drain(attrs.namespace));
    });
  }

  /**
   * Serialises a namespace's quota checks as upstream's quota evaluator does: the requests that arrived
   * while a round ran are checked together, in arrival order, against one read of the quotas (each one
   * seeing the usage of those admitted before it), and each quota's status is written once for them all.
   */
  private async drain(ns: string): Promise<void> {
    for (;;) {
      const batch = this.waiting.get(ns)!.splice(0);
      if (!batch.length) {
        this.waiting.delete(ns);
        return;
      }
      try {
        await this.round(batch);
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
  }

  /** The namespace's quotas: the informer's, or this plugin's own later write of one; live when asked or none are cached. */
  private async read(namespace: string, live: boolean): Promise<KubeObject[]> {
    const cached = !live && this.quotas ? this.quotas.lister.namespace(namespace).list() : [];
    if (!cached.length) return (await this.store.list('ResourceQuota', { namespace })).items;
    return cached.map((q) => {
      const mine = this.written.get(`${namespace}/${q.metadata.name}`);
      if (mine && mine.metadata.uid === q.metadata.uid && rvOf(mine) > rvOf(q)) return mine;
      if (mine) this.written.delete(`${namespace}/${q.metadata.name}`);
      return q;
    });
  }

  private state(quota: KubeObject): QuotaState {
    let p = this.parsed.get(quota);
    if (!p) {
      p = { hard: quantities(quota.spec?.hard), used: quantities(quota.status?.used) };
      this.parsed.set(quota, p);
    }
    return { quota, hard: p.hard, used: new Map(p.used) };
  }

  private async round(batch: Waiting[]): Promise<void> {
    const namespace = batch[0].attrs.namespace;
    for (let attempt = 0; attempt < 5; attempt++) {
      const quotas = (await this.read(namespace, attempt > 0)).map((q) => this.state(q));
      if (!quotas.length) {
        for (const w of batch) w.resolve();
        return;
      }
      const changed = new Set<number>();
      const outcomes: (unknown | undefined)[] = [];
      for (const w of batch) {
        try {
          const after = this.check(w.attrs, w.delta, quotas);
          if (!w.attrs.dryRun) {
            for (const [i, u] of after) {
              quotas[i].used = u;
              changed.add(i);
            }
          }
          outcomes.push(undefined);
        } catch (err) {
          outcomes.push(err);
        }
      }
      try {
        for (const i of changed) await this.writeStatus(quotas[i]);
      } catch (err) {
        // A quota changed or deleted since the informer saw it: read them again, live.
        if (!isConflict(err) && !isNotFound(err)) throw err;
        continue;
      }
      batch.forEach((w, i) => (outcomes[i] === undefined ? w.resolve() : w.reject(outcomes[i])));
      return;
    }
    const a = batch[0].attrs;
    throw forbiddenError(a.resource.group, a.resource.resource, a.name, 'unable to update quota status after repeated conflicts');
  }

  /** Writes a quota's new usage (only what a status write needs is sent) and remembers the result. */
  private async writeStatus(s: QuotaState): Promise<void> {
    const q = s.quota;
    const { name, namespace, resourceVersion, uid } = q.metadata;
    // Values no request changed keep their stored spelling.
    const before = this.parsed.get(q)?.used;
    const raw: Record<string, string> = q.status?.used ?? {};
    const used = Object.fromEntries([...s.used].map(([k, v]) => [k, before?.get(k) === v ? raw[k] : v.toString()]));
    const written = await this.store.updateStatus({
      apiVersion: q.apiVersion,
      kind: q.kind,
      metadata: { name, namespace, resourceVersion, uid },
      status: { hard: q.status?.hard ?? q.spec?.hard ?? {}, used },
    });
    this.parsed.set(written, { hard: s.hard, used: s.used });
    if (this.quotas) this.written.set(`${namespace}/${name}`, written);
  }

  /** The quotas' usage after admitting one request (by quota index), or the upstream error refusing it. */
  private check(attrs: AdmissionAttributes, delta: Usage, quotas: QuotaState[]): Map<number, Map<string, Quantity>> {
    const after = new Map<number, Map<string, Quantity>>();
    const isPod = attrs.resource.group === '' && attrs.resource.resource === 'pods';
    quotas.forEach(({ quota: q, hard, used }, index) => {
      if (isPod && attrs.operation === 'CREATE') {
        const missing = missingComputeResources(attrs.object!.spec ?? {}, [...hard.keys()]);
        if (missing.size) {
          const parts = [...missing.keys()].sort().map((r) => `${r} for: ${missing.get(r)!.sort().join(',')}`);
          throw forbiddenError(attrs.resource.group, attrs.resource.resource, attrs.name, `failed quota: ${q.metadata.name}: must specify ${parts.join('; ')}`);
        }
      }
      let newUsed: Map<string, Quantity> | undefined;
      const requested = new Map<string, Quantity>();
      const current = new Map<string, Quantity>();
      const limited = new Map<string, Quantity>();
      for (const [k, h] of hard) {
        const d = delta.get(k);
        if (!d) continue;
        const u = used.get(k);
        if (u === undefined) {
          throw forbiddenError(attrs.resource.group, attrs.resource.resource, attrs.name, `status unknown for quota: ${q.metadata.name}, resource: ${k}`);
        }
        const sum = u.add(d);
        if (d.nanos > 0n && sum.cmp(h) > 0) {
          requested.set(k, d);
          current.set(k, u);
          limited.set(k, h);
        }
        newUsed ??= new Map(used);
        newUsed.set(k, sum.nanos < 0n ? parseQuantity(0) : sum);
      }
      if (requested.size) {
        throw forbiddenError(
          attrs.resource.group,
          attrs.resource.resource,
          attrs.name,
          `exceeded quota: ${q.metadata.name}, requested: ${pretty(requested)}, used: ${pretty(current)}, limited: ${pretty(limited)}`,
        );
      }
      if (newUsed) after.set(index, newUsed);
    });
    return after;
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
    /** Informers shared with the API server's other parts (its owner starts and stops them); default: its own. */
    private readonly shared?: InformerFactory,
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
      const inf = shared ? (shared.informer(kind) as unknown as SharedInformer) : new SharedInformer(store, kind);
      // Creates are counted by admission; deletes and phase changes (terminal pods) need a recount.
      inf.addEventHandler({ onDelete: mark, onUpdate: (a, b) => a.status?.phase !== b.status?.phase && mark(b) });
      this.informers.set(kind, inf);
    }
  }

  /** The controller's ResourceQuota informer, which the admission plugin reads too (one cache, as upstream shares its informer factory). */
  get quotaInformer(): SharedInformer {
    return this.quotas;
  }

  async start(): Promise<void> {
    const all = [this.quotas, ...this.informers.values()];
    for (const i of this.own()) i.start();
    await Promise.all(all.map((i) => i.waitForSync()));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await Promise.all(this.own().map((i) => i.stop()));
  }

  /** The informers this controller runs itself (not those of a shared factory). */
  private own(): SharedInformer[] {
    return [this.quotas, ...(this.shared ? [] : this.informers.values())];
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
