// The Job controller: runs pods until `completions` succeed (NonIndexed) or every index 0..completions-1
// has succeeded (Indexed: completion index annotation, label, JOB_COMPLETION_INDEX env and hostname),
// at most `parallelism` at a time; retries failures with exponential backoff (10 s doubling to 6 min) up to
// backoffLimit (or per index with backoffLimitPerIndex); applies podFailurePolicy, activeDeadlineSeconds
// and suspend; and counts finished pods through the `batch.kubernetes.io/job-tracking` finalizer, so a pod
// deleted after it finished is still counted exactly once; an Indexed Job's successPolicy may declare it
// successful early (the remaining pods are then deleted). Conditions: SuccessCriteriaMet, Complete,
// FailureTarget, Failed, Suspended, with upstream's reasons.
import {
  Controller,
  type Condition,
  deepCopy,
  isConflict,
  isNotFound,
  type Job,
  type Pod,
  rfc3339,
  type SharedInformer,
} from '@kemu/core';
import type { ControllerContext } from './controller-context.js';
import { Expectations } from './expectations.js';
import { CONTROLLER_UID_INDEX, withOwnerIndexes } from './indexes.js';
import { formatIndexes, parseIndexes } from './job-indexes.js';
import { matchSuccessPolicy } from './job-success-policy.js';
import { isPodReady, isPodTerminal, podFromTemplate, podNamePrefix } from './pod-util.js';

const COMPONENT = 'job-controller';
export const JOB_TRACKING_FINALIZER = 'batch.kubernetes.io/job-tracking';
export const COMPLETION_INDEX_ANNOTATION = 'batch.kubernetes.io/job-completion-index';
export const INDEX_FAILURE_COUNT_ANNOTATION = 'batch.kubernetes.io/job-index-failure-count';
export const JOB_INDEX_ENV = 'JOB_COMPLETION_INDEX';

export interface JobControllerOptions {
  workers?: number;
  /** First retry delay after a failed pod (default 10 s) and its cap (default 6 min), as upstream. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

function condition(type: string, reason: string, message: string, now: string): Condition {
  return { type, status: 'True', reason, message, lastProbeTime: now, lastTransitionTime: now };
}

const finished = (job: Job) => job.status?.conditions?.some((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True') ?? false;

function podIndex(p: Pod): number | undefined {
  const v = p.metadata.annotations?.[COMPLETION_INDEX_ANNOTATION];
  return v === undefined || !/^\d+$/.test(v) ? undefined : Number(v);
}

/** The exit code rule of a podFailurePolicy, as upstream matches it. */
function matchPolicy(job: Job, pod: Pod): 'FailJob' | 'FailIndex' | 'Ignore' | 'Count' | undefined {
  for (const rule of job.spec.podFailurePolicy?.rules ?? []) {
    if (rule.onExitCodes) {
      const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
      const hit = statuses.some((cs) => {
        if (rule.onExitCodes!.containerName && cs.name !== rule.onExitCodes!.containerName) return false;
        const code = cs.state?.terminated?.exitCode;
        if (code === undefined || code === 0) return false;
        const inSet = rule.onExitCodes!.values.includes(code);
        return rule.onExitCodes!.operator === 'In' ? inSet : !inSet;
      });
      if (hit) return rule.action;
    }
    for (const pc of rule.onPodConditions ?? []) {
      if (pod.status?.conditions?.some((c) => c.type === pc.type && c.status === (pc.status ?? 'True'))) return rule.action;
    }
  }
  return undefined;
}

export class JobController {
  readonly controller: Controller;
  private readonly jobs: SharedInformer<'Job'>;
  private readonly pods: SharedInformer<'Pod'>;
  private readonly backoffBase: number;
  private readonly backoffMax: number;
  readonly expectations = new Expectations();

  constructor(
    private readonly ctx: ControllerContext,
    opts: JobControllerOptions = {},
  ) {
    this.backoffBase = opts.backoffBaseMs ?? 10_000;
    this.backoffMax = opts.backoffMaxMs ?? 360_000;
    this.jobs = withOwnerIndexes(ctx.informers.informer('Job'));
    this.pods = withOwnerIndexes(ctx.informers.informer('Pod'));
    this.controller = new Controller({
      name: COMPONENT,
      workers: opts.workers ?? 5,
      informers: [this.jobs, this.pods],
      reconcile: (key) => this.sync(key),
      onError: (_k, e) => ctx.error(COMPONENT, e),
    });
    this.jobs.addEventHandler(this.controller.handler());
    const owner = (p: Pod) => {
      const ref = p.metadata.ownerReferences?.find((r) => r.controller && r.kind === 'Job');
      return ref ? `${p.metadata.namespace}/${ref.name}` : undefined;
    };
    this.pods.addEventHandler({
      onAdd: (p) => {
        const k = owner(p);
        if (k) {
          this.expectations.creationObserved(k);
          this.controller.enqueue(k);
        }
      },
      onUpdate: (_a, b) => {
        const k = owner(b);
        if (k) this.controller.enqueue(k);
      },
      onDelete: (p) => {
        const k = owner(p);
        if (k) this.controller.enqueue(k);
      },
    });
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private podsOf(job: Job): Pod[] {
    return this.pods.indexer.byIndex(CONTROLLER_UID_INDEX, job.metadata.uid!) as Pod[];
  }

  private async removeFinalizer(p: Pod): Promise<void> {
    if (!p.metadata.finalizers?.includes(JOB_TRACKING_FINALIZER)) return;
    const finalizers = p.metadata.finalizers.filter((f) => f !== JOB_TRACKING_FINALIZER);
    await this.ctx.store
      .patch('Pod', p.metadata.namespace, p.metadata.name!, { metadata: { finalizers: finalizers.length ? finalizers : null, uid: p.metadata.uid } }, 'merge')
      .catch((e) => {
        if (!isNotFound(e) && !isConflict(e)) throw e;
      });
  }

  private async sync(key: string) {
    const [ns, name] = key.split('/');
    const cached = this.jobs.lister.get(ns, name) as Job | undefined;
    if (!cached) {
      this.expectations.delete(key);
      return undefined;
    }
    const job = deepCopy(cached);
    const pods = this.podsOf(job);
    const now = this.ctx.clock.now();
    const stamp = rfc3339(now);
    const st = (job.status ??= {});
    if (finished(job) || job.metadata.deletionTimestamp) {
      // Finished: only release the remaining finalizers.
      await Promise.all(pods.map((p) => this.removeFinalizer(p)));
      return undefined;
    }
    const indexed = job.spec.completionMode === 'Indexed';
    const completions = job.spec.completions;
    const parallelism = job.spec.parallelism ?? 1;
    const suspended = job.spec.suspend === true;

    // 1. Count pods that finished (finalizer still on them) exactly once, then release them.
    const uncounted = { succeeded: new Set(st.uncountedTerminatedPods?.succeeded ?? []), failed: new Set(st.uncountedTerminatedPods?.failed ?? []) };
    let succeeded = st.succeeded ?? 0;
    let failed = st.failed ?? 0;
    const completed = parseIndexes(st.completedIndexes);
    const failedIndexes = parseIndexes(st.failedIndexes);
    let failJob: { reason: string; message: string } | undefined;
    const newlyDone: Pod[] = [];
    for (const p of pods) {
      if (!p.metadata.finalizers?.includes(JOB_TRACKING_FINALIZER)) continue;
      // Finished, or deleted before it finished (then it counts as failed).
      if (!isPodTerminal(p) && !p.metadata.deletionTimestamp) continue;
      if (uncounted.succeeded.has(p.metadata.uid!) || uncounted.failed.has(p.metadata.uid!)) {
        newlyDone.push(p);
        continue;
      }
      if (p.status?.phase === 'Succeeded') {
        const idx = podIndex(p);
        if (!indexed || (idx !== undefined && idx < (completions ?? 0) && !completed.has(idx))) {
          succeeded++;
          if (indexed) completed.add(idx!);
        }
      } else {
        const action = matchPolicy(job, p);
        if (action === 'Ignore') {
          // Not counted towards backoffLimit.
        } else {
          failed++;
          if (action === 'FailJob') failJob ??= { reason: 'PodFailurePolicy', message: `Container of pod ${p.metadata.name} failed with an exit code matching a FailJob rule` };
          if (indexed && job.spec.backoffLimitPerIndex !== undefined) {
            const idx = podIndex(p);
            const count = Number(p.metadata.annotations?.[INDEX_FAILURE_COUNT_ANNOTATION] ?? '0') + 1;
            if (idx !== undefined && (action === 'FailIndex' || count > job.spec.backoffLimitPerIndex)) failedIndexes.add(idx);
          }
        }
      }
      newlyDone.push(p);
    }
    await Promise.all(newlyDone.map((p) => this.removeFinalizer(p)));
    st.succeeded = succeeded;
    st.failed = failed;
    if (indexed) {
      st.completedIndexes = formatIndexes(completed);
      if (job.spec.backoffLimitPerIndex !== undefined) st.failedIndexes = formatIndexes(failedIndexes);
    }
    delete st.uncountedTerminatedPods;

    const active = pods.filter((p) => !isPodTerminal(p) && !p.metadata.deletionTimestamp);
    st.ready = active.filter(isPodReady).length;
    const conds = (st.conditions ??= []);
    const setCond = (c: Condition) => {
      const i = conds.findIndex((x) => x.type === c.type);
      if (i >= 0) conds[i] = conds[i].status === c.status && conds[i].reason === c.reason ? conds[i] : c;
      else conds.push(c);
    };
    if (!suspended) st.startTime ??= stamp;

    // 2. Decide whether the job is done.
    const backoffLimit = job.spec.backoffLimit ?? 6;
    const done = indexed ? completed.size >= (completions ?? 0) : completions !== undefined ? succeeded >= completions : succeeded > 0 && active.length === 0;
    const deadline = job.spec.activeDeadlineSeconds;
    const pastDeadline = deadline !== undefined && st.startTime && Date.parse(st.startTime) + deadline * 1000 <= now.getTime() && !suspended;
    if (!failJob && failed > backoffLimit) failJob = { reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' };
    if (!failJob && pastDeadline) failJob = { reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' };
    if (!failJob && indexed && job.spec.maxFailedIndexes !== undefined && failedIndexes.size > job.spec.maxFailedIndexes) {
      failJob = { reason: 'MaxFailedIndexesExceeded', message: 'Job has exceeded the specified maximal number of failed indexes' };
    }
    if (!failJob && !done && indexed && failedIndexes.size > 0 && completed.size + failedIndexes.size >= (completions ?? 0)) {
      failJob = { reason: 'FailedIndexes', message: 'Job has failed indexes' };
    }
    // A successPolicy rule met counts before the completions do: the rest of the indexes need not run.
    const policyMet = !failJob && indexed ? matchSuccessPolicy(job.spec.successPolicy, completions ?? 0, completed) : undefined;
    const success = policyMet ? { reason: 'SuccessPolicy', message: policyMet } : done ? { reason: 'CompletionsReached', message: 'Reached expected number of succeeded pods' } : undefined;

    let requeueMs: number | undefined;
    if (failJob) {
      await this.deleteAll(active);
      setCond(condition('FailureTarget', failJob.reason, failJob.message, stamp));
      setCond(condition('Failed', failJob.reason, failJob.message, stamp));
      st.active = 0;
      this.ctx.event(COMPONENT, job, 'Warning', failJob.reason, failJob.message);
    } else if (success) {
      await this.deleteAll(active);
      setCond(condition('SuccessCriteriaMet', success.reason, success.message, stamp));
      setCond(condition('Complete', success.reason, success.message, stamp));
      st.completionTime = stamp;
      st.active = 0;
      this.ctx.event(COMPONENT, job, 'Normal', 'Completed', 'Job completed');
    } else if (suspended) {
      await this.deleteAll(active);
      st.active = 0;
      setCond({ type: 'Suspended', status: 'True', reason: 'JobSuspended', message: 'Job suspended', lastProbeTime: stamp, lastTransitionTime: stamp });
      delete st.startTime;
    } else {
      const susp = conds.find((c) => c.type === 'Suspended');
      if (susp?.status === 'True') setCond({ type: 'Suspended', status: 'False', reason: 'JobResumed', message: 'Job resumed', lastProbeTime: stamp, lastTransitionTime: stamp });
      // 3. Run more pods, after the backoff of the last failure.
      const delay = failed > 0 ? Math.min(this.backoffMax, this.backoffBase * 2 ** Math.max(0, failed - 1)) : 0;
      const lastFail = pods
        .filter((p) => p.status?.phase === 'Failed')
        .reduce((t, p) => Math.max(t, Date.parse(p.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime ?? '') || Date.parse(p.metadata.creationTimestamp ?? '') || 0), 0);
      const waitMs = lastFail ? lastFail + delay - now.getTime() : 0;
      if (waitMs > 0 && active.length === 0) {
        requeueMs = this.ctx.clock.realDelay(waitMs) + 5;
      } else if (this.expectations.satisfied(key)) {
        const want = indexed ? parallelism : completions === undefined ? parallelism : Math.min(parallelism, completions - succeeded);
        const missing = Math.max(0, want - active.length);
        if (indexed) {
          const running = new Set(active.map(podIndex));
          const todo: number[] = [];
          for (let i = 0; i < (completions ?? 0) && todo.length < missing; i++) {
            if (!completed.has(i) && !running.has(i) && !failedIndexes.has(i)) todo.push(i);
          }
          await this.createPods(key, job, todo);
        } else {
          await this.createPods(key, job, Array.from({ length: missing }, () => undefined));
        }
      }
      st.active = active.length;
      if (deadline !== undefined && st.startTime) {
        const left = Date.parse(st.startTime) + deadline * 1000 - now.getTime();
        requeueMs = Math.min(requeueMs ?? Infinity, this.ctx.clock.realDelay(Math.max(0, left)) + 5);
      }
    }
    if (JSON.stringify(cached.status ?? {}) !== JSON.stringify(st)) {
      await this.ctx.store.updateStatus(job).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
    return requeueMs !== undefined && Number.isFinite(requeueMs) ? { requeueAfterMs: requeueMs } : undefined;
  }

  /** Delete pods the job no longer wants (done, failed, suspended): released first, so they are not counted. */
  private async deleteAll(active: Pod[]): Promise<void> {
    await Promise.all(
      active.map(async (p) => {
        await this.removeFinalizer(p);
        await this.ctx.store.delete('Pod', p.metadata.namespace, p.metadata.name!, { preconditions: { uid: p.metadata.uid } }).catch((e) => {
          if (!isNotFound(e)) throw e;
        });
      }),
    );
  }

  private async createPods(key: string, job: Job, indexes: (number | undefined)[]): Promise<void> {
    if (!indexes.length) return;
    this.expectations.expect(key, indexes.length, 0);
    await Promise.all(
        indexes.map(async (idx) => {
          const prefix = idx === undefined ? podNamePrefix(job.metadata.name!) : podNamePrefix(`${job.metadata.name}-${idx}`);
          const pod = podFromTemplate(job.spec.template, job, prefix);
          pod.metadata.finalizers = [...(pod.metadata.finalizers ?? []), JOB_TRACKING_FINALIZER];
          if (idx !== undefined) {
            pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), [COMPLETION_INDEX_ANNOTATION]: String(idx) };
            pod.metadata.labels = { ...(pod.metadata.labels ?? {}), [COMPLETION_INDEX_ANNOTATION]: String(idx) };
            pod.spec.hostname = `${job.metadata.name}-${idx}`;
            for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
              c.env = [...(c.env ?? []).filter((e) => e.name !== JOB_INDEX_ENV), { name: JOB_INDEX_ENV, valueFrom: { fieldRef: { fieldPath: `metadata.annotations['${COMPLETION_INDEX_ANNOTATION}']` } } }];
            }
            const failures = this.podsOf(job).filter((p) => podIndex(p) === idx && p.status?.phase === 'Failed').length;
            if (failures) pod.metadata.annotations[INDEX_FAILURE_COUNT_ANNOTATION] = String(failures);
          }
          try {
            const created = await this.ctx.store.create(pod);
            this.ctx.event(COMPONENT, job, 'Normal', 'SuccessfulCreate', `Created pod: ${created.metadata.name}`);
          } catch (e) {
            this.expectations.lower(key, 1, 0);
            this.ctx.event(COMPONENT, job, 'Warning', 'FailedCreate', `Error creating: ${(e as Error)?.message ?? e}`);
            throw e;
          }
        }),
    );
  }
}
