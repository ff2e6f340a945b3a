// A CronJob every minute with concurrencyPolicy Forbid on the composed cluster under a sped-up clock
// (`kemu up --clock-speed`): each scheduled minute creates one Job (named by its minute), whose pod the
// kubelet runs to completion, and no two of its Jobs ever run at once.
import type { CronJob, Job } from '@kemu/core';
import { Cluster } from 'kemu';
import { describe, expect, it } from 'vitest';
import { composedCluster } from '../cluster/composed-cluster.js';
import { until } from '../cluster/util.js';

describe('a CronJob under a sped-up cluster clock', () => {
  let cluster: Cluster;
  // One cluster minute per real second.
  composedCluster('kemu-e2e-cron-', { nodes: 2, fast: true, clockSpeed: 60 }, (c) => (cluster = c));

  it('creates one Job per minute with Forbid, each run to completion, never two at once', async () => {
    const created: Job[] = [];
    let running = 0;
    let maxRunning = 0;
    const w = await cluster.store.watch('Job', { namespace: 'default' });
    const done = new Set<string>();
    const watching = (async () => {
      for await (const ev of w) {
        if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED') continue;
        const j = ev.object as Job;
        if (ev.type === 'ADDED') {
          created.push(j);
          running++;
        }
        if (!done.has(j.metadata.name!) && j.status?.conditions?.some((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True')) {
          done.add(j.metadata.name!);
          running--;
        }
        maxRunning = Math.max(maxRunning, running);
      }
    })();
    await cluster.store.create({
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'tick', namespace: 'default' },
      spec: {
        schedule: '* * * * *',
        concurrencyPolicy: 'Forbid',
        successfulJobsHistoryLimit: 10,
        jobTemplate: { spec: { template: { spec: { restartPolicy: 'OnFailure', containers: [{ name: 'c', image: 'busybox:1.36', command: ['sh', '-c', 'echo tick'] }] } } } },
      },
    } as CronJob);
    await until('four completed jobs', async () => done.size >= 4, 60_000);
    w.stop();
    await watching;
    expect(maxRunning).toBe(1);
    // Each Job is named by its scheduled minute: consecutive minutes, none twice.
    const minutes = created.map((j) => Number(j.metadata.name!.slice('tick-'.length)));
    expect(new Set(minutes).size).toBe(minutes.length);
    expect(minutes.every((m, i) => i === 0 || m > minutes[i - 1])).toBe(true);
    for (const j of created) expect(j.metadata.annotations?.['batch.kubernetes.io/cronjob-scheduled-timestamp']).toBe(new Date(Number(j.metadata.name!.slice(5)) * 60_000).toISOString().slice(0, 19) + 'Z');
    const cj = await cluster.store.get('CronJob', 'default', 'tick');
    expect(cj.status?.lastSuccessfulTime).toBeDefined();
  }, 90_000);
});
