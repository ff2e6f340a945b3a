// API-server semantics shared by every backend: defaulting, admission, validation, optimistic concurrency,
// status subresource, patches, finalizers, graceful pod deletion, namespace teardown and cascading
// (background) deletion. Backends supply a handful of storage primitives.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Binding, Pod } from './api-core.js';
import { type DeleteOptions, type KubeList, type KubeObject, rfc3339 } from './api-meta.js';
import { applyDefaults, initialStatus } from './defaults.js';
import {
  AlreadyExistsError,
  BadRequestError,
  ConflictError,
  ExpiredError,
  ForbiddenError,
  InvalidError,
  isConflict,
  isNotFound,
  NotFoundError,
  type ResourceRef,
} from './errors.js';
import { toFieldSelector } from './fields.js';
import { jsonEqual } from './json-equal.js';
import { kindHooks, type WriteEffect, type WriteHookContext } from './kind-hooks.js';
import { clone, storageKey, type WatchFilter } from './kind-cache.js';
import { type KindInfo, kindInfo, type ObjectOf, storedKinds } from './kinds.js';
import { toSelector } from './labels.js';
import { applyPatch, normalizePatchType } from './patch.js';
import { assertValidEphemeralUpdate, withEphemeralContainers } from './pod-ephemeral-containers.js';
import type { ListOptions, PatchOptions, PatchType, Store, Stored, UpdateOptions, Watch, WatchOptions, WriteOptions } from './store.js';
import { assertValid } from './validation.js';

export interface RawPage {
  items: KubeObject[];
  rv: number;
  /** Key of the last item when more remain. */
  nextKey?: string;
  remaining?: number;
}

/** An object admission relied on, which must be unchanged when the write commits. */
export interface AdmissionGuard {
  info: KindInfo;
  key: string;
  rv: string;
}

/** The guard of a create changed between admission and commit: admit again from a live read. */
export class StaleAdmissionError extends Error {}

export interface BaseStoreOptions {
  /** Interval of BOOKMARK events for watches that allow them (ms). Default 60 s, as the API server. */
  bookmarkIntervalMs?: number;
  /** Service cluster IP range: one CIDR, or one per family separated by a comma. Default 10.96.0.0/12. */
  serviceClusterIPRange?: string;
  /** Service node port range `low-high`. Default 30000-32767. */
  serviceNodePortRange?: string;
}

const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
const SYSTEM_PRIORITY_CLASSES: [string, number, string][] = [
  ['system-node-critical', 2000001000, 'Used for system critical pods that must not be moved from their current node.'],
  ['system-cluster-critical', 2000000000, 'Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.'],
];
const DEFAULT_SC_ANNOTATION = 'storageclass.kubernetes.io/is-default-class';
const FOREGROUND_FINALIZER = 'foregroundDeletion';
const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

export function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start })).toString('base64url');
}

export function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const d = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (d.v !== 'meta.k8s.io/v1' || typeof d.start !== 'string' || typeof d.rv !== 'number') throw new Error();
    return { rv: d.rv, start: d.start };
  } catch {
    throw new BadRequestError('continue key is not valid: invalid continue token');
  }
}

export function parseResourceVersion(rv: string | undefined, what = 'resourceVersion'): number | undefined {
  if (rv === undefined || rv === '' || rv === '0') return undefined;
  if (!/^\d+$/.test(rv)) throw new BadRequestError(`${what}: Invalid value: "${rv}": must be a non-negative integer`);
  return Number(rv);
}

function specPart(o: KubeObject): Record<string, unknown> {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = o;
  return rest;
}

function sameObject(a: KubeObject, b: KubeObject): boolean {
  return jsonEqual(a, b);
}

export abstract class BaseStore implements Store {
  protected closed = false;
  private bookmarkTimer: NodeJS.Timeout | undefined;
  private readonly background = new Set<Promise<unknown>>();

  constructor(protected readonly baseOptions: BaseStoreOptions = {}) {}

  // ---- primitives supplied by the backend ----
  /** The stored object (frozen) or undefined. */
  protected abstract rawGet(info: KindInfo, key: string): Promise<KubeObject | undefined>;
  /** Matching objects in key order after `after`, at most `limit` (all when undefined). */
  protected abstract rawList(info: KindInfo, filter: WatchFilter, limit: number | undefined, after: string | undefined, atRv?: number): Promise<RawPage>;
  /**
   * Store a new object (rv assigned by the backend); AlreadyExists when the key is taken;
   * StaleAdmissionError when `guard` (an object admission relied on) no longer has resourceVersion `rv`.
   */
  protected abstract rawCreate(info: KindInfo, key: string, obj: KubeObject, guard?: AdmissionGuard): Promise<KubeObject>;
  /** Replace the object if its resourceVersion is still `expectedRv`; Conflict/NotFound otherwise. */
  protected abstract rawUpdate(info: KindInfo, key: string, obj: KubeObject, expectedRv: string): Promise<KubeObject>;
  /** Remove the object if its resourceVersion is still `expectedRv`; returns it at the deletion rv. */
  protected abstract rawDelete(info: KindInfo, key: string, expectedRv: string, last: KubeObject): Promise<KubeObject>;
  protected abstract rawWatch(info: KindInfo, filter: WatchFilter, fromRv: number | undefined, opts: WatchOptions): Promise<Watch>;
  protected abstract currentRv(): Promise<number>;
  /** Send bookmarks to watchers that allow them. */
  protected abstract sendBookmarks(): void;

  /** Objects of any kind with an ownerReference to uid. Backends with an owner index override this. */
  protected async findDependents(uid: string): Promise<KubeObject[]> {
    const out: KubeObject[] = [];
    for (const info of storedKinds()) {
      const page = await this.rawList(info, { labels: toSelector(undefined), fields: toFieldSelector(undefined) }, undefined, undefined);
      for (const o of page.items) if (o.metadata.ownerReferences?.some((r) => r.uid === uid)) out.push(o);
    }
    return out;
  }

  /**
   * Lookup for admission (namespace lifecycle, priority classes). Backends with a watch cache answer from
   * it, as the API server's admission plugins use informers, and fall back to a live read on a miss.
   */
  protected admissionGet(info: KindInfo, key: string): Promise<KubeObject | undefined> {
    return this.rawGet(info, key);
  }

  /** Every object of a (small, cluster-scoped) kind, for admission lookups. */
  protected async allOfKind(info: KindInfo): Promise<Iterable<KubeObject> & KubeObject[]> {
    return (await this.rawList(info, { labels: toSelector(undefined), fields: toFieldSelector(undefined) }, undefined, undefined)).items;
  }

  protected startBookmarks(): void {
    const every = this.baseOptions.bookmarkIntervalMs ?? 60_000;
    this.bookmarkTimer = setInterval(() => this.sendBookmarks(), every);
    this.bookmarkTimer.unref();
  }

  protected ref(info: KindInfo, name: string): ResourceRef {
    return { resource: info.resource, group: info.group, name, kind: info.kind };
  }

  /** Create the namespaces and priority classes the API server bootstraps. Idempotent. */
  async bootstrap(): Promise<void> {
    for (const name of SYSTEM_NAMESPACES) {
      await this.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch((e) => {
        if (e?.reason !== 'AlreadyExists') throw e;
      });
    }
    for (const [name, value, description] of SYSTEM_PRIORITY_CLASSES) {
      await this.create({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value, description }).catch((e) => {
        if (e?.reason !== 'AlreadyExists') throw e;
      });
    }
  }

  private track<T>(p: Promise<T>): void {
    const q = p.catch(() => undefined).finally(() => this.background.delete(q));
    this.background.add(q);
  }

  /** Wait until background work (cascading deletion, namespace teardown) started so far is done. */
  async settle(): Promise<void> {
    while (this.background.size) await Promise.all([...this.background]);
  }

  private checkKindVersion(obj: KubeObject): KindInfo {
    if (!obj || typeof obj !== 'object') throw new BadRequestError('object must be a JSON object');
    if (!obj.kind) throw new BadRequestError("Object 'Kind' is missing");
    const info = kindInfo(obj.kind);
    if (obj.apiVersion !== info.apiVersion) {
      throw new BadRequestError(`the API version in the data (${obj.apiVersion}) does not match the expected API version (${info.apiVersion}) for kind ${obj.kind}`);
    }
    if (!obj.metadata || typeof obj.metadata !== 'object') {
      throw new InvalidError(obj.kind, '', info.group, [{ field: 'metadata', type: 'FieldValueRequired', message: 'Required value' }]);
    }
    if (info.kind === 'Binding') throw new BadRequestError('Binding is a subresource: use bind()');
    return info;
  }

  private namespaceOf(info: KindInfo, ns: string | undefined): string {
    return info.namespaced ? ns || 'default' : '';
  }

  // ---- admission ----
  /** Admission; returns the namespace it was checked against (its rv guards the write). */
  private async admit(info: KindInfo, obj: KubeObject, live: boolean): Promise<KubeObject | undefined> {
    let ns: KubeObject | undefined;
    if (info.namespaced) {
      const nsInfo = kindInfo('Namespace');
      const name = obj.metadata.namespace!;
      ns = live ? await this.rawGet(nsInfo, name) : await this.admissionGet(nsInfo, name);
      if (!ns) throw new NotFoundError({ resource: 'namespaces', group: '', name: obj.metadata.namespace! });
      if (ns.metadata.deletionTimestamp || ns.status?.phase === 'Terminating') {
        throw new ForbiddenError(
          this.ref(info, obj.metadata.name!),
          `unable to create new content in namespace ${ns.metadata.name} because it is being terminated`,
        );
      }
    }
    if (info.kind === 'Pod') await this.admitPriority(obj as Pod);
    if (info.kind === 'PersistentVolumeClaim' && obj.spec && obj.spec.storageClassName === undefined) {
      const scs = await this.rawList(kindInfo('StorageClass'), { labels: toSelector(undefined), fields: toFieldSelector(undefined) }, undefined, undefined);
      const defaults = scs.items
        .filter((s) => s.metadata.annotations?.[DEFAULT_SC_ANNOTATION] === 'true')
        .sort((a, b) => (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? ''));
      if (defaults.length) obj.spec.storageClassName = defaults[0].metadata.name;
    }
    return ns;
  }

  private async admitPriority(pod: Pod): Promise<void> {
    const spec = pod.spec;
    if (!spec || typeof spec !== 'object') return;
    const pcInfo = kindInfo('PriorityClass');
    let value = 0;
    let policy: string | undefined;
    if (spec.priorityClassName) {
      const pc = await this.admissionGet(pcInfo, spec.priorityClassName);
      if (!pc) {
        throw new ForbiddenError(this.ref(kindInfo('Pod'), pod.metadata.name!), `no PriorityClass with name ${spec.priorityClassName} was found`);
      }
      value = pc.value;
      policy = pc.preemptionPolicy;
    } else {
      const def = (await this.allOfKind(pcInfo)).find((p) => p.globalDefault === true);
      if (def) {
        spec.priorityClassName = def.metadata.name;
        value = def.value;
        policy = def.preemptionPolicy;
      }
    }
    if (spec.priority !== undefined && spec.priority !== value) {
      throw new ForbiddenError(
        this.ref(kindInfo('Pod'), pod.metadata.name!),
        `the integer value of priority (${spec.priority}) must not be provided in pod spec; priority admission controller computed ${value} from the given PriorityClass name`,
      );
    }
    spec.priority = value;
    spec.preemptionPolicy ??= (policy as Pod['spec']['preemptionPolicy']) ?? 'PreemptLowerPriority';
  }

  // ---- Store ----
  async create<const T extends KubeObject>(input: T, opts: WriteOptions = {}): Promise<Stored<T>> {
    this.checkOpen();
    const info = this.checkKindVersion(input);
    const obj = (opts.adoptInput ? input : clone(input)) as KubeObject;
    const m = obj.metadata;
    if (m.resourceVersion) {
      throw new BadRequestError('resourceVersion should not be set on objects to be created');
    }
    if (info.namespaced) m.namespace ||= 'default';
    if (!m.name && m.generateName) {
      let suffix = '';
      for (const b of randomBytes(5)) suffix += GENERATE_ALPHABET[b % GENERATE_ALPHABET.length];
      m.name = `${m.generateName}${suffix}`;
    }
    m.uid = randomUUID();
    m.creationTimestamp = rfc3339();
    m.generation = 1;
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    applyDefaults(obj);
    initialStatus(obj);
    assertValid(obj);
    // (No await, and no microtask, for the many kinds without a create hook.)
    const hooks = kindHooks(info.kind);
    const effect = hooks?.beforeCreate ? await hooks.beforeCreate(this.hookContext(), obj) : undefined;
    try {
      for (let live = false; ; live = true) {
        const ns = await this.admit(info, obj, live);
        if (opts.dryRun) {
          if (await this.rawGet(info, storageKey(m.namespace, m.name!))) throw new AlreadyExistsError(this.ref(info, m.name!));
          effect?.undo?.();
          return obj as Stored<T>;
        }
        // The write only lands if the namespace is still as admission saw it (a cached view may lag).
        const guard = ns ? { info: kindInfo('Namespace'), key: ns.metadata.name!, rv: ns.metadata.resourceVersion! } : undefined;
        try {
          const stored = await this.rawCreate(info, storageKey(m.namespace, m.name!), obj, guard);
          effect?.commit?.();
          return (opts.readOnlyResult ? stored : clone(stored)) as Stored<T>;
        } catch (e) {
          if (!(e instanceof StaleAdmissionError) || live) throw e;
        }
      }
    } catch (e) {
      effect?.undo?.();
      throw e;
    }
  }

  /** What per-kind write hooks see of this store. */
  protected hookContext(): WriteHookContext {
    const all = { labels: toSelector(undefined), fields: toFieldSelector(undefined) };
    return {
      owner: this,
      options: this.baseOptions as Record<string, unknown>,
      listAll: async (kind) => (await this.rawList(kindInfo(kind), all, undefined, undefined)).items,
    };
  }

  async get<K extends string>(kind: K, namespace: string | undefined, name: string): Promise<ObjectOf<K>> {
    this.checkOpen();
    const info = kindInfo(kind);
    const o = await this.rawGet(info, storageKey(this.namespaceOf(info, namespace), name));
    if (!o) throw new NotFoundError(this.ref(info, name));
    return clone(o) as ObjectOf<K>;
  }

  async list<K extends string>(kind: K, opts: ListOptions = {}): Promise<KubeList<ObjectOf<K>>> {
    this.checkOpen();
    const info = kindInfo(kind);
    const filter = this.filterFor(info, opts);
    let after: string | undefined;
    let atRv: number | undefined;
    if (opts.continue) {
      const c = decodeContinue(opts.continue);
      after = c.start;
      atRv = c.rv;
    }
    if (opts.limit !== undefined && !(Number.isInteger(opts.limit) && opts.limit >= 0)) {
      throw new BadRequestError(`limit: Invalid value: ${opts.limit}: must be a non-negative integer`);
    }
    const page = await this.rawList(info, filter, opts.limit || undefined, after, atRv);
    const rv = atRv ?? page.rv;
    return {
      apiVersion: info.apiVersion,
      kind: `${info.kind}List`,
      metadata: {
        resourceVersion: String(rv),
        ...(page.nextKey !== undefined ? { continue: encodeContinue(rv, page.nextKey) } : {}),
        ...(page.remaining ? { remainingItemCount: page.remaining } : {}),
      },
      items: page.items as ObjectOf<K>[],
    };
  }

  protected filterFor(info: KindInfo, opts: { namespace?: string; labelSelector?: ListOptions['labelSelector']; fieldSelector?: ListOptions['fieldSelector'] }): WatchFilter {
    const fields = toFieldSelector(opts.fieldSelector);
    fields.bind(info); // reject unsupported fields up front
    return {
      namespace: info.namespaced && opts.namespace ? opts.namespace : undefined,
      labels: toSelector(opts.labelSelector),
      fields,
    };
  }

  async update<const T extends KubeObject>(input: T, opts: UpdateOptions = {}): Promise<Stored<T>> {
    return this.writeExisting(input, opts.subresource === 'ephemeralcontainers' ? 'ephemeralcontainers' : 'main', opts) as Promise<Stored<T>>;
  }

  async updateStatus<const T extends KubeObject>(input: T, opts: WriteOptions = {}): Promise<Stored<T>> {
    return this.writeExisting(input, 'status', opts) as Promise<Stored<T>>;
  }

  /** Update path shared by update, updateStatus and patch. `expectRv` overrides the object's own rv. */
  private async writeExisting(
    input: KubeObject,
    part: 'main' | 'status' | 'ephemeralcontainers',
    opts: WriteOptions,
    current?: KubeObject,
  ): Promise<KubeObject> {
    this.checkOpen();
    const info = this.checkKindVersion(input);
    // A status write reads only the input's identity and takes (a copy of) its status: no copy of the rest.
    const incoming = opts.adoptInput || part === 'status' ? input : clone(input);
    const ns = this.namespaceOf(info, incoming.metadata.namespace);
    const name = incoming.metadata.name;
    if (!name) {
      throw new InvalidError(info.kind, '', info.group, [{ field: 'metadata.name', type: 'FieldValueRequired', message: 'Required value: name is required' }]);
    }
    const key = storageKey(ns, name);
    const cur = current ?? (await this.rawGet(info, key));
    if (!cur) throw new NotFoundError(this.ref(info, name));
    const wantRv = incoming.metadata.resourceVersion;
    if (wantRv && wantRv !== cur.metadata.resourceVersion) throw new ConflictError(this.ref(info, name));
    if (incoming.metadata.uid && incoming.metadata.uid !== cur.metadata.uid) {
      throw new ConflictError(
        this.ref(info, name),
        `Precondition failed: UID in precondition: ${incoming.metadata.uid}, UID in object meta: ${cur.metadata.uid}`,
      );
    }
    let next: KubeObject;
    if (part === 'status') {
      if (!info.hasStatus) throw new BadRequestError(`${info.resource} has no status subresource`);
      // The stored object is frozen, so the new version shares all of it but metadata and status (no copy).
      next = { ...cur, metadata: { ...cur.metadata }, status: opts.adoptInput ? incoming.status : clone(incoming.status) };
    } else if (part === 'ephemeralcontainers') {
      if (info.kind !== 'Pod') throw new BadRequestError(`${info.resource} has no ephemeralcontainers subresource`);
      next = withEphemeralContainers(cur as Pod, incoming);
    } else {
      next = incoming;
      next.metadata.namespace = cur.metadata.namespace;
      for (const f of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation'] as const) {
        if (cur.metadata[f] === undefined) delete next.metadata[f];
        else (next.metadata as Record<string, unknown>)[f] = cur.metadata[f];
      }
      if (info.hasStatus) {
        if (cur.status === undefined) delete next.status;
        else next.status = clone(cur.status);
      }
      kindHooks(info.kind)?.prepareForUpdate?.(next, cur);
      applyDefaults(next);
      if (cur.metadata.deletionTimestamp) {
        const had = new Set(cur.metadata.finalizers ?? []);
        const added = (next.metadata.finalizers ?? []).filter((f) => !had.has(f));
        if (added.length) {
          throw new InvalidError(info.kind, name, info.group, [
            { field: 'metadata.finalizers', type: 'FieldValueForbidden', message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}` },
          ]);
        }
      }
      if (!jsonEqual(specPart(next), specPart(cur))) next.metadata.generation = (cur.metadata.generation ?? 0) + 1;
    }
    next.metadata.resourceVersion = cur.metadata.resourceVersion;
    if (next.metadata.finalizers?.length === 0) delete next.metadata.finalizers;
    if (part === 'ephemeralcontainers') assertValidEphemeralUpdate(next as Pod, cur as Pod);
    else assertValid(next, cur);
    if (sameObject(next, cur)) return clone(cur);
    if (cur.metadata.deletionTimestamp && !next.metadata.finalizers?.length && !this.gracefulPending(info, next)) {
      if (opts.dryRun) return next;
      // The last finalizer is gone: the deletion completes now.
      const gone = await this.rawDelete(info, key, cur.metadata.resourceVersion!, next);
      this.afterDelete(info, gone, 'Background');
      return clone(gone);
    }
    const hooks = part === 'main' ? kindHooks(info.kind) : undefined;
    const effect: WriteEffect | undefined = hooks?.beforeUpdate ? await hooks.beforeUpdate(this.hookContext(), next, cur) : undefined;
    if (opts.dryRun) {
      effect?.undo?.();
      return next;
    }
    let stored: KubeObject;
    try {
      stored = await this.rawUpdate(info, key, next, cur.metadata.resourceVersion!);
    } catch (e) {
      effect?.undo?.();
      throw e;
    }
    effect?.commit?.();
    return opts.readOnlyResult ? stored : clone(stored);
  }

  private gracefulPending(info: KindInfo, obj: KubeObject): boolean {
    // A pod in graceful deletion stays until the kubelet confirms with a grace-0 delete.
    return info.kind === 'Pod' && (obj.metadata.deletionGracePeriodSeconds ?? 0) > 0;
  }

  async patch<K extends string>(
    kind: K,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type?: PatchType,
    opts: PatchOptions = {},
  ): Promise<ObjectOf<K>> {
    this.checkOpen();
    const info = kindInfo(kind);
    normalizePatchType(type);
    const key = storageKey(this.namespaceOf(info, namespace), name);
    // Retry internal conflicts like the API server's guaranteed update; a patch that names a
    // resourceVersion is a precondition and fails instead.
    for (let attempt = 0; ; attempt++) {
      const cur = await this.rawGet(info, key);
      if (!cur) throw new NotFoundError(this.ref(info, name));
      const patched = applyPatch(clone(cur), patch, type) as KubeObject;
      if (!patched || typeof patched !== 'object' || Array.isArray(patched)) throw new BadRequestError('patch result is not an object');
      const pinned = patched.metadata?.resourceVersion !== cur.metadata.resourceVersion;
      if (patched.metadata && !pinned) patched.metadata.resourceVersion = cur.metadata.resourceVersion;
      if (patched.kind !== cur.kind || patched.apiVersion !== cur.apiVersion) {
        throw new BadRequestError('a patch may not change kind or apiVersion');
      }
      if (patched.metadata?.name !== name) {
        throw new InvalidError(info.kind, name, info.group, [{ field: 'metadata.name', type: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(patched.metadata?.name)}: field is immutable` }]);
      }
      try {
        return (await this.writeExisting(patched, opts.subresource ?? 'main', opts, pinned ? undefined : cur)) as ObjectOf<K>;
      } catch (e) {
        if (!isConflict(e) || pinned || attempt >= 5) throw e;
      }
    }
  }

  async delete<K extends string>(kind: K, namespace: string | undefined, name: string, opts: DeleteOptions = {}): Promise<ObjectOf<K>> {
    this.checkOpen();
    const info = kindInfo(kind);
    const key = storageKey(this.namespaceOf(info, namespace), name);
    if (opts.propagationPolicy && !['Orphan', 'Background', 'Foreground'].includes(opts.propagationPolicy)) {
      throw new BadRequestError(`propagationPolicy: Unsupported value: "${opts.propagationPolicy}": supported values: "Orphan", "Background", "Foreground"`);
    }
    if (opts.gracePeriodSeconds !== undefined && !(Number.isInteger(opts.gracePeriodSeconds) && opts.gracePeriodSeconds >= 0)) {
      throw new BadRequestError(`gracePeriodSeconds: Invalid value: ${opts.gracePeriodSeconds}: must be a non-negative integer`);
    }
    for (let attempt = 0; ; attempt++) {
      const cur = await this.rawGet(info, key);
      if (!cur) throw new NotFoundError(this.ref(info, name));
      const pre = opts.preconditions;
      if (pre?.uid && pre.uid !== cur.metadata.uid) {
        throw new ConflictError(this.ref(info, name), `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${cur.metadata.uid}`);
      }
      if (pre?.resourceVersion && pre.resourceVersion !== cur.metadata.resourceVersion) {
        throw new ConflictError(
          this.ref(info, name),
          `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${cur.metadata.resourceVersion}`,
        );
      }
      try {
        return (await this.deleteOnce(info, key, cur, opts)) as ObjectOf<K>;
      } catch (e) {
        if (!isConflict(e) || pre?.resourceVersion || attempt >= 5) throw e;
      }
    }
  }

  private async deleteOnce(info: KindInfo, key: string, cur: KubeObject, opts: DeleteOptions): Promise<KubeObject> {
    const policy = opts.propagationPolicy ?? 'Background';
    if (info.kind === 'Namespace') return this.deleteNamespace(info, key, cur, opts);
    let grace = 0;
    if (info.kind === 'Pod') {
      const pod = cur as Pod;
      const terminal = pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
      // Pods not on a node, or already finished, go at once; running ones wait for their kubelet.
      grace = !pod.spec.nodeName || terminal ? 0 : (opts.gracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30);
    }
    if (policy === 'Foreground' && !cur.metadata.deletionTimestamp && !opts.dryRun) {
      const deps = await this.findDependents(cur.metadata.uid!);
      if (deps.length) {
        // Foreground: the owner stays (deletionTimestamp + foregroundDeletion finalizer) until its
        // dependents are gone.
        const marked = clone(cur);
        marked.metadata.deletionTimestamp = rfc3339();
        marked.metadata.deletionGracePeriodSeconds = 0;
        marked.metadata.finalizers = [...(marked.metadata.finalizers ?? []), FOREGROUND_FINALIZER];
        const updated = await this.rawUpdate(info, key, marked, cur.metadata.resourceVersion!);
        this.track(this.foreground(info, updated));
        return clone(updated);
      }
    }
    const next = clone(cur);
    const m = next.metadata;
    if (grace > 0) {
      if (m.deletionTimestamp && (m.deletionGracePeriodSeconds ?? 0) <= grace) return clone(cur);
      m.deletionTimestamp = rfc3339(new Date(Date.now() + grace * 1000));
      m.deletionGracePeriodSeconds = grace;
      if (opts.dryRun) return next;
      return clone(await this.rawUpdate(info, key, next, cur.metadata.resourceVersion!));
    }
    if (m.finalizers?.length) {
      if (m.deletionTimestamp && m.deletionGracePeriodSeconds === 0) return clone(cur);
      m.deletionTimestamp ??= rfc3339();
      m.deletionGracePeriodSeconds = 0;
      if (opts.dryRun) return next;
      const updated = await this.rawUpdate(info, key, next, cur.metadata.resourceVersion!);
      if (policy === 'Orphan') this.track(this.orphan(cur.metadata.uid!));
      return clone(updated);
    }
    if (opts.dryRun) return clone(cur);
    const gone = await this.rawDelete(info, key, cur.metadata.resourceVersion!, cur);
    this.afterDelete(info, gone, policy);
    return clone(gone);
  }

  private afterDelete(info: KindInfo, gone: KubeObject, policy: 'Orphan' | 'Background' | 'Foreground'): void {
    kindHooks(info.kind)?.afterDelete?.(this.hookContext(), gone);
    if (this.closed) return;
    this.track(policy === 'Orphan' ? this.orphan(gone.metadata.uid!) : this.collect(gone.metadata.uid!));
  }

  /**
   * Cascading deletion: dependents whose owners are all gone are deleted. Under a foreground deletion the
   * dependents are deleted in the foreground too, so a whole chain (Deployment, ReplicaSets, Pods) goes
   * leaves first, as the garbage collector does for owners waiting for their dependents.
   */
  private async collect(uid: string, policy: 'Background' | 'Foreground' = 'Background'): Promise<void> {
    for (const dep of await this.findDependents(uid)) {
      if (this.closed) return;
      const info = kindInfo(dep.kind);
      const others = (dep.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid);
      let ownerAlive = false;
      for (const r of others) {
        const oi = kindInfo(r.kind);
        const owner = await this.rawGet(oi, storageKey(oi.namespaced ? dep.metadata.namespace : '', r.name)).catch(() => undefined);
        if (owner && owner.metadata.uid === r.uid) ownerAlive = true;
      }
      try {
        if (ownerAlive) await this.dropOwnerRef(info, dep, uid);
        else await this.delete(dep.kind, dep.metadata.namespace, dep.metadata.name!, { preconditions: { uid: dep.metadata.uid }, propagationPolicy: policy });
      } catch (e) {
        if (!isNotFound(e) && !isConflict(e)) throw e;
      }
    }
  }

  /** Delete the dependents of an owner in foreground deletion, then release its finalizer. */
  private async foreground(info: KindInfo, owner: KubeObject): Promise<void> {
    const uid = owner.metadata.uid!;
    await this.collect(uid, 'Foreground');
    for (let round = 0; !this.closed; round++) {
      if ((await this.findDependents(uid)).length === 0) break;
      await new Promise((r) => setTimeout(r, Math.min(1000, 20 * 2 ** Math.min(round, 6))).unref());
    }
    if (this.closed) return;
    for (let attempt = 0; attempt < 10; attempt++) {
      const cur = await this.rawGet(info, storageKey(owner.metadata.namespace, owner.metadata.name!));
      if (!cur || cur.metadata.uid !== uid) return;
      const finalizers = (cur.metadata.finalizers ?? []).filter((f) => f !== FOREGROUND_FINALIZER);
      try {
        await this.update({ ...clone(cur), metadata: { ...clone(cur.metadata), finalizers } });
        return;
      } catch (e) {
        if (!isConflict(e)) throw e;
      }
    }
  }

  private async orphan(uid: string): Promise<void> {
    for (const dep of await this.findDependents(uid)) {
      try {
        await this.dropOwnerRef(kindInfo(dep.kind), dep, uid);
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
  }

  private async dropOwnerRef(info: KindInfo, dep: KubeObject, uid: string): Promise<void> {
    const refs = (dep.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid);
    await this.patch(info.kind, dep.metadata.namespace, dep.metadata.name!, { metadata: { ownerReferences: refs.length ? refs : null } }, 'merge');
  }

  private async deleteNamespace(info: KindInfo, key: string, cur: KubeObject, opts: DeleteOptions): Promise<KubeObject> {
    if (SYSTEM_NAMESPACES.includes(cur.metadata.name!) && cur.metadata.name !== 'kube-node-lease') {
      throw new ForbiddenError(this.ref(info, cur.metadata.name!), 'this namespace may not be deleted');
    }
    if (cur.metadata.deletionTimestamp) return clone(cur);
    const next = clone(cur);
    next.metadata.deletionTimestamp = rfc3339();
    next.metadata.deletionGracePeriodSeconds = 0;
    next.status = { ...(next.status ?? {}), phase: 'Terminating' };
    if (opts.dryRun) return next;
    const updated = await this.rawUpdate(info, key, next, cur.metadata.resourceVersion!);
    this.track(this.finalizeNamespace(cur.metadata.name!));
    return clone(updated);
  }

  /** Namespace teardown (the namespace controller's job): delete the contents, then the namespace. */
  private async finalizeNamespace(name: string): Promise<void> {
    const nsInfo = kindInfo('Namespace');
    for (let round = 0; !this.closed; round++) {
      let remaining = 0;
      for (const info of storedKinds()) {
        if (!info.namespaced) continue;
        const page = await this.rawList(info, { namespace: name, labels: toSelector(undefined), fields: toFieldSelector(undefined) }, undefined, undefined);
        for (const o of page.items) {
          remaining++;
          if (o.metadata.deletionTimestamp) continue;
          await this.delete(info.kind, name, o.metadata.name!).catch((e) => {
            if (!isNotFound(e)) throw e;
          });
        }
      }
      if (remaining === 0) {
        const ns = await this.rawGet(nsInfo, name);
        if (!ns) return;
        const gone = await this.rawDelete(nsInfo, name, ns.metadata.resourceVersion!, ns).catch((e) => {
          if (isConflict(e)) return undefined;
          throw e;
        });
        if (gone) return;
      }
      // Contents still terminating (finalizers, graceful pods): look again shortly.
      await new Promise((r) => setTimeout(r, Math.min(1000, 20 * 2 ** Math.min(round, 6))).unref());
    }
  }

  async watch<K extends string>(kind: K, opts: WatchOptions = {}): Promise<Watch<ObjectOf<K>>> {
    this.checkOpen();
    const info = kindInfo(kind);
    const filter = this.filterFor(info, opts);
    const fromRv = parseResourceVersion(opts.resourceVersion);
    return (await this.rawWatch(info, filter, fromRv, opts)) as Watch<ObjectOf<K>>;
  }

  async bind(binding: Binding, opts: WriteOptions = {}): Promise<Pod> {
    this.checkOpen();
    const podInfo = kindInfo('Pod');
    const name = binding?.metadata?.name;
    const ns = binding?.metadata?.namespace || 'default';
    const node = binding?.target?.name;
    if (!name || !node || (binding.target.kind && binding.target.kind !== 'Node')) {
      throw new InvalidError('Binding', name ?? '', '', [
        { field: 'target.name', type: 'FieldValueRequired', message: 'Required value: a Binding needs metadata.name and a Node target' },
      ]);
    }
    for (let attempt = 0; ; attempt++) {
      const cur = (await this.rawGet(podInfo, storageKey(ns, name))) as Pod | undefined;
      if (!cur) throw new NotFoundError(this.ref(podInfo, name));
      if (binding.metadata.uid && binding.metadata.uid !== cur.metadata.uid) {
        throw new ConflictError(this.ref(podInfo, name), `Precondition failed: UID in precondition: ${binding.metadata.uid}, UID in object meta: ${cur.metadata.uid}`);
      }
      if (cur.metadata.deletionTimestamp) {
        throw new ConflictError(this.ref(podInfo, name), `pod ${name} is being deleted, cannot be assigned to a host`);
      }
      if (cur.spec.nodeName) {
        throw new ConflictError(this.ref(podInfo, name), `pod ${name} is already assigned to node "${cur.spec.nodeName}"`);
      }
      if (cur.spec.schedulingGates?.length) {
        throw new ConflictError(this.ref(podInfo, name), `pod ${name} has non-empty .spec.schedulingGates`);
      }
      const next = clone(cur);
      next.spec.nodeName = node;
      next.status ??= {};
      const conds = next.status.conditions ?? [];
      const now = rfc3339();
      const i = conds.findIndex((c) => c.type === 'PodScheduled');
      const cond = { type: 'PodScheduled', status: 'True' as const, lastProbeTime: null as unknown as string, lastTransitionTime: now };
      if (i >= 0) conds[i] = cond;
      else conds.push(cond);
      next.status.conditions = conds;
      if (opts.dryRun) return next;
      try {
        return clone(await this.rawUpdate(podInfo, storageKey(ns, name), next, cur.metadata.resourceVersion!)) as Pod;
      } catch (e) {
        if (!isConflict(e) || attempt >= 5) throw e;
      }
    }
  }

  async resourceVersion(): Promise<string> {
    return String(await this.currentRv());
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.bookmarkTimer) clearInterval(this.bookmarkTimer);
  }

  protected checkOpen(): void {
    if (this.closed) throw new Error('store is closed');
  }
}

export { ExpiredError };
