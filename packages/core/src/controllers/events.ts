// An event recorder that writes core/v1 Events into the store the way client-go's recorder does: one Event
// per (object, reason, message, type), its count and lastTimestamp bumped on repeats, named
// `<object>.<hex nanoseconds>`. Writes are fire-and-forget: a lost event never fails a reconcile.
import type { Event, ObjectReference } from '../api-core.js';
import { type KubeObject, rfc3339 } from '../api-meta.js';
import type { Store } from '../store.js';

export type EventType = 'Normal' | 'Warning';

export interface RecordedEvent {
  object: ObjectReference;
  type: EventType;
  reason: string;
  message: string;
}

export interface EventRecorderOptions {
  /** `source.component` / `reportingComponent`, e.g. `persistentvolume-controller`. */
  component: string;
  host?: string;
  /** Also called for every event (tests, logs). */
  sink?: (e: RecordedEvent) => void;
  /** Do not write Events to the store (the sink still sees them). */
  disableStore?: boolean;
}

/** A reference to an object as Events carry it. */
export function objectRef(obj: KubeObject): ObjectReference {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    namespace: obj.metadata.namespace,
    name: obj.metadata.name,
    uid: obj.metadata.uid,
    resourceVersion: obj.metadata.resourceVersion,
  };
}

interface SeenEvent {
  name: string;
  namespace: string;
  count: number;
  pending: Promise<void> | undefined;
}

export class EventRecorder {
  /**
   * What was recorded, by (object, type, reason, message): the Event's name and count, and its write while
   * one is in flight. Keys and names are joined into flat strings: a template literal would keep each as a
   * tree of string pieces, several heap objects per Event held for as long as the entry.
   */
  private readonly seen = new Map<string, SeenEvent>();
  private readonly inflight = new Set<Promise<void>>();
  private serial = 0;

  constructor(
    readonly store: Store,
    readonly options: EventRecorderOptions,
  ) {}

  event(obj: KubeObject, type: EventType, reason: string, message: string): void {
    const ref = objectRef(obj);
    this.options.sink?.({ object: ref, type, reason, message });
    if (this.options.disableStore) return;
    const namespace = ref.namespace || 'default';
    const key = [ref.uid, type, reason, message].join('\0');
    const now = rfc3339();
    const prev = this.seen.get(key);
    let p: Promise<void>;
    let entry: SeenEvent;
    if (prev) {
      prev.count++;
      const count = prev.count;
      // Chain after the create so the patch never races ahead of it.
      p = (prev.pending ?? Promise.resolve()).then(async () => {
        await this.store
          .patch('Event', prev.namespace, prev.name, { count, lastTimestamp: now }, 'merge')
          .catch(() => {});
      });
      prev.pending = p;
      entry = prev;
    } else {
      const name = [ref.name, (BigInt(Date.now()) * 1_000_000n + BigInt(this.serial++ % 1_000_000)).toString(16)].join('.');
      const ev: Event = {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace },
        involvedObject: ref,
        reason,
        message,
        type,
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: {
          component: this.options.component,
          ...(this.options.host ? { host: this.options.host } : {}),
        },
        reportingComponent: this.options.component,
        reportingInstance: this.options.host ?? '',
      };
      // Nothing reads the stored Event back: the store need not copy it for the caller.
      p = this.store.create(ev, { readOnlyResult: true }).then(
        () => {},
        () => {},
      );
      entry = { name, namespace, count: 1, pending: p };
      this.seen.set(key, entry);
      if (this.seen.size > 10_000) this.seen.delete(this.seen.keys().next().value!);
    }
    this.inflight.add(p);
    void p.finally(() => {
      this.inflight.delete(p);
      // Forget the settled write, unless a later one took its place.
      if (entry.pending === p) entry.pending = undefined;
    });
  }

  /** Wait for event writes started so far (tests, shutdown). */
  async flush(): Promise<void> {
    while (this.inflight.size) await Promise.all([...this.inflight]);
  }
}
