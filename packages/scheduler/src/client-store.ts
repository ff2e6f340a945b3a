// A SchedulerClient over a @kemu/core Store, plus the informer wiring that feeds a Scheduler from it.
import type { Store } from '@kemu/core';
import type { SchedulerClient } from './framework.js';
import type { Scheduler } from './scheduler.js';
import type { KubeObject, Pod } from './types.js';

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
 * List every watched kind, feed it to the scheduler, then follow watches from the listed version.
 * Kinds the store does not know are skipped. Returns a function that stops the watches.
 */
export async function connectStore(
  store: Store,
  sched: Scheduler,
): Promise<{ stop(): void; skipped: string[] }> {
  const watches: { stop(): void }[] = [];
  const skipped: string[] = [];
  const dispatch = (kind: string, type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject) => {
    if (kind === 'Node') {
      if (type === 'DELETED') sched.onNodeDelete(obj as never);
      else if (type === 'ADDED') sched.onNodeAdd(obj as never);
      else sched.onNodeUpdate(obj as never);
    } else if (kind === 'Pod') {
      if (type === 'DELETED') sched.onPodDelete(obj as Pod);
      else sched.onPodUpsert(obj as Pod);
    } else sched.onObject(obj, type === 'ADDED' ? 'Add' : type === 'DELETED' ? 'Delete' : 'Update');
  };
  const versions = new Map<string, string>();
  for (const kind of WATCHED_KINDS) {
    try {
      const list = await store.list(kind);
      for (const o of list.items) dispatch(kind, 'ADDED', o as KubeObject);
      versions.set(kind, list.metadata.resourceVersion ?? '0');
    } catch {
      skipped.push(kind);
    }
  }
  for (const [kind, rv] of versions) {
    const w = await store.watch(kind, { resourceVersion: rv });
    watches.push(w);
    void (async () => {
      try {
        for await (const ev of w) {
          if (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED')
            dispatch(kind, ev.type, ev.object as KubeObject);
        }
      } catch {
        // The watch ended (store closed).
      }
    })();
  }
  return {
    stop: () => {
      for (const w of watches) w.stop();
    },
    skipped,
  };
}
