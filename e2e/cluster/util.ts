// Shared by the cluster tests: polling for a condition, and a minimal pod pinned to a node.
import type { Pod, Store } from '@kemu/core';
import { probe, type Requirement, requirePeers } from '@kemu/test-peers';
import { linuxUnsupportedReason } from 'kemu';

/** Polls `fn` every 100 ms until it returns something truthy; fails naming `what` after `timeoutMs`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A one-container pod bound to `nodeName`, whose command stops at once on SIGTERM (real or simulated). */
export function pinnedPod(name: string, nodeName: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: 'busybox:1.36', command: ['sh', '-c', "trap 'exit 0' TERM; sleep infinity & wait"] }],
    },
  };
}

/** Waits until pod `name` (namespace default) is Running with its container started, and returns it. */
export function runningPod(store: Store, name: string, timeoutMs?: number): Promise<Pod> {
  return until(
    `${name} Running`,
    async () => {
      const p = (await store.get('Pod', 'default', name)) as Pod;
      return p.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.state?.running && p;
    },
    timeoutMs,
  );
}

/**
 * Whether the linux-datapath variant of `suite` can run here (root, iproute2, util-linux, ping, and any
 * `extra` peers). Skips with the reason on a developer's machine; fails naming the package under CI.
 */
export function linuxDatapathAvailable(suite: string, extra: Requirement[] = []): boolean {
  const why = linuxUnsupportedReason();
  return requirePeers(suite, [probe('the linux datapath', why ?? '', () => why === undefined), ...extra]);
}
