// The TTL-after-finished controller: a finished Job with ttlSecondsAfterFinished is deleted (foreground,
// so its pods go first) that many seconds after it completed or failed.
import { Controller, isNotFound, type Job, type SharedInformer } from '@kemu/core';
import type { ControllerContext } from './controller-context.js';

const COMPONENT = 'ttl-after-finished-controller';

/** When a Job finished (completion time, else the transition time of its Complete/Failed condition). */
export function finishTime(j: Job): number | undefined {
  const c = j.status?.conditions?.find((x) => (x.type === 'Complete' || x.type === 'Failed') && x.status === 'True');
  if (!c) return undefined;
  const t = j.status?.completionTime ?? c.lastTransitionTime;
  return t ? Date.parse(t) : undefined;
}

export class TTLAfterFinishedController {
  readonly controller: Controller;
  private readonly jobs: SharedInformer<'Job'>;

  constructor(private readonly ctx: ControllerContext) {
    this.jobs = ctx.informers.informer('Job');
    this.controller = new Controller({
      name: COMPONENT,
      workers: 2,
      informers: [this.jobs],
      reconcile: (key) => this.sync(key),
      onError: (_k, e) => ctx.error(COMPONENT, e),
    });
    this.jobs.addEventHandler(this.controller.handler((j) => j.spec?.ttlSecondsAfterFinished !== undefined));
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private async sync(key: string) {
    const [ns, name] = key.split('/');
    const job = this.jobs.lister.get(ns, name) as Job | undefined;
    if (!job || job.metadata.deletionTimestamp || job.spec.ttlSecondsAfterFinished === undefined) return undefined;
    const done = finishTime(job);
    if (done === undefined) return undefined;
    const expireAt = done + job.spec.ttlSecondsAfterFinished * 1000;
    const now = this.ctx.clock.now().getTime();
    if (now < expireAt) return { requeueAfterMs: this.ctx.clock.realDelay(expireAt - now) + 5 };
    await this.ctx.store
      .delete('Job', ns, name, { propagationPolicy: 'Foreground', preconditions: { uid: job.metadata.uid, resourceVersion: job.metadata.resourceVersion } })
      .catch((e) => {
        if (!isNotFound(e) && e?.reason !== 'Conflict') throw e;
      });
    return undefined;
  }
}
