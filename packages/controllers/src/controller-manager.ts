// The controller manager: runs the named controllers on one shared informer factory, switched on and off
// by name as kube-controller-manager's `--controllers=*,-job`, under leader election on the
// `kube-system/kube-controller-manager` Lease so only one manager of a cluster acts at a time.
import { hostname } from 'node:os';
import { InformerFactory, LeaderElector, type Store } from '@kemu/core';
import type { Clock } from './clock.js';
import { ControllerContext } from './controller-context.js';
import { CronJobController } from './cronjob-controller.js';
import { DaemonSetController } from './daemonset-controller.js';
import { DeploymentController } from './deployment-controller.js';
import { DisruptionController } from './disruption-controller.js';
import { EndpointSliceController } from './endpointslice-controller.js';
import { HPAController, type MetricsSource } from './hpa-controller.js';
import { JobController, type JobControllerOptions } from './job-controller.js';
import { ReplicaSetController } from './replica-set-controller.js';
import { ResourceQuotaController } from './resource-quota-controller.js';
import { ServiceAccountController } from './service-account-controller.js';
import { StatefulSetController } from './statefulset-controller.js';
import { storeByKind } from './store-by-kind.js';
import { TTLAfterFinishedController } from './ttl-after-finished-controller.js';

interface Runnable {
  start(): Promise<void>;
  stop(): Promise<void>;
}

type Factory = (ctx: ControllerContext, opts: ControllerManagerOptions) => Runnable;

/** Controllers by kube-controller-manager's names. */
const CONTROLLERS: Record<string, Factory> = {
  daemonset: (ctx) => new DaemonSetController(ctx),
  deployment: (ctx) => new DeploymentController(ctx),
  disruption: (ctx) => new DisruptionController(ctx),
  replicaset: (ctx) => new ReplicaSetController(ctx, { kind: 'ReplicaSet' }),
  replicationcontroller: (ctx) => new ReplicaSetController(ctx, { kind: 'ReplicationController' }),
  endpointslice: (ctx, o) => new EndpointSliceController(ctx, { endpoints: enabledIn(o, 'endpoint') }),
  resourcequota: (ctx) => new ResourceQuotaController(ctx),
  serviceaccount: (ctx) => new ServiceAccountController(ctx),
  statefulset: (ctx) => new StatefulSetController(ctx),
  horizontalpodautoscaling: (ctx, o) => new HPAController(ctx, { metrics: o.metrics, syncPeriodMs: o.hpaSyncPeriodMs }),
  job: (ctx, o) => new JobController(ctx, o.job),
  cronjob: (ctx) => new CronJobController(ctx),
  'ttl-after-finished': (ctx) => new TTLAfterFinishedController(ctx),
};

/**
 * The ServiceAccount (in kube-system) each controller runs as under --use-service-account-credentials, as
 * kube-controller-manager names them; its role is `system:controller:<name>`.
 */
export const CONTROLLER_SERVICE_ACCOUNTS: Record<string, string> = {
  daemonset: 'daemon-set-controller',
  deployment: 'deployment-controller',
  disruption: 'disruption-controller',
  replicaset: 'replicaset-controller',
  replicationcontroller: 'replication-controller',
  endpointslice: 'endpointslice-controller',
  resourcequota: 'resourcequota-controller',
  serviceaccount: 'service-account-controller',
  statefulset: 'statefulset-controller',
  horizontalpodautoscaling: 'horizontal-pod-autoscaler',
  job: 'job-controller',
  cronjob: 'cronjob-controller',
  'ttl-after-finished': 'ttl-after-finished-controller',
};

/** Names accepted by `--controllers` (`endpoint` is the legacy Endpoints half of `endpointslice`). */
export const CONTROLLER_NAMES: readonly string[] = [...Object.keys(CONTROLLERS), 'endpoint'].sort();

export interface ControllerManagerOptions {
  store: Store;
  /** `*` (all), names, and `-name` to disable, as `--controllers` (default `*`). */
  controllers?: string | string[];
  clock?: Clock;
  informers?: InformerFactory;
  /** Run under leader election (default true). */
  leaderElect?: boolean;
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  disableEvents?: boolean;
  job?: JobControllerOptions;
  /** Pod usage for the horizontal pod autoscaler (the resource metrics API's role). */
  metrics?: MetricsSource;
  /** How often each autoscaler is evaluated (default 15 s, as --horizontal-pod-autoscaler-sync-period). */
  hpaSyncPeriodMs?: number;
  onError?(controller: string, err: unknown): void;
  /**
   * The store each controller writes through, by its ServiceAccount name (CONTROLLER_SERVICE_ACCOUNTS), as
   * --use-service-account-credentials gives each controller a client of its own; the shared informers and
   * leader election keep using `store` (the manager's own identity). Default: `store` for all.
   */
  storeFor?(serviceAccount: string): Store;
}

/** The set of enabled controller names; throws on an unknown name, as kube-controller-manager refuses to start. */
export function enabledControllers(spec: string | string[] = '*'): Set<string> {
  const items = (Array.isArray(spec) ? spec : spec.split(',')).map((s) => s.trim()).filter(Boolean);
  const on = new Set<string>();
  let all = false;
  const off = new Set<string>();
  for (const it of items) {
    if (it === '*') all = true;
    else if (it.startsWith('-')) off.add(it.slice(1));
    else on.add(it);
  }
  for (const n of [...on, ...off]) {
    if (!CONTROLLER_NAMES.includes(n)) throw new Error(`"${n}" is not in the list of known controllers: ${CONTROLLER_NAMES.join(', ')}`);
  }
  const out = new Set<string>();
  for (const n of CONTROLLER_NAMES) if ((all || on.has(n)) && !off.has(n)) out.add(n);
  return out;
}

function enabledIn(o: ControllerManagerOptions, name: string): boolean {
  return enabledControllers(o.controllers ?? '*').has(name);
}

export class ControllerManager {
  readonly enabled: Set<string>;
  readonly context: ControllerContext;
  private running: Runnable[] = [];
  private elector: LeaderElector | undefined;
  private electing: Promise<void> | undefined;

  constructor(readonly options: ControllerManagerOptions) {
    this.enabled = enabledControllers(options.controllers ?? '*');
    this.context = new ControllerContext({
      store: options.store,
      informers: options.informers ?? new InformerFactory(options.store),
      clock: options.clock,
      disableEvents: options.disableEvents,
      onError: options.onError,
    });
  }

  /** Start (as leader, or at once without leader election). Resolves once controllers run or election began. */
  async start(): Promise<void> {
    if (this.options.leaderElect === false) {
      await this.startControllers();
      return;
    }
    this.elector = new LeaderElector({
      store: this.options.store,
      name: 'kube-controller-manager',
      identity: this.options.identity ?? `${hostname()}_${process.pid}_${Math.random().toString(16).slice(2, 10)}`,
      leaseDurationMs: this.options.leaseDurationMs,
      renewDeadlineMs: this.options.renewDeadlineMs,
      retryPeriodMs: this.options.retryPeriodMs,
      callbacks: {
        onStartedLeading: () => this.startControllers(),
        onStoppedLeading: () => void this.stopControllers(),
      },
    });
    this.electing = this.elector.run();
  }

  get leading(): boolean {
    return this.elector ? this.elector.isLeader() : this.running.length > 0;
  }

  private async startControllers(): Promise<void> {
    const list: Runnable[] = [];
    for (const name of this.enabled) {
      const f = CONTROLLERS[name];
      if (f) list.push(f(this.contextFor(name), this.options));
    }
    this.running = list;
    this.context.informers.start();
    await Promise.all(list.map((c) => c.start()));
  }

  /** The shared context, or one writing through the controller's own store when `storeFor` is given. */
  private contextFor(name: string): ControllerContext {
    const sa = CONTROLLER_SERVICE_ACCOUNTS[name];
    if (!this.options.storeFor || !sa) return this.context;
    let store = this.options.storeFor(sa);
    // Endpoints are upstream's endpoint controller's work, under its own account.
    if (name === 'endpointslice') store = storeByKind(store, { Endpoints: this.options.storeFor('endpoint-controller') });
    return new ControllerContext({ ...this.context.options, store, informers: this.context.informers });
  }

  private async stopControllers(): Promise<void> {
    const list = this.running;
    this.running = [];
    await Promise.all(list.map((c) => c.stop()));
  }

  async stop(): Promise<void> {
    this.elector?.stop();
    await this.electing?.catch(() => undefined);
    await this.stopControllers();
    await this.context.informers.stop();
  }
}
