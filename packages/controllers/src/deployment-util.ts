// Deployment arithmetic and bookkeeping (upstream deployment/util): the pod-template-hash, surge and
// unavailability from int-or-percent values, how far a new ReplicaSet may grow, revision annotations,
// and the Progressing/Available conditions with their reasons.
import { isDeepStrictEqual } from 'node:util';
import type { Condition, Deployment, IntOrString, PodTemplateSpec, ReplicaSet } from '@kemu/core';

export const POD_TEMPLATE_HASH = 'pod-template-hash';
export const REVISION_ANNOTATION = 'deployment.kubernetes.io/revision';
export const REVISION_HISTORY_ANNOTATION = 'deployment.kubernetes.io/revision-history';
export const DESIRED_REPLICAS_ANNOTATION = 'deployment.kubernetes.io/desired-replicas';
export const MAX_REPLICAS_ANNOTATION = 'deployment.kubernetes.io/max-replicas';
export const CHANGE_CAUSE_ANNOTATION = 'kubernetes.io/change-cause';
/** Annotations of a Deployment that are not copied to its ReplicaSets. */
const NOT_COPIED = new Set([REVISION_ANNOTATION, REVISION_HISTORY_ANNOTATION, DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, 'kubectl.kubernetes.io/last-applied-configuration']);

export const Reasons = {
  NewReplicaSetCreated: 'NewReplicaSetCreated',
  FoundNewReplicaSet: 'FoundNewReplicaSet',
  ReplicaSetUpdated: 'ReplicaSetUpdated',
  NewReplicaSetAvailable: 'NewReplicaSetAvailable',
  ProgressDeadlineExceeded: 'ProgressDeadlineExceeded',
  DeploymentPaused: 'DeploymentPaused',
  DeploymentResumed: 'DeploymentResumed',
  MinimumReplicasAvailable: 'MinimumReplicasAvailable',
  MinimumReplicasUnavailable: 'MinimumReplicasUnavailable',
  FailedRSCreate: 'ReplicaSetCreateError',
} as const;

const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** FNV-1a, 32 bits. */
function fnv32a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** Upstream's rand.SafeEncodeString: digits of the decimal hash mapped onto a vowel-free alphabet. */
function safeEncode(s: string): string {
  let out = '';
  for (const ch of s) out += SAFE_ALPHABET[ch.charCodeAt(0) % SAFE_ALPHABET.length];
  return out;
}

function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** The pod-template-hash label value of a template (stable across runs, changed by collisionCount). */
export function computeHash(template: PodTemplateSpec, collisionCount?: number): string {
  const t = { ...template, metadata: { ...template.metadata, labels: withoutHash(template.metadata?.labels) } };
  let s = stable(t);
  if (collisionCount) s += `#${collisionCount}`;
  return safeEncode(String(fnv32a(s)));
}

function withoutHash(labels: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!labels || !(POD_TEMPLATE_HASH in labels)) return labels;
  const { [POD_TEMPLATE_HASH]: _h, ...rest } = labels;
  return rest;
}

/** Template equality ignoring the pod-template-hash label (upstream EqualIgnoreHash). */
export function equalIgnoreHash(a: PodTemplateSpec | undefined, b: PodTemplateSpec | undefined): boolean {
  const strip = (t: PodTemplateSpec | undefined) => (t ? { ...t, metadata: { ...t.metadata, labels: withoutHash(t.metadata?.labels) ?? {} } } : t);
  // Compared as they are (both come from the store, JSON without undefined members), stopping at the first difference.
  return isDeepStrictEqual(strip(a), strip(b));
}

/** An int-or-percent resolved against `total` (percentages round up or down). */
export function scaledValue(v: IntOrString | undefined, total: number, roundUp: boolean): number {
  if (v === undefined) return 0;
  if (typeof v === 'number') return v;
  const pct = Number(v.replace('%', ''));
  const x = (pct * total) / 100;
  return roundUp ? Math.ceil(x) : Math.floor(x);
}

/** maxSurge (rounded up) and maxUnavailable (rounded down); both 0 makes maxUnavailable 1 (ResolveFenceposts). */
export function resolveFenceposts(surge: IntOrString | undefined, unavailable: IntOrString | undefined, desired: number): [number, number] {
  const s = scaledValue(surge, desired, true);
  let u = scaledValue(unavailable, desired, false);
  if (s === 0 && u === 0) u = 1;
  return [s, u];
}

export function maxSurge(d: Deployment): number {
  if (d.spec.strategy?.type !== 'RollingUpdate') return 0;
  return resolveFenceposts(d.spec.strategy.rollingUpdate?.maxSurge, d.spec.strategy.rollingUpdate?.maxUnavailable, d.spec.replicas ?? 1)[0];
}

export function maxUnavailable(d: Deployment): number {
  const replicas = d.spec.replicas ?? 1;
  if (d.spec.strategy?.type !== 'RollingUpdate' || replicas === 0) return 0;
  const [, u] = resolveFenceposts(d.spec.strategy.rollingUpdate?.maxSurge, d.spec.strategy.rollingUpdate?.maxUnavailable, replicas);
  return Math.min(u, replicas);
}

const replicasOf = (rs: ReplicaSet | undefined) => rs?.spec.replicas ?? 0;

/** Replicas the new ReplicaSet should have now (upstream NewRSNewReplicas). */
export function newRSNewReplicas(d: Deployment, all: ReplicaSet[], newRS: ReplicaSet): number {
  const desired = d.spec.replicas ?? 1;
  if (d.spec.strategy?.type === 'Recreate') return desired;
  const surge = maxSurge(d);
  const current = all.reduce((n, rs) => n + replicasOf(rs), 0);
  const maxTotal = desired + surge;
  if (current >= maxTotal) return replicasOf(newRS);
  const up = Math.min(maxTotal - current, desired - replicasOf(newRS));
  return replicasOf(newRS) + Math.max(0, up);
}

export function revisionOf(o: { metadata: { annotations?: Record<string, string> } }): number {
  const v = Number(o.metadata.annotations?.[REVISION_ANNOTATION] ?? '0');
  return Number.isFinite(v) ? v : 0;
}

export function maxRevision(sets: ReplicaSet[]): number {
  return sets.reduce((m, rs) => Math.max(m, revisionOf(rs)), 0);
}

/** Deployment annotations a ReplicaSet carries (all but the controller's own bookkeeping). */
export function copiedAnnotations(d: Deployment): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(d.metadata.annotations ?? {})) if (!NOT_COPIED.has(k)) out[k] = v;
  return out;
}

export interface DeploymentCondition extends Condition {
  lastUpdateTime?: string;
}

export function getCondition(d: Deployment, type: string): DeploymentCondition | undefined {
  return d.status?.conditions?.find((c) => c.type === type) as DeploymentCondition | undefined;
}

/** Set a condition; lastTransitionTime only moves when the status changes (upstream SetDeploymentCondition). */
export function setCondition(conds: DeploymentCondition[], c: DeploymentCondition): DeploymentCondition[] {
  const cur = conds.find((x) => x.type === c.type);
  if (cur && cur.status === c.status && cur.reason === c.reason) {
    return conds;
  }
  if (cur && cur.status === c.status) c.lastTransitionTime = cur.lastTransitionTime;
  return [...conds.filter((x) => x.type !== c.type), c];
}
