// What every controller is given: the store, the shared informers, an event recorder per component and
// the cluster clock. One context is shared by all controllers a manager runs, as kube-controller-manager's
// ControllerContext shares its informer factory.
import { InformerFactory, type KubeObject, type Store } from '@kemu/core';
import { EventRecorder } from '@kemu/core/controllers';
import { type Clock, realClock } from './clock.js';

export interface ControllerContextOptions {
  store: Store;
  informers?: InformerFactory;
  clock?: Clock;
  /** Informer resync period (default 0: never, as the workload controllers do not need it). */
  resyncPeriodMs?: number;
  /** Do not write Events (tests that only look at objects). */
  disableEvents?: boolean;
  onError?(controller: string, err: unknown): void;
}

export class ControllerContext {
  readonly store: Store;
  readonly informers: InformerFactory;
  readonly clock: Clock;
  private readonly recorders = new Map<string, EventRecorder>();

  constructor(readonly options: ControllerContextOptions) {
    this.store = options.store;
    this.informers = options.informers ?? new InformerFactory(options.store, { resyncPeriodMs: options.resyncPeriodMs ?? 0 });
    this.clock = options.clock ?? realClock;
  }

  /** The recorder for a component (`deployment-controller`, ...). */
  recorder(component: string): EventRecorder {
    let r = this.recorders.get(component);
    if (!r) {
      r = new EventRecorder(this.store, { component, disableStore: this.options.disableEvents });
      this.recorders.set(component, r);
    }
    return r;
  }

  event(component: string, obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.recorder(component).event(obj, type, reason, message);
  }

  error(controller: string, err: unknown): void {
    this.options.onError?.(controller, err);
  }
}
