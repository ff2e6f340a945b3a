// The Store contract every backend (memory, file, etcd) implements and the contract suite checks.
import type { Binding, Pod } from './api-core.js';
import type { DeleteOptions, KubeList, KubeObject, LabelSelector } from './api-meta.js';
import type { Status } from './errors.js';
import type { FieldSelector } from './fields.js';
import type { BuiltinKind, KindMap, ObjectOf } from './kinds.js';
import type { Selector } from './labels.js';

/** What a write returns for input T: the built-in type for its kind, else T with all object fields. */
export type Stored<T extends KubeObject> = T extends { kind: infer K extends BuiltinKind } ? KindMap[K] : T & KubeObject;

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export type WatchEvent<T extends KubeObject = KubeObject> =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: T }
  /** Only `metadata.resourceVersion` (and for the end of initial events an annotation) is set. */
  | { type: 'BOOKMARK'; object: T }
  /** The watch ends after an ERROR; a 410 code means "relist". */
  | { type: 'ERROR'; object: Status };

/**
 * A push consumer of a watch (Watch.subscribe): the store calls it synchronously as it commits each change,
 * with no promise or microtask per event, so one change reaches thousands of watchers in one pass.
 */
export interface WatchSink<T extends KubeObject = KubeObject> {
  /**
   * One event, in resourceVersion order. The event and its object may be shared with other watchers and are
   * frozen: read only. Return `false` to pause: later events wait in the watch's queue (bounded as an
   * iterating consumer's is: past the limit the watch ends with a 410 ERROR event) until `resume()`.
   * A sink that throws ends its watch; the error is passed to `end`.
   */
  event(ev: WatchEvent<T>): boolean | void;
  /** The watch ended (stop(), after an ERROR event, or the store closed); called once, after the last event. */
  end(err?: unknown): void;
}

/**
 * A running watch: iterate it with `for await`, or hand it a sink with `subscribe` (one or the other), and
 * end it with `stop()`.
 */
export interface Watch<T extends KubeObject = KubeObject> extends AsyncIterable<WatchEvent<T>> {
  /** Ends the watch; a pending iteration finishes, a sink's `end` is called. Idempotent. */
  stop(): void;
  readonly stopped: boolean;
  /**
   * Deliver events to `sink` as they happen: events already queued (a watch's initial state) are delivered
   * before this returns. Throws when the watch is already iterated or subscribed.
   */
  subscribe(sink: WatchSink<T>): void;
  /** After a sink returned false: deliver what was queued meanwhile, then carry on pushing. */
  resume(): void;
}

export type SelectorInput = string | LabelSelector | Selector;

export interface ListOptions {
  /** Restrict to one namespace; omitted or '' lists all namespaces. Ignored for cluster-scoped kinds. */
  namespace?: string;
  labelSelector?: SelectorInput;
  fieldSelector?: string | FieldSelector;
  /** Page size; the result carries `metadata.continue` when more items remain. */
  limit?: number;
  /** The `metadata.continue` token of the previous page. */
  continue?: string;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: SelectorInput;
  fieldSelector?: string | FieldSelector;
  /**
   * Start point. Omitted or '0': first an ADDED event for every current matching object, then changes.
   * A list's resourceVersion: only changes after it (410 Expired when history no longer reaches back).
   */
  resourceVersion?: string;
  /** Send periodic BOOKMARK events carrying the latest resourceVersion. */
  allowBookmarks?: boolean;
  /**
   * With an explicit resourceVersion, still send the current state first; the end of the initial
   * events is marked by a BOOKMARK annotated `k8s.io/initial-events-end: "true"` (needs allowBookmarks).
   */
  sendInitialEvents?: boolean;
}

export type PatchType =
  | 'merge'
  | 'strategic'
  | 'json'
  | 'application/merge-patch+json'
  | 'application/strategic-merge-patch+json'
  | 'application/json-patch+json';

export interface WriteOptions {
  /** Validate and default, report the result, persist nothing. */
  dryRun?: boolean;
  /**
   * Return the stored object itself (read-only, shared with lists and watchers) rather than a private copy,
   * for a caller that only reads the result (an API server rendering it). Backends may still copy.
   */
  readOnlyResult?: boolean;
  /**
   * The input object is the caller's to give away (a request body decoded for this one write, holding JSON
   * values only): the store writes that object itself, defaulted in place and frozen once stored, instead of
   * a copy. The caller must not touch it afterwards (reading it as the result is fine).
   */
  adoptInput?: boolean;
}

export interface UpdateOptions extends WriteOptions {
  /** `ephemeralcontainers`: change only a pod's ephemeral containers (the pods/ephemeralcontainers subresource). */
  subresource?: 'ephemeralcontainers';
}

export interface PatchOptions extends WriteOptions {
  /** Patch the status (or a pod's ephemeralcontainers) subresource instead of the main resource. */
  subresource?: 'status' | 'ephemeralcontainers';
}

export interface Store {
  /** Default, validate and persist a new object. Returns it as stored (uid, resourceVersion, ...). */
  create<const T extends KubeObject>(obj: T, opts?: WriteOptions): Promise<Stored<T>>;
  /** The object, as a private copy. NotFound when absent. Cluster-scoped kinds take '' as namespace. */
  get<K extends string>(kind: K, namespace: string | undefined, name: string): Promise<ObjectOf<K>>;
  /** Matching objects; items are read-only (frozen) snapshots shared with watchers. */
  list<K extends string>(kind: K, opts?: ListOptions): Promise<KubeList<ObjectOf<K>>>;
  /**
   * Replace spec/metadata. With `metadata.resourceVersion` set the write only succeeds if it is still
   * current (Conflict otherwise); without, it is unconditional. Status changes are ignored for kinds with a
   * status subresource.
   */
  update<const T extends KubeObject>(obj: T, opts?: UpdateOptions): Promise<Stored<T>>;
  /** Replace only `status` (optimistic concurrency as update). */
  updateStatus<const T extends KubeObject>(obj: T, opts?: WriteOptions): Promise<Stored<T>>;
  /** Merge (RFC 7386), strategic (lists keyed by name etc.) or JSON (RFC 6902) patch. */
  patch<K extends string>(
    kind: K,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type?: PatchType,
    opts?: PatchOptions,
  ): Promise<ObjectOf<K>>;
  /**
   * Delete. With finalizers (or a graceful pod deletion) the object stays with `deletionTimestamp` set
   * until the last finalizer is removed (or a grace-0 delete); the returned object shows which happened.
   */
  delete<K extends string>(kind: K, namespace: string | undefined, name: string, opts?: DeleteOptions): Promise<ObjectOf<K>>;
  /** Watch a kind. Rejects with Expired (410) for a resourceVersion older than the retained history. */
  watch<K extends string>(kind: K, opts?: WatchOptions): Promise<Watch<ObjectOf<K>>>;
  /** The pods/binding subresource: assign a pod to a node (Conflict when already assigned). */
  bind(binding: Binding, opts?: WriteOptions): Promise<Pod>;
  /** The latest resourceVersion of the whole store. */
  resourceVersion(): Promise<string>;
  /** Stop watches and release resources. */
  close(): Promise<void>;
}
