// The command-line wiring of `kemu rollout ...` and `kemu scale` (behaviour in rollout.ts).
import { type Command, InvalidArgumentError, type Option } from 'commander';
import { client, stdio } from './commands.js';
import { rolloutHistory, rolloutPause, rolloutRestart, rolloutStatus, rolloutUndo, scale } from './rollout.js';

/** `deployment/web`, `deployment web` or `deploy/web` into kind and name. */
function target(a: string, b?: string): { kind: string; name: string } {
  if (a.includes('/')) {
    const [kind, name] = a.split('/', 2);
    return { kind: kindWord(kind), name };
  }
  if (!b) throw new InvalidArgumentError('expected TYPE/NAME or TYPE NAME');
  return { kind: kindWord(a), name: b };
}

const SHORT: Record<string, string> = {
  deploy: 'Deployment',
  deployment: 'Deployment',
  deployments: 'Deployment',
  sts: 'StatefulSet',
  statefulset: 'StatefulSet',
  statefulsets: 'StatefulSet',
  ds: 'DaemonSet',
  daemonset: 'DaemonSet',
  daemonsets: 'DaemonSet',
  rs: 'ReplicaSet',
  replicaset: 'ReplicaSet',
  replicasets: 'ReplicaSet',
  rc: 'ReplicationController',
  replicationcontroller: 'ReplicationController',
  replicationcontrollers: 'ReplicationController',
};

function kindWord(w: string): string {
  const k = SHORT[w.toLowerCase().split('.')[0]];
  if (!k) throw new InvalidArgumentError(`the server doesn't have a resource type "${w}"`);
  return k;
}

function count(name: string) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a whole number`);
    return n;
  };
}

export function registerRolloutCommands(program: Command, nsOpt: () => Option, stateDirOpt: () => Option): void {
  const rollout = program.command('rollout').description('manage the rollout of a deployment, statefulset or daemonset');
  rollout
    .command('status')
    .description('watch the rollout until it completes')
    .argument('<type/name>')
    .argument('[name]')
    .option('-w, --watch <bool>', 'watch until done', 'true')
    .option('--timeout <seconds>', 'give up after this long (0: never)', count('--timeout'), 0)
    .addOption(nsOpt())
    .addOption(stateDirOpt())
    .action(async (a, b, o) => {
      const t = target(a, b);
      await rolloutStatus(client(o.stateDir), t.kind, o.namespace, t.name, { watch: o.watch !== 'false', timeoutMs: o.timeout * 1000 }, stdio.log);
    });
  rollout
    .command('history')
    .description('list the revisions of a rollout')
    .argument('<type/name>')
    .argument('[name]')
    .option('--revision <n>', 'show one revision in detail', count('--revision'))
    .addOption(nsOpt())
    .addOption(stateDirOpt())
    .action(async (a, b, o) => {
      const t = target(a, b);
      await rolloutHistory(client(o.stateDir), t.kind, o.namespace, t.name, o.revision, stdio.log);
    });
  rollout
    .command('undo')
    .description('roll back to the previous (or a given) revision')
    .argument('<type/name>')
    .argument('[name]')
    .option('--to-revision <n>', 'the revision to roll back to (default: the previous one)', count('--to-revision'))
    .addOption(nsOpt())
    .addOption(stateDirOpt())
    .action(async (a, b, o) => {
      const t = target(a, b);
      stdio.log(await rolloutUndo(client(o.stateDir), t.kind, o.namespace, t.name, o.toRevision));
    });
  for (const [verb, what] of [
    ['restart', 'restart every pod through a new rollout'],
    ['pause', 'stop rolling out template changes'],
    ['resume', 'roll out template changes again'],
  ] as const) {
    rollout
      .command(verb)
      .description(what)
      .argument('<type/name>')
      .argument('[name]')
      .addOption(nsOpt())
      .addOption(stateDirOpt())
      .action(async (a, b, o) => {
        const t = target(a, b);
        const api = client(o.stateDir);
        stdio.log(verb === 'restart' ? await rolloutRestart(api, t.kind, o.namespace, t.name) : await rolloutPause(api, t.kind, o.namespace, t.name, verb === 'pause'));
      });
  }
  program
    .command('scale')
    .description('set the replica count of a deployment, replicaset, replicationcontroller or statefulset')
    .argument('<type/name>')
    .argument('[name]')
    .requiredOption('--replicas <n>', 'the new replica count', count('--replicas'))
    .option('--current-replicas <n>', 'only scale if the count is this now', count('--current-replicas'))
    .addOption(nsOpt())
    .addOption(stateDirOpt())
    .action(async (a, b, o) => {
      const t = target(a, b);
      stdio.log(await scale(client(o.stateDir), t.kind, o.namespace, t.name, o.replicas, o.currentReplicas));
    });
}
