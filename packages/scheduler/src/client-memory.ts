// An in-memory SchedulerClient: the cluster lives in maps, side effects apply instantly. Used by
// simulate() and tests; it keeps a log of events and status writes for inspection.
import type { SchedulerClient } from './framework.js';
import type { Event, KubeObject, Pod } from './types.js';

export interface RecordedEvent {
  pod: string;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export class MemoryClient implements SchedulerClient {
  pods = new Map<string, Pod>();
  events: RecordedEvent[] = [];
  objects = new Map<string, KubeObject>();
  /** Hooks the owner wires to the scheduler (cache/queue updates). */
  onPodChange: (pod: Pod) => void = () => {};
  onPodDeleted: (pod: Pod) => void = () => {};
  onObjectChange: (obj: KubeObject) => void = () => {};

  static key(pod: Pod): string {
    return `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`;
  }

  async bind(pod: Pod, nodeName: string): Promise<void> {
    const key = MemoryClient.key(pod);
    const cur = this.pods.get(key);
    if (!cur) throw new Error(`pods "${pod.metadata.name}" not found`);
    if (cur.spec.nodeName) {
      throw new Error(
        `Operation cannot be fulfilled on pods/binding "${pod.metadata.name}": pod ${pod.metadata.name} is already assigned to node "${cur.spec.nodeName}"`,
      );
    }
    const conds = (cur.status?.conditions ?? []).filter((c) => c.type !== 'PodScheduled');
    const bound: Pod = {
      ...cur,
      spec: { ...cur.spec, nodeName },
      status: {
        ...(cur.status ?? {}),
        conditions: [
          ...conds,
          { type: 'PodScheduled', status: 'True', lastTransitionTime: new Date().toISOString() },
        ],
      },
    };
    this.pods.set(key, bound);
    this.onPodChange(bound);
  }

  async deletePod(pod: Pod): Promise<void> {
    const key = MemoryClient.key(pod);
    const cur = this.pods.get(key);
    if (!cur) return;
    this.pods.delete(key);
    this.onPodDeleted(cur);
  }

  async updatePodStatus(
    pod: Pod,
    cond: { status: 'True' | 'False'; reason?: string; message?: string },
    nominatedNodeName?: string,
  ): Promise<void> {
    const key = MemoryClient.key(pod);
    const cur = this.pods.get(key);
    if (!cur) return;
    const conds = (cur.status?.conditions ?? []).filter((c) => c.type !== 'PodScheduled');
    const status = { ...(cur.status ?? {}) };
    if (cond.reason !== undefined || cond.message !== undefined) {
      status.conditions = [
        ...conds,
        { type: 'PodScheduled', status: cond.status, reason: cond.reason, message: cond.message },
      ];
    }
    if (nominatedNodeName !== undefined) {
      if (nominatedNodeName) status.nominatedNodeName = nominatedNodeName;
      else delete status.nominatedNodeName;
    }
    this.pods.set(key, { ...cur, status });
  }

  event(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.events.push({ pod: MemoryClient.key(pod), type, reason, message });
  }

  async updateObject(obj: KubeObject): Promise<void> {
    this.objects.set(`${obj.kind}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`, obj);
    this.onObjectChange(obj);
  }

  /** Events as Kubernetes Event objects would carry them (for printing). */
  asEvents(): Pick<Event, 'reason' | 'message' | 'type'>[] {
    return this.events.map((e) => ({ reason: e.reason, message: e.message, type: e.type }));
  }
}
