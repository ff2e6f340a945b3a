// The CronJob controller: creates a Job (`<cronjob>-<scheduled minutes since the epoch>`) for the most
// recent schedule time it has not started, in the CronJob's time zone and on the cluster clock; honours
// concurrencyPolicy (Allow, Forbid, Replace), startingDeadlineSeconds and suspend; keeps status.active,
// lastScheduleTime and lastSuccessfulTime; and deletes finished Jobs beyond the history limits.
import {
  Controller,
  type CronJob,
  deepCopy,
  isAlreadyExists,
  isNotFound,
  type Job,
  parseSchedule,
  rfc3339,
  type Schedule,
  type SharedInformer,
} from '@kemu/core';
import type { ControllerContext } from './controller-context.js';
import { CONTROLLER_UID_INDEX, withOwnerIndexes } from './indexes.js';
import { controllerRef } from './pod-util.js';

const COMPONENT = 'cronjob-controller';
export const SCHEDULED_TIMESTAMP_ANNOTATION = 'batch.kubernetes.io/cronjob-scheduled-timestamp';
const MAX_MISSED = 100;

function jobFinished(j: Job): 'Complete' | 'Failed' | undefined {
  const c = j.status?.conditions?.find((x) => (x.type === 'Complete' || x.type === 'Failed') && x.status === 'True');
  return c?.type as 'Complete' | 'Failed' | undefined;
}

/** The latest schedule time in (earliest, now], the count of times missed, and the next time after now. */
export function mostRecentScheduleTime(schedule: Schedule, earliest: Date, now: Date): { latest?: Date; missed: number; next: Date } {
  let latest: Date | undefined;
  let missed = 0;
  let t = schedule.next(earliest);
  while (t.getTime() <= now.getTime()) {
    latest = t;
    missed++;
    if (missed > 100_000) break;
    t = schedule.next(t);
  }
  return { latest, missed, next: t };
}

export class CronJobController {
  readonly controller: Controller;
  private readonly cronjobs: SharedInformer<'CronJob'>;
  private readonly jobs: SharedInformer<'Job'>;

  constructor(private readonly ctx: ControllerContext) {
    this.cronjobs = withOwnerIndexes(ctx.informers.informer('CronJob'));
    this.jobs = withOwnerIndexes(ctx.informers.informer('Job'));
    this.controller = new Controller({
      name: COMPONENT,
      workers: 5,
      informers: [this.cronjobs, this.jobs],
      reconcile: (key) => this.sync(key),
      onError: (_k, e) => ctx.error(COMPONENT, e),
    });
    this.cronjobs.addEventHandler(this.controller.handler());
    const owner = (j: Job) => {
      const ref = j.metadata.ownerReferences?.find((r) => r.controller && r.kind === 'CronJob');
      if (ref) this.controller.enqueue(`${j.metadata.namespace}/${ref.name}`);
    };
    this.jobs.addEventHandler({ onAdd: owner, onUpdate: (_a, b) => owner(b), onDelete: owner });
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private async sync(key: string) {
    const [ns, name] = key.split('/');
    const cached = this.cronjobs.lister.get(ns, name) as CronJob | undefined;
    if (!cached || cached.metadata.deletionTimestamp) return undefined;
    const cj = deepCopy(cached);
    const now = this.ctx.clock.now();
    const jobs = this.jobs.indexer.byIndex(CONTROLLER_UID_INDEX, cj.metadata.uid!) as Job[];
    const st = (cj.status ??= {});
    // Active list: running owned jobs.
    const running = jobs.filter((j) => !jobFinished(j) && !j.metadata.deletionTimestamp);
    st.active = running
      .map((j) => ({ kind: 'Job', namespace: j.metadata.namespace, name: j.metadata.name, uid: j.metadata.uid, apiVersion: 'batch/v1', resourceVersion: j.metadata.resourceVersion }))
      .sort((a, b) => (a.name ?? '').localeCompare(b.name ?? ''));
    if (!st.active.length) delete st.active;
    for (const j of jobs) {
      if (jobFinished(j) === 'Complete') {
        const t = j.status?.completionTime;
        if (t && (!st.lastSuccessfulTime || t > st.lastSuccessfulTime)) st.lastSuccessfulTime = t;
      }
    }
    await this.cleanupHistory(cj, jobs);

    let requeueMs: number | undefined;
    if (!cj.spec.suspend) {
      let schedule: Schedule;
      try {
        schedule = parseSchedule(cj.spec.schedule, cj.spec.timeZone);
      } catch (e) {
        this.ctx.event(COMPONENT, cj, 'Warning', 'UnparseableSchedule', `unparseable schedule: ${JSON.stringify(cj.spec.schedule)} : ${(e as Error).message}`);
        return undefined;
      }
      // The API server stamps creation in real time; schedules run on the cluster clock.
      let earliest = st.lastScheduleTime
        ? new Date(Date.parse(st.lastScheduleTime))
        : cj.metadata.creationTimestamp
          ? this.ctx.clock.fromReal(new Date(Date.parse(cj.metadata.creationTimestamp)))
          : now;
      const deadline = cj.spec.startingDeadlineSeconds;
      if (deadline !== undefined) {
        const lim = now.getTime() - deadline * 1000;
        if (lim > earliest.getTime()) earliest = new Date(lim);
      }
      const { latest, missed, next } = mostRecentScheduleTime(schedule, earliest, now);
      if (missed > MAX_MISSED) {
        this.ctx.event(COMPONENT, cj, 'Warning', 'TooManyMissedTimes', 'too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew');
      }
      requeueMs = this.ctx.clock.realDelay(Math.max(0, next.getTime() - now.getTime())) + 5;
      if (latest) await this.startJob(cj, latest, running);
    }
    if (JSON.stringify(cached.status ?? {}) !== JSON.stringify(st)) {
      await this.ctx.store.updateStatus(cj).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
    return requeueMs !== undefined ? { requeueAfterMs: requeueMs } : undefined;
  }

  private async startJob(cj: CronJob, scheduled: Date, running: Job[]): Promise<void> {
    const st = cj.status!;
    const policy = cj.spec.concurrencyPolicy ?? 'Allow';
    if (policy === 'Forbid' && running.length) {
      // Skipped: this time counts as missed (not recorded), the next one is tried later.
      return;
    }
    if (policy === 'Replace') {
      for (const j of running) {
        await this.ctx.store.delete('Job', j.metadata.namespace, j.metadata.name!, { propagationPolicy: 'Background' }).catch((e) => {
          if (!isNotFound(e)) throw e;
        });
        this.ctx.event(COMPONENT, cj, 'Normal', 'SuccessfulDelete', `Deleted job ${j.metadata.name}`);
      }
      delete st.active;
    }
    const t = cj.spec.jobTemplate;
    const name = `${cj.metadata.name}-${Math.floor(scheduled.getTime() / 60000)}`;
    const job: Job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name,
        namespace: cj.metadata.namespace,
        labels: { ...(t.metadata?.labels ?? {}) },
        annotations: { ...(t.metadata?.annotations ?? {}), [SCHEDULED_TIMESTAMP_ANNOTATION]: rfc3339(scheduled) },
        ownerReferences: [controllerRef(cj)],
      },
      spec: deepCopy(t.spec),
    };
    try {
      const created = await this.ctx.store.create(job);
      this.ctx.event(COMPONENT, cj, 'Normal', 'SuccessfulCreate', `Created job ${created.metadata.name}`);
      (st.active ??= []).push({ kind: 'Job', namespace: created.metadata.namespace, name, uid: created.metadata.uid, apiVersion: 'batch/v1', resourceVersion: created.metadata.resourceVersion });
    } catch (e) {
      if (!isAlreadyExists(e)) {
        this.ctx.event(COMPONENT, cj, 'Warning', 'FailedCreate', `Error creating job: ${(e as Error)?.message ?? e}`);
        throw e;
      }
    }
    st.lastScheduleTime = rfc3339(scheduled);
  }

  private async cleanupHistory(cj: CronJob, jobs: Job[]): Promise<void> {
    const byStart = (a: Job, b: Job) => (a.status?.startTime ?? a.metadata.creationTimestamp ?? '').localeCompare(b.status?.startTime ?? b.metadata.creationTimestamp ?? '');
    for (const [kind, limit] of [
      ['Complete', cj.spec.successfulJobsHistoryLimit ?? 3],
      ['Failed', cj.spec.failedJobsHistoryLimit ?? 1],
    ] as const) {
      const done = jobs.filter((j) => jobFinished(j) === kind && !j.metadata.deletionTimestamp).sort(byStart);
      for (const j of done.slice(0, Math.max(0, done.length - limit))) {
        await this.ctx.store.delete('Job', j.metadata.namespace, j.metadata.name!, { propagationPolicy: 'Background' }).catch((e) => {
          if (!isNotFound(e)) throw e;
        });
        this.ctx.event(COMPONENT, cj, 'Normal', 'SuccessfulDelete', `Deleted job ${j.metadata.name}`);
      }
    }
  }
}
