// A SchedulerClient over a @kemu/core Store, plus the informer wiring that feeds a Scheduler from it.
import { InformerFactory, lookupKind, type Store } from '@kemu/core';
import type { SchedulerClient } from './framework.js';
import type { Scheduler } from './scheduler.js';
import type { KubeObject, Node, Pod } from './types.js';

export const SCHEDULER_COMPONENT = 'default-scheduler';

function rand(): string {
  return Math.random().toString(16).slice(2, 10);
}

export class StoreClient implements SchedulerClient {
  constructor(
    private readonly store: Store,
    private readonly component = SCHEDULER_COMPONENT,
  ) {}

  async bind(pod: Pod, nodeName: string): Promise<void> {
    await this.store.bind({
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: {
        name: pod.metadata.name,
        namespace: pod.metadata.namespace ?? 'default',
        uid: pod.metadata.uid,
      },
      target: { kind: 'Node', apiVersion: 'v1', name: nodeName },
    });
  }

  async deletePod(pod: Pod): Promise<void> {
    try {
      await this.store.delete('Pod', pod.metadata.namespace ?? 'default', pod.metadata.name ?? '');
    } catch (err) {
      if ((err as { reason?: string }).reason !== 'NotFound') throw err;
    }
  }

  async updatePodStatus(
    pod: Pod,
    cond: { status: 'True' | 'False'; reason?: string; message?: string },
    nominatedNodeName?: string,
  ): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      let cur: Pod;
      try {
        cur = (await this.store.get(
          'Pod',
          pod.metadata.namespace ?? 'default',
          pod.metadata.name ?? '',
        )) as Pod;
      } catch {
        return; // gone
      }
      if (cur.spec.nodeName && cond.status === 'False') return; // bound meanwhile
      const status = { ...(cur.status ?? {}) };
      if (cond.reason !== undefined) {
        const prev = (status.conditions ?? []).find((c) => c.type === 'PodScheduled');
        const changed = !prev || prev.status !== cond.status;
        status.conditions = [
          ...(status.conditions ?? []).filter((c) => c.type !== 'PodScheduled'),
          {
            type: 'PodScheduled',
            status: cond.status,
            reason: cond.reason,
            message: cond.message,
            lastProbeTime: undefined,
            lastTransitionTime: changed
              ? new Date().toISOString().replace(/\.\d+Z$/, 'Z')
              : prev?.lastTransitionTime,
          },
        ];
      }
      if (nominatedNodeName !== undefined) {
        if (nominatedNodeName) status.nominatedNodeName = nominatedNodeName;
        else delete status.nominatedNodeName;
      }
      try {
        await this.store.updateStatus({ ...cur, status });
        return;
      } catch (err) {
        if ((err as { reason?: string }).reason !== 'Conflict') throw err;
      }
    }
  }

  event(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const now = new Date().toISOString();
    const ns = pod.metadata.namespace ?? 'default';
    void this.store
      .create({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${pod.metadata.name}.${rand()}`, namespace: ns },
        involvedObject: {
          kind: 'Pod',
          apiVersion: 'v1',
          namespace: ns,
          name: pod.metadata.name,
          uid: pod.metadata.uid,
        },
        reason,
        message,
        type,
        source: { component: this.component },
        reportingComponent: this.component,
        reportingInstance: this.component,
        action: 'Scheduling',
        firstTimestamp: now.replace(/\.\d+Z$/, 'Z'),
        lastTimestamp: now.replace(/\.\d+Z$/, 'Z'),
        count: 1,
      })
      .catch(() => {
        // Events are best effort, as in the reference recorder.
      });
  }

  async updateObject(obj: KubeObject): Promise<void> {
    await this.store.update(obj);
  }
}

/** Kinds the scheduler watches, in the order they are first listed (nodes before pods). */
export const WATCHED_KINDS = [
  'PriorityClass',
  'Namespace',
  'StorageClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'CSINode',
  'CSIStorageCapacity',
  'PodDisruptionBudget',
  'Node',
  'Pod',
];

/**
 * Feed the scheduler from shared informers over the store (list, then watch; relist after a 410; back
 * off on errors). Resolves once every informer has listed. Kinds the store does not register (for
 * example CSIStorageCapacity on a minimal store) are skipped and reported.
 */
export async function connectStore(
  store: Store,
  sched: Scheduler,
  factory: InformerFactory = new InformerFactory(store),
): Promise<{ stop(): Promise<void>; skipped: string[] }> {
  const skipped: string[] = [];
  for (const kind of WATCHED_KINDS) {
    if (!lookupKind(kind)) {
      skipped.push(kind);
      continue;
    }
    const inf = factory.informer(kind);
    if (kind === 'Node') {
      inf.addEventHandler({
        onAdd: (o) => sched.onNodeAdd(o as Node),
        onUpdate: (_old, o) => sched.onNodeUpdate(o as Node),
        onDelete: (o) => sched.onNodeDelete(o as Node),
      });
    } else if (kind === 'Pod') {
      inf.addEventHandler({
        onAdd: (o) => sched.onPodUpsert(o as Pod),
        onUpdate: (old, o) => {
          // Resyncs deliver the same object; nothing changed for the scheduler.
          if (old !== o) sched.onPodUpsert(o as Pod);
        },
        onDelete: (o) => sched.onPodDelete(o as Pod),
      });
    } else {
      inf.addEventHandler({
        onAdd: (o) => sched.onObject(o, 'Add'),
        onUpdate: (old, o) => {
          if (old !== o) sched.onObject(o, 'Update');
        },
        onDelete: (o) => sched.onObject(o, 'Delete'),
      });
    }
  }
  factory.start();
  await factory.waitForCacheSync();
  return { stop: () => factory.stop(), skipped };
}
