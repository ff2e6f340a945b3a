// Events about pods, as the kubelet records them (source component "kubelet", host = node). Repeats of the
// same reason and message for the same object are folded into one Event with a count, like upstream's
// event correlator.
import { randomBytes } from 'node:crypto';
import { type KubeObject, rfc3339, type Store } from '@kemu/core';

interface Folded {
  name: string;
  namespace: string;
  count: number;
  pending?: Promise<unknown>;
}

export class EventRecorder {
  private folded = new Map<string, Folded>();

  constructor(
    private readonly store: Store,
    private readonly host: string,
    private readonly enabled: boolean,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  normal(obj: KubeObject, reason: string, message: string) {
    this.record(obj, 'Normal', reason, message);
  }

  warn(obj: KubeObject, reason: string, message: string, _fold = true) {
    this.record(obj, 'Warning', reason, message);
  }

  /** Forget folding state for an object (it was deleted). */
  forget(uid: string) {
    for (const k of this.folded.keys()) if (k.startsWith(`${uid}\u0000`)) this.folded.delete(k);
  }

  private record(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string) {
    if (!this.enabled) return;
    const m = obj.metadata;
    const key = `${m.uid}\u0000${reason}\u0000${message}`;
    const now = rfc3339();
    const prev = this.folded.get(key);
    const namespace = m.namespace ?? 'default';
    if (prev) {
      prev.count++;
      const count = prev.count;
      prev.pending = (prev.pending ?? Promise.resolve())
        .then(() => this.store.patch('Event', prev.namespace, prev.name, { count, lastTimestamp: now }, 'merge'))
        .catch(this.onError);
      return;
    }
    const name = `${m.name}.${randomBytes(8).toString('hex')}`;
    const entry: Folded = { name, namespace, count: 1 };
    this.folded.set(key, entry);
    entry.pending = this.store
      .create({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace },
        involvedObject: { apiVersion: obj.apiVersion, kind: obj.kind, name: m.name, namespace: m.namespace, uid: m.uid },
        reason,
        message,
        type,
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: { component: 'kubelet', host: this.host },
        reportingComponent: 'kubelet',
        reportingInstance: this.host,
      })
      .catch(this.onError);
  }

  /** Waits for event writes in flight (tests, shutdown). */
  async flush() {
    await Promise.all([...this.folded.values()].map((f) => f.pending));
  }
}
