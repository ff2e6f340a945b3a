// Helpers shared by the controller tests (not exported from the package): waiting, and a stand-in for
// kubelets that moves pods through their phases so controllers see the transitions they react to.
import { deepCopy, isConflict, isNotFound, type Pod, rfc3339, type Store } from '@kemu/core';

export async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface FakeKubeletOptions {
  /** Pods that should stay Pending (not started). */
  hold?(pod: Pod): boolean;
  /** Pods that fail (run-to-completion pods end Failed with this exit code). */
  fail?(pod: Pod): number | undefined;
  /** Milliseconds before a pod turns ready. */
  readyAfterMs?: number;
}

/**
 * Run pods: each new pod becomes Running and Ready with an IP; pods of run-to-completion templates
 * (restartPolicy Never/OnFailure) then end Succeeded (or Failed). Returns a stop function.
 */
export async function fakeKubelet(store: Store, opts: FakeKubeletOptions = {}): Promise<() => void> {
  const w = await store.watch('Pod');
  let ip = 1;
  const handled = new Set<string>();
  const run = async (pod: Pod) => {
    if (opts.readyAfterMs) await new Promise((r) => setTimeout(r, opts.readyAfterMs));
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const cur = await store.get('Pod', pod.metadata.namespace, pod.metadata.name!);
        if (cur.metadata.uid !== pod.metadata.uid || cur.metadata.deletionTimestamp) return;
        const now = rfc3339();
        const next = deepCopy(cur);
        const n = ip++;
        const addr = `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
        const runToCompletion = cur.spec.restartPolicy !== 'Always';
        const code = opts.fail?.(cur);
        next.status = {
          ...next.status,
          phase: runToCompletion ? (code ? 'Failed' : 'Succeeded') : 'Running',
          podIP: addr,
          podIPs: [{ ip: addr }],
          startTime: now,
          conditions: [
            { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
            { type: 'Ready', status: runToCompletion ? 'False' : 'True', lastTransitionTime: now },
          ],
          containerStatuses: cur.spec.containers.map((c) => ({
            name: c.name,
            image: c.image ?? '',
            imageID: '',
            ready: !runToCompletion,
            restartCount: 0,
            state: runToCompletion ? { terminated: { exitCode: code ?? 0, reason: code ? 'Error' : 'Completed' } } : { running: { startedAt: now } },
          })),
        } as Pod['status'];
        await store.updateStatus(next);
        return;
      } catch (e) {
        if (isNotFound(e)) return;
        if (!isConflict(e)) throw e;
      }
    }
  };
  void (async () => {
    for await (const ev of w) {
      if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED') continue;
      const pod = ev.object as Pod;
      if (handled.has(pod.metadata.uid!) || pod.metadata.deletionTimestamp) continue;
      if (opts.hold?.(pod)) continue;
      handled.add(pod.metadata.uid!);
      void run(pod).catch(() => undefined);
    }
  })();
  return () => w.stop();
}
