// The horizontal pod autoscaler: every sync period it reads the pods of the scale target, asks a metrics
// source for their usage, and sets the target's replicas with upstream's arithmetic — per metric
// ceil(ready pods × usage / target) outside a 10% tolerance, the largest over all metrics, within
// min/maxReplicas, growth limited to max(100%, 4 pods) per 15 s, and scale-down to the highest
// recommendation of the last 5 minutes. Status carries currentMetrics and the AbleToScale, ScalingActive
// and ScalingLimited conditions with upstream's reasons. Metrics come from a pluggable source (the
// resource metrics API's role); without one, ScalingActive is False.
import {
  Controller,
  type Condition,
  deepCopy,
  type HorizontalPodAutoscaler,
  isNotFound,
  type KubeObject,
  type Pod,
  parseQuantity,
  rfc3339,
  selectorFromLabelSelector,
  type SharedInformer,
} from '@kemu/core';
import type { ControllerContext } from './controller-context.js';
import { NAMESPACE_INDEX, withOwnerIndexes } from './indexes.js';
import { isPodReady } from './pod-util.js';

const COMPONENT = 'horizontal-pod-autoscaler';
const TOLERANCE = 0.1;
const SYNC_PERIOD_MS = 15_000;
const DOWNSCALE_WINDOW_MS = 300_000;

/** Usage of one pod: CPU in millicores, memory in bytes (what metrics.k8s.io PodMetrics report). */
export interface PodUsage {
  cpuMillis?: number;
  memoryBytes?: number;
}

/** Where usage comes from (metrics-server's role): pods without an entry have no metrics yet. */
export interface MetricsSource {
  podUsage(namespace: string, pods: Pod[]): Promise<Map<string, PodUsage>>;
}

export interface HPAControllerOptions {
  metrics?: MetricsSource;
  syncPeriodMs?: number;
}

function requestOf(p: Pod, res: 'cpu' | 'memory'): number | undefined {
  let total = 0;
  for (const c of p.spec.containers ?? []) {
    const r = c.resources?.requests?.[res];
    if (r === undefined) return undefined;
    total += res === 'cpu' ? parseQuantity(r).milliValue() : parseQuantity(r).value();
  }
  return total;
}

export class HPAController {
  readonly controller: Controller;
  private readonly hpas: SharedInformer<'HorizontalPodAutoscaler'>;
  private readonly pods: SharedInformer<'Pod'>;
  private readonly recommendations = new Map<string, { at: number; replicas: number }[]>();
  private readonly syncMs: number;

  constructor(
    private readonly ctx: ControllerContext,
    private readonly opts: HPAControllerOptions = {},
  ) {
    this.syncMs = opts.syncPeriodMs ?? SYNC_PERIOD_MS;
    this.hpas = ctx.informers.informer('HorizontalPodAutoscaler');
    this.pods = withOwnerIndexes(ctx.informers.informer('Pod'));
    this.controller = new Controller({
      name: COMPONENT,
      workers: 2,
      informers: [this.hpas, this.pods],
      reconcile: (key) => this.sync(key),
      onError: (_k, e) => ctx.error(COMPONENT, e),
    });
    this.hpas.addEventHandler({ onAdd: (h) => this.controller.enqueue(h), onUpdate: (a, b) => a.metadata.generation !== b.metadata.generation && this.controller.enqueue(b) });
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private async sync(key: string) {
    const [ns, name] = key.split('/');
    const cached = this.hpas.lister.get(ns, name) as HorizontalPodAutoscaler | undefined;
    if (!cached || cached.metadata.deletionTimestamp) {
      this.recommendations.delete(key);
      return undefined;
    }
    const hpa = deepCopy(cached);
    const now = this.ctx.clock.now();
    const stamp = rfc3339(now);
    const ref = hpa.spec.scaleTargetRef;
    let target: KubeObject;
    try {
      target = await this.ctx.store.get(ref.kind, ns, ref.name);
    } catch (e) {
      await this.writeStatus(hpa, cached, { able: ['False', 'FailedGetScale', `the HPA controller was unable to get the target's current scale: ${(e as Error).message}`] }, stamp);
      return { requeueAfterMs: this.ctx.clock.realDelay(this.syncMs) };
    }
    const current = target.spec?.replicas ?? 1;
    const sel = selectorFromLabelSelector(target.spec?.selector);
    const pods = (this.pods.indexer.byIndex(NAMESPACE_INDEX, ns) as Pod[]).filter((p) => sel.matches(p.metadata.labels) && !p.metadata.deletionTimestamp && p.status?.phase !== 'Failed' && p.status?.phase !== 'Succeeded');
    const ready = pods.filter(isPodReady);
    const usage = this.opts.metrics ? await this.opts.metrics.podUsage(ns, ready) : new Map<string, PodUsage>();
    let desired = 0;
    const currentMetrics: unknown[] = [];
    let failure: string | undefined;
    for (const m of hpa.spec.metrics ?? []) {
      if (m.type !== 'Resource' || !m.resource || (m.resource.name !== 'cpu' && m.resource.name !== 'memory')) continue;
      const res = m.resource.name as 'cpu' | 'memory';
      const withMetrics = ready.filter((p) => usage.get(p.metadata.name!)?.[res === 'cpu' ? 'cpuMillis' : 'memoryBytes'] !== undefined);
      if (!withMetrics.length) {
        failure = `unable to get metrics for resource ${res}: no metrics returned from resource metrics API`;
        continue;
      }
      const used = withMetrics.reduce((n, p) => n + (usage.get(p.metadata.name!)![res === 'cpu' ? 'cpuMillis' : 'memoryBytes'] ?? 0), 0);
      const t = m.resource.target;
      let ratio: number;
      if (t.type === 'Utilization') {
        const requested = withMetrics.reduce((n, p) => n + (requestOf(p, res) ?? NaN), 0);
        if (!Number.isFinite(requested) || requested === 0) {
          failure = `failed to get ${res} utilization: missing request for ${res}`;
          continue;
        }
        const utilization = Math.round((used * 100) / requested);
        ratio = utilization / (t.averageUtilization ?? 80);
        currentMetrics.push({ type: 'Resource', resource: { name: res, current: { averageUtilization: utilization, averageValue: res === 'cpu' ? `${Math.round(used / withMetrics.length)}m` : String(Math.round(used / withMetrics.length)) } } });
      } else {
        const perPod = used / withMetrics.length;
        const want = res === 'cpu' ? parseQuantity(t.averageValue ?? '0').milliValue() : parseQuantity(t.averageValue ?? '0').value();
        ratio = want ? perPod / want : 1;
        currentMetrics.push({ type: 'Resource', resource: { name: res, current: { averageValue: res === 'cpu' ? `${Math.round(perPod)}m` : String(Math.round(perPod)) } } });
      }
      const proposal = Math.abs(ratio - 1) <= TOLERANCE ? current : Math.ceil(ratio * withMetrics.length);
      desired = Math.max(desired, proposal);
    }
    if (failure && desired === 0) {
      await this.writeStatus(hpa, cached, { able: ['True', 'SucceededGetScale', 'the HPA controller was able to get the target\'s current scale'], active: ['False', 'FailedGetResourceMetric', `the HPA was unable to compute the replica count: ${failure}`] }, stamp, current, currentMetrics);
      this.ctx.event(COMPONENT, hpa, 'Warning', 'FailedGetResourceMetric', failure);
      return { requeueAfterMs: this.ctx.clock.realDelay(this.syncMs) };
    }
    // Stabilize scale-down: the highest recommendation of the window wins.
    const recs = (this.recommendations.get(key) ?? []).filter((r) => now.getTime() - r.at < DOWNSCALE_WINDOW_MS);
    recs.push({ at: now.getTime(), replicas: desired });
    this.recommendations.set(key, recs);
    let next = desired;
    let ableReason = 'ReadyForNewScale';
    if (desired < current) {
      next = Math.max(...recs.map((r) => r.replicas));
      if (next > desired) ableReason = 'ScaleDownStabilized';
      next = Math.min(next, current);
    } else if (desired > current) {
      next = Math.min(desired, Math.max(current * 2, current + 4));
      if (next < desired) ableReason = 'ScaleUpLimited';
    }
    const min = hpa.spec.minReplicas ?? 1;
    const max = hpa.spec.maxReplicas;
    let limited: [string, string, string] = ['False', 'DesiredWithinRange', 'the desired count is within the acceptable range'];
    if (next > max) {
      next = max;
      limited = ['True', 'TooManyReplicas', 'the desired replica count is more than the maximum replica count'];
    } else if (next < min) {
      next = min;
      limited = ['True', 'TooFewReplicas', 'the desired replica count is less than the minimum replica count'];
    }
    if (next !== current) {
      await this.ctx.store.patch(ref.kind, ns, ref.name, { spec: { replicas: next } }, 'merge');
      const what = (hpa.spec.metrics ?? []).map((m) => `${m.resource?.name} resource${m.resource?.target.type === 'Utilization' ? ' utilization (percentage of request)' : ''}`).join(', ');
      this.ctx.event(COMPONENT, hpa, 'Normal', 'SuccessfulRescale', `New size: ${next}; reason: ${what} ${next > current ? 'above' : 'below'} target`);
      hpa.status = { ...(hpa.status ?? { desiredReplicas: next }), lastScaleTime: stamp };
    }
    const ableMsg = ableReason === 'ReadyForNewScale' ? 'recommended size matches current size' : ableReason === 'ScaleDownStabilized' ? 'recent recommendations were higher than current one, applying the highest recent recommendation' : 'the desired replica count is increasing faster than the maximum scale rate';
    await this.writeStatus(hpa, cached, { able: ['True', ableReason, ableMsg], active: ['True', 'ValidMetricFound', 'the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)'], limited }, stamp, current, currentMetrics, next);
    return { requeueAfterMs: this.ctx.clock.realDelay(this.syncMs) };
  }

  private async writeStatus(
    hpa: HorizontalPodAutoscaler,
    cached: HorizontalPodAutoscaler,
    c: { able?: [string, string, string]; active?: [string, string, string]; limited?: [string, string, string] },
    stamp: string,
    current?: number,
    currentMetrics?: unknown[],
    desired?: number,
  ): Promise<void> {
    const prev = cached.status?.conditions ?? [];
    const cond = (type: string, v: [string, string, string] | undefined): Condition[] => {
      if (!v) return [];
      const old = prev.find((x) => x.type === type);
      return [{ type, status: v[0] as Condition['status'], reason: v[1], message: v[2], lastTransitionTime: old?.status === v[0] ? (old.lastTransitionTime ?? stamp) : stamp }];
    };
    const st: HorizontalPodAutoscaler['status'] = {
      observedGeneration: hpa.metadata.generation,
      ...(hpa.status?.lastScaleTime ? { lastScaleTime: hpa.status.lastScaleTime } : {}),
      currentReplicas: current ?? cached.status?.currentReplicas ?? 0,
      desiredReplicas: desired ?? current ?? cached.status?.desiredReplicas ?? 0,
      ...(currentMetrics?.length ? { currentMetrics } : {}),
      conditions: [...cond('AbleToScale', c.able), ...cond('ScalingActive', c.active), ...cond('ScalingLimited', c.limited)],
    };
    if (JSON.stringify(cached.status ?? {}) === JSON.stringify(st)) return;
    const next = deepCopy(cached);
    next.status = st;
    await this.ctx.store.updateStatus(next).catch((e) => {
      if (!isNotFound(e)) throw e;
    });
  }
}
