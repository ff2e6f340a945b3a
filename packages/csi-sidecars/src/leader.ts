// Leader election for the controller sidecars, on a Lease named as upstream names it, so only one replica
// of a sidecar acts at a time; without it the sidecar simply runs.
import { LeaderElector, type Store } from '@kemu/core';
import os from 'node:os';

export interface LeaderElectionOptions {
  enabled: boolean;
  store: Store;
  /** Lease name (sanitised: "/" and "." become "-"). */
  leaseName: string;
  namespace?: string;
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

/** `my.driver/x` → `my-driver-x`: what a Lease name may hold. */
export function sanitizeLeaseName(name: string): string {
  return name
    .replace(/[/.]/g, '-')
    .replace(/[^a-zA-Z0-9-]/g, '-')
    .toLowerCase();
}

export interface RunHandle {
  /** Resolves when the work stopped (leadership lost or stop()). */
  done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Run `start` (and later `stop`) only while leading. Losing the lease stops the work; like upstream the
 * process should then exit and be restarted, which the `onLost` callback is for.
 */
export function runWithLeaderElection(
  opts: LeaderElectionOptions,
  work: { start(): Promise<void>; stop(): Promise<void> },
  onLost?: () => void,
): RunHandle {
  if (!opts.enabled) {
    const started = work.start();
    let stopped: () => void;
    const done = new Promise<void>((r) => {
      stopped = r;
    });
    return {
      done,
      async stop() {
        await started;
        await work.stop();
        stopped();
      },
    };
  }
  let stopping = false;
  const elector = new LeaderElector({
    store: opts.store,
    namespace: opts.namespace ?? 'default',
    name: sanitizeLeaseName(opts.leaseName),
    identity: opts.identity ?? `${os.hostname()}-${process.pid}`,
    leaseDurationMs: opts.leaseDurationMs ?? 15_000,
    renewDeadlineMs: opts.renewDeadlineMs ?? 10_000,
    retryPeriodMs: opts.retryPeriodMs ?? 5_000,
    callbacks: {
      onStartedLeading: async (signal) => {
        await work.start();
        await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
        await work.stop();
      },
      onStoppedLeading: () => {
        if (!stopping) onLost?.();
      },
    },
  });
  const done = elector.run();
  return {
    done,
    async stop() {
      stopping = true;
      elector.stop();
      await done;
    },
  };
}
