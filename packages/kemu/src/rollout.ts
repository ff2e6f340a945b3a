// `kemu rollout status|history|undo|restart|pause|resume` and `kemu scale`, as kubectl does them: status
// reads the Deployment's status counters and conditions, history lists the revisions of its ReplicaSets,
// undo copies a revision's pod template back, restart stamps the template with restartedAt, pause and
// resume flip spec.paused, scale sets spec.replicas.
import { type ControllerRevision, type Deployment, type KubeObject, kindInfo, type ReplicaSet, rfc3339 } from '@kemu/core';
import type { ApiClient } from './api-client.js';
import { UsageError } from './commands.js';

export class RolloutError extends UsageError {}

const REVISION = 'deployment.kubernetes.io/revision';
const CHANGE_CAUSE = 'kubernetes.io/change-cause';
const HASH = 'pod-template-hash';
const RESTARTED_AT = 'kubectl.kubernetes.io/restartedAt';

type Api = Pick<ApiClient, 'get' | 'list' | 'patch' | 'update'>;

/** `deployment.apps/web`, as kubectl names objects in its messages. */
export function resourceName(kind: string, name: string): string {
  const info = kindInfo(kind);
  return `${info.kind.toLowerCase()}${info.group ? `.${info.group}` : ''}/${name}`;
}

function rolloutKind(kind: string): 'Deployment' | 'StatefulSet' | 'DaemonSet' {
  const k = kindInfo(kind).kind;
  if (k !== 'Deployment' && k !== 'StatefulSet' && k !== 'DaemonSet') throw new RolloutError(`no rollout for kind "${k}": use a deployment, statefulset or daemonset`);
  return k;
}

/** One status line, and whether the rollout is done (kubectl's DeploymentStatusViewer). */
export function deploymentStatus(d: Deployment): { message: string; done: boolean } {
  const name = d.metadata.name;
  const st = d.status ?? {};
  if ((d.metadata.generation ?? 0) > (st.observedGeneration ?? 0)) return { message: 'Waiting for deployment spec update to be observed...', done: false };
  const prog = st.conditions?.find((c) => c.type === 'Progressing');
  if (prog?.reason === 'ProgressDeadlineExceeded') throw new RolloutError(`deployment "${name}" exceeded its progress deadline`);
  const replicas = d.spec.replicas ?? 1;
  const updated = st.updatedReplicas ?? 0;
  if (updated < replicas) return { message: `Waiting for deployment "${name}" rollout to finish: ${updated} out of ${replicas} new replicas have been updated...`, done: false };
  if ((st.replicas ?? 0) > updated) return { message: `Waiting for deployment "${name}" rollout to finish: ${(st.replicas ?? 0) - updated} old replicas are pending termination...`, done: false };
  if ((st.availableReplicas ?? 0) < updated) return { message: `Waiting for deployment "${name}" rollout to finish: ${st.availableReplicas ?? 0} of ${updated} updated replicas are available...`, done: false };
  return { message: `deployment "${name}" successfully rolled out`, done: true };
}

function genericStatus(o: KubeObject): { message: string; done: boolean } {
  const name = o.metadata.name;
  const st = o.status ?? {};
  if ((o.metadata.generation ?? 0) > (st.observedGeneration ?? 0)) return { message: `Waiting for ${o.kind.toLowerCase()} spec update to be observed...`, done: false };
  if (o.kind === 'DaemonSet') {
    if ((st.updatedNumberScheduled ?? 0) < st.desiredNumberScheduled) {
      return { message: `Waiting for daemon set "${name}" rollout to finish: ${st.updatedNumberScheduled ?? 0} out of ${st.desiredNumberScheduled} new pods have been updated...`, done: false };
    }
    if ((st.numberAvailable ?? 0) < st.desiredNumberScheduled) {
      return { message: `Waiting for daemon set "${name}" rollout to finish: ${st.numberAvailable ?? 0} of ${st.desiredNumberScheduled} updated pods are available...`, done: false };
    }
    return { message: `daemon set "${name}" successfully rolled out`, done: true };
  }
  const replicas = o.spec?.replicas ?? 1;
  if ((st.readyReplicas ?? 0) < replicas) return { message: `Waiting for ${replicas - (st.readyReplicas ?? 0)} pods to be ready...`, done: false };
  if (st.updateRevision && st.currentRevision !== st.updateRevision) {
    return { message: `Waiting for partitioned roll out to finish: ${st.updatedReplicas ?? 0} out of ${replicas} new pods have been updated...`, done: false };
  }
  return { message: `statefulset rolling update complete ${replicas} pods at revision ${st.updateRevision ?? st.currentRevision}...`, done: true };
}

/** `rollout status`: print each new status line until the rollout is done (or just once without watch). */
export async function rolloutStatus(api: Api, kind: string, ns: string, name: string, o: { watch?: boolean; timeoutMs?: number; pollMs?: number }, log: (l: string) => void): Promise<void> {
  const k = rolloutKind(kind);
  const end = o.timeoutMs ? Date.now() + o.timeoutMs : Infinity;
  let last = '';
  for (;;) {
    const obj = await api.get(k, ns, name);
    const s = k === 'Deployment' ? deploymentStatus(obj as Deployment) : genericStatus(obj);
    if (s.message !== last) log(s.message);
    last = s.message;
    if (s.done || o.watch === false) return;
    if (Date.now() > end) throw new RolloutError('timed out waiting for the condition');
    await new Promise((r) => setTimeout(r, o.pollMs ?? 200));
  }
}

async function replicaSetsOf(api: Api, d: Deployment): Promise<ReplicaSet[]> {
  const list = await api.list<ReplicaSet>('ReplicaSet', { namespace: d.metadata.namespace });
  return list.items
    .filter((rs) => rs.metadata.ownerReferences?.some((r) => r.controller && r.uid === d.metadata.uid))
    .sort((a, b) => Number(a.metadata.annotations?.[REVISION] ?? 0) - Number(b.metadata.annotations?.[REVISION] ?? 0));
}

/** `rollout history`: the revisions and their change causes. */
export async function rolloutHistory(api: Api, kind: string, ns: string, name: string, revision: number | undefined, log: (l: string) => void): Promise<void> {
  const k = rolloutKind(kind);
  if (k !== 'Deployment') {
    // StatefulSets (and DaemonSets) keep their history as ControllerRevisions.
    const owner = await api.get(k, ns, name);
    const revs = (await api.list<ControllerRevision>('ControllerRevision', { namespace: ns })).items
      .filter((r) => r.metadata.ownerReferences?.some((o) => o.controller && o.uid === owner.metadata.uid))
      .sort((a, b) => a.revision - b.revision);
    if (revision !== undefined && !revs.some((r) => r.revision === revision)) throw new RolloutError('unable to find the specified revision');
    log(resourceName(k, name));
    const rows = [['REVISION', 'CHANGE-CAUSE'], ...revs.filter((r) => revision === undefined || r.revision === revision).map((r) => [String(r.revision), r.metadata.annotations?.[CHANGE_CAUSE] ?? '<none>'])];
    const w = Math.max(...rows.map((r) => r[0].length)) + 2;
    for (const r of rows) log(`${r[0].padEnd(w)}${r[1]}`);
    log('');
    return;
  }
  const d = (await api.get(k, ns, name)) as Deployment;
  const sets = await replicaSetsOf(api, d);
  if (revision !== undefined) {
    const rs = sets.find((s) => Number(s.metadata.annotations?.[REVISION]) === revision);
    if (!rs) throw new RolloutError(`unable to find the specified revision`);
    log(`${resourceName(k, name)} with revision #${revision}`);
    log('Pod Template:');
    log(`  Labels:\t${Object.entries(rs.spec.template?.metadata?.labels ?? {}).map(([a, b]) => `${a}=${b}`).join('\n\t')}`);
    for (const c of rs.spec.template?.spec.containers ?? []) {
      log(`  Containers:\n   ${c.name}:\n    Image:\t${c.image}`);
    }
    return;
  }
  log(resourceName(k, name));
  const rows = [['REVISION', 'CHANGE-CAUSE'], ...sets.map((s) => [s.metadata.annotations?.[REVISION] ?? '0', s.metadata.annotations?.[CHANGE_CAUSE] ?? '<none>'])];
  const w = Math.max(...rows.map((r) => r[0].length)) + 2;
  for (const r of rows) log(`${r[0].padEnd(w)}${r[1]}`);
  log('');
}

/** `rollout undo [--to-revision N]`: put the pod template of a previous revision back. */
export async function rolloutUndo(api: Api, kind: string, ns: string, name: string, toRevision: number | undefined): Promise<string> {
  const k = rolloutKind(kind);
  if (k !== 'Deployment') throw new RolloutError('rollout undo is supported for deployments here');
  const d = (await api.get(k, ns, name)) as Deployment;
  if (d.spec.paused) throw new RolloutError(`you cannot rollback a paused deployment; resume it first with 'kemu rollout resume ${resourceName(k, name)}' and try again`);
  const sets = await replicaSetsOf(api, d);
  const current = Number(d.metadata.annotations?.[REVISION] ?? 0);
  let target: ReplicaSet | undefined;
  if (toRevision === undefined || toRevision === 0) {
    target = [...sets].reverse().find((s) => Number(s.metadata.annotations?.[REVISION] ?? 0) < current);
    if (!target) throw new RolloutError('no rollout history found for deployment "' + name + '"');
  } else {
    target = sets.find((s) => Number(s.metadata.annotations?.[REVISION]) === toRevision);
    if (!target) throw new RolloutError(`unable to find specified revision ${toRevision} in history`);
  }
  const tpl = structuredClone(target.spec.template!);
  if (tpl.metadata?.labels) delete tpl.metadata.labels[HASH];
  const rev = target.metadata.annotations?.[REVISION];
  if (JSON.stringify(tpl) === JSON.stringify(d.spec.template)) return `${resourceName(k, name)} skipped rollback (current template already matches revision ${rev})`;
  d.spec.template = tpl;
  await api.update(d);
  return `${resourceName(k, name)} rolled back`;
}

export async function rolloutRestart(api: Api, kind: string, ns: string, name: string, now: Date = new Date()): Promise<string> {
  const k = rolloutKind(kind);
  const obj = await api.get(k, ns, name);
  if (obj.spec?.paused) throw new RolloutError(`can't restart paused deployment (run rollout resume first)`);
  await api.patch(k, ns, name, { spec: { template: { metadata: { annotations: { [RESTARTED_AT]: rfc3339(now) } } } } }, 'strategic');
  return `${resourceName(k, name)} restarted`;
}

export async function rolloutPause(api: Api, kind: string, ns: string, name: string, pause: boolean): Promise<string> {
  const k = rolloutKind(kind);
  if (k !== 'Deployment') throw new RolloutError(`${kindInfo(k).resource}.${kindInfo(k).group} "${name}" ${pause ? 'pausing' : 'resuming'} is not supported`);
  const d = (await api.get(k, ns, name)) as Deployment;
  if (!!d.spec.paused === pause) throw new RolloutError(`deployments.apps "${name}" is ${pause ? 'already paused' : 'not paused'}`);
  await api.patch(k, ns, name, { spec: { paused: pause } }, 'merge');
  return `${resourceName(k, name)} ${pause ? 'paused' : 'resumed'}`;
}

/** `scale --replicas N [--current-replicas M]`. */
export async function scale(api: Api, kind: string, ns: string, name: string, replicas: number, currentReplicas?: number): Promise<string> {
  const k = kindInfo(kind).kind;
  if (!['Deployment', 'ReplicaSet', 'ReplicationController', 'StatefulSet'].includes(k)) throw new RolloutError(`cannot scale a ${k}`);
  if (!Number.isInteger(replicas) || replicas < 0) throw new RolloutError('The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0');
  const obj = await api.get(k, ns, name);
  if (currentReplicas !== undefined && (obj.spec?.replicas ?? 1) !== currentReplicas) {
    throw new RolloutError(`Expected replicas to be ${currentReplicas}, was ${obj.spec?.replicas ?? 1}`);
  }
  await api.patch(k, ns, name, { metadata: { resourceVersion: obj.metadata.resourceVersion }, spec: { replicas } }, 'merge');
  return `${resourceName(k, name)} scaled`;
}
