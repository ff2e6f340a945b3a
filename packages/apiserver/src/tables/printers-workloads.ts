// Printers of the workload kinds: Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision
// (apps/v1), Job and CronJob (batch/v1), ReplicationController and PodTemplate (v1).
import { age, humanDuration } from './human-duration.js';
import { containersAndImages, formatLabels, formatLabelSelector } from './format.js';
import { column, NAME_COLUMN, registerPrinter } from './table.js';

const AGE = column('Age', 'string', 'Time since the object was created.');
const CONTAINERS = column('Containers', 'string', 'Names of the containers in the template.', 1);
const IMAGES = column('Images', 'string', 'Images of the containers in the template.', 1);
const SELECTOR = column('Selector', 'string', 'Label selector of the pods.', 1);
const n = (v: unknown) => (typeof v === 'number' ? v : 0);
const replicas = (spec: { replicas?: number } | undefined) => (typeof spec?.replicas === 'number' ? spec.replicas : 1);

/** Register the printers of these kinds. */
export function registerWorkloadPrinters(): void {
  registerPrinter('apps/v1', 'Deployment', {
    columns: [
      NAME_COLUMN,
      column('Ready', 'string', 'Ready pods of the desired ones.'),
      column('Up-to-date', 'string', 'Pods running the latest template.'),
      column('Available', 'string', 'Pods available for at least minReadySeconds.'),
      AGE,
      CONTAINERS,
      IMAGES,
      SELECTOR,
    ],
    row(o, now) {
      const [c, i] = containersAndImages(o.spec?.template?.spec?.containers);
      const s = o.status ?? {};
      return [o.metadata.name ?? '', `${n(s.readyReplicas)}/${replicas(o.spec)}`, n(s.updatedReplicas), n(s.availableReplicas), age(o.metadata.creationTimestamp, now), c, i, formatLabelSelector(o.spec?.selector)];
    },
  });

  const replicaSetLike = (selector: (o: { spec?: { selector?: unknown } }) => string) => ({
    columns: [
      NAME_COLUMN,
      column('Desired', 'integer', 'Desired pods.'),
      column('Current', 'integer', 'Pods that exist.'),
      column('Ready', 'integer', 'Ready pods.'),
      AGE,
      CONTAINERS,
      IMAGES,
      SELECTOR,
    ],
    row(o: { metadata: { name?: string; creationTimestamp?: string }; spec?: any; status?: any }, now: number) {
      const [c, i] = containersAndImages(o.spec?.template?.spec?.containers);
      return [o.metadata.name ?? '', replicas(o.spec), n(o.status?.replicas), n(o.status?.readyReplicas), age(o.metadata.creationTimestamp, now), c, i, selector(o)];
    },
  });
  registerPrinter('apps/v1', 'ReplicaSet', replicaSetLike((o) => formatLabelSelector(o.spec?.selector as never)));
  registerPrinter('v1', 'ReplicationController', replicaSetLike((o) => formatLabels(o.spec?.selector as Record<string, string>)));

  registerPrinter('apps/v1', 'StatefulSet', {
    columns: [NAME_COLUMN, column('Ready', 'string', 'Ready pods of the desired ones.'), AGE, CONTAINERS, IMAGES],
    row(o, now) {
      const [c, i] = containersAndImages(o.spec?.template?.spec?.containers);
      return [o.metadata.name ?? '', `${n(o.status?.readyReplicas)}/${replicas(o.spec)}`, age(o.metadata.creationTimestamp, now), c, i];
    },
  });

  registerPrinter('apps/v1', 'DaemonSet', {
    columns: [
      NAME_COLUMN,
      column('Desired', 'integer', 'Nodes that should run the pod.'),
      column('Current', 'integer', 'Nodes running the pod.'),
      column('Ready', 'integer', 'Nodes with the pod ready.'),
      column('Up-to-date', 'integer', 'Nodes running the latest template.'),
      column('Available', 'integer', 'Nodes with the pod available.'),
      column('Node Selector', 'string', 'Labels a node needs to run the pod.'),
      AGE,
      CONTAINERS,
      IMAGES,
      SELECTOR,
    ],
    row(o, now) {
      const s = o.status ?? {};
      const [c, i] = containersAndImages(o.spec?.template?.spec?.containers);
      return [
        o.metadata.name ?? '',
        n(s.desiredNumberScheduled),
        n(s.currentNumberScheduled),
        n(s.numberReady),
        n(s.updatedNumberScheduled),
        n(s.numberAvailable),
        formatLabels(o.spec?.template?.spec?.nodeSelector),
        age(o.metadata.creationTimestamp, now),
        c,
        i,
        formatLabelSelector(o.spec?.selector),
      ];
    },
  });

  registerPrinter('apps/v1', 'ControllerRevision', {
    columns: [NAME_COLUMN, column('Controller', 'string', 'The object that owns the revision.'), column('Revision', 'string', 'Revision number.'), AGE],
    row(o, now) {
      const owner = o.metadata.ownerReferences?.find((r) => r.controller);
      const group = owner ? (owner.apiVersion.includes('/') ? owner.apiVersion.split('/')[0] : '') : '';
      const controller = owner ? `${owner.kind.toLowerCase()}${group ? `.${group}` : ''}/${owner.name}` : '<none>';
      return [o.metadata.name ?? '', controller, n(o.revision), age(o.metadata.creationTimestamp, now)];
    },
  });

  registerPrinter('batch/v1', 'Job', {
    columns: [
      NAME_COLUMN,
      column('Status', 'string', 'Status of the job.'),
      column('Completions', 'string', 'Succeeded pods of the completions wanted.'),
      column('Duration', 'string', 'How long the job ran, or has been running.'),
      AGE,
      CONTAINERS,
      IMAGES,
      SELECTOR,
    ],
    row(o, now) {
      const spec = o.spec ?? {};
      const s = o.status ?? {};
      const succeeded = n(s.succeeded);
      const parallelism = typeof spec.parallelism === 'number' ? spec.parallelism : 0;
      const completions =
        typeof spec.completions === 'number' ? `${succeeded}/${spec.completions}` : parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
      const start = s.startTime ? Date.parse(s.startTime) : undefined;
      const duration = start === undefined ? '' : humanDuration((s.completionTime ? Date.parse(s.completionTime) : now) - start);
      const has = (t: string) => (s.conditions ?? []).some((c: { type: string; status: string }) => c.type === t && c.status === 'True');
      const status = has('Complete')
        ? 'Complete'
        : has('Failed')
          ? 'Failed'
          : o.metadata.deletionTimestamp
            ? 'Terminating'
            : has('Suspended')
              ? 'Suspended'
              : has('FailureTarget')
                ? 'FailureTarget'
                : has('SuccessCriteriaMet')
                  ? 'SuccessCriteriaMet'
                  : 'Running';
      const [c, i] = containersAndImages(spec.template?.spec?.containers);
      return [o.metadata.name ?? '', status, completions, duration, age(o.metadata.creationTimestamp, now), c, i, formatLabelSelector(spec.selector)];
    },
  });

  registerPrinter('batch/v1', 'CronJob', {
    columns: [
      NAME_COLUMN,
      column('Schedule', 'string', 'Cron schedule of the jobs.'),
      column('Timezone', 'string', 'Time zone of the schedule.'),
      column('Suspend', 'boolean', 'Whether new jobs are held back.'),
      column('Active', 'integer', 'Jobs running now.'),
      column('Last Schedule', 'string', 'Time since a job was last scheduled.'),
      AGE,
      CONTAINERS,
      IMAGES,
      SELECTOR,
    ],
    row(o, now) {
      const spec = o.spec ?? {};
      const [c, i] = containersAndImages(spec.jobTemplate?.spec?.template?.spec?.containers);
      const last = o.status?.lastScheduleTime;
      return [
        o.metadata.name ?? '',
        spec.schedule ?? '',
        spec.timeZone ?? '<none>',
        spec.suspend ?? false,
        (o.status?.active ?? []).length,
        last ? age(last, now) : '<none>',
        age(o.metadata.creationTimestamp, now),
        c,
        i,
        formatLabelSelector(spec.jobTemplate?.spec?.selector),
      ];
    },
  });

  registerPrinter('v1', 'PodTemplate', {
    columns: [
      NAME_COLUMN,
      column('Containers', 'string', 'Names of the containers in the template.'),
      column('Images', 'string', 'Images of the containers in the template.'),
      column('Pod Labels', 'string', 'Labels of the pod template.'),
    ],
    row(o) {
      const [c, i] = containersAndImages(o.template?.spec?.containers);
      return [o.metadata.name ?? '', c, i, formatLabels(o.template?.metadata?.labels)];
    },
  });
}
