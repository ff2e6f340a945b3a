// Defaulting, as the API server applies it before validation. Mutates the object it is given (the store
// hands it a private copy).
import type { Container, Pod, PodSpec, PodStatus } from './api-core.js';
import type { KubeObject } from './api-meta.js';
import { kindHooks } from './kind-hooks.js';

/** Image pull policy the API server defaults for an image reference. */
export function defaultPullPolicy(image: string | undefined): 'Always' | 'IfNotPresent' {
  if (!image) return 'IfNotPresent';
  if (image.includes('@')) return 'IfNotPresent';
  const lastSlash = image.lastIndexOf('/');
  const colon = image.lastIndexOf(':');
  const tag = colon > lastSlash ? image.slice(colon + 1) : '';
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultContainer(c: Container): void {
  c.imagePullPolicy ??= defaultPullPolicy(c.image);
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  for (const p of c.ports ?? []) p.protocol ??= 'TCP';
  const r = c.resources;
  if (r?.limits) {
    // Requests default to limits for every resource that has a limit and no request.
    for (const [k, v] of Object.entries(r.limits)) {
      r.requests ??= {};
      if (!(k in r.requests)) r.requests[k] = v;
    }
  }
  c.resources ??= {};
}

type QOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** QoS class of each frozen pod spec already asked about: a stored pod's spec never changes, and the kubelet
 * asks for it on every status computation, cgroup lookup and resource sum of every pod it runs. */
const frozenSpecQOS = new WeakMap<PodSpec, QOSClass>();

/** QoS class from requests and limits of all containers (Kubernetes `GetPodQOS`). */
export function podQOSClass(spec: PodSpec): QOSClass {
  // Only a spec frozen all the way down (as the store hands them out) can be remembered: a mutable one may
  // have its resources changed by the caller between two calls.
  const frozen = Object.isFrozen(spec);
  if (frozen) {
    const known = frozenSpecQOS.get(spec);
    if (known !== undefined) return known;
  }
  const state = { any: false, guaranteed: true, deep: frozen };
  qosOfContainers(spec.initContainers, state);
  qosOfContainers(spec.containers, state);
  const qos: QOSClass = !state.any ? 'BestEffort' : state.guaranteed ? 'Guaranteed' : 'Burstable';
  if (state.deep) frozenSpecQOS.set(spec, qos);
  return qos;
}

function qosOfContainers(cs: Container[] | undefined, state: { any: boolean; guaranteed: boolean; deep: boolean }): void {
  if (!cs) return;
  if (state.deep && !Object.isFrozen(cs)) state.deep = false;
  for (const c of cs) {
    const r = c.resources;
    if (state.deep && !(Object.isFrozen(c) && (!r || (Object.isFrozen(r) && Object.isFrozen(r.requests ?? r) && Object.isFrozen(r.limits ?? r))))) {
      state.deep = false;
    }
    qosOfResource(r?.requests?.cpu, r?.limits?.cpu, state);
    qosOfResource(r?.requests?.memory, r?.limits?.memory, state);
  }
}

function qosOfResource(rq: unknown, lm: unknown, state: { any: boolean; guaranteed: boolean }): void {
  if (rq !== undefined || lm !== undefined) state.any = true;
  if (lm === undefined || (rq !== undefined && rq !== lm && String(rq) !== String(lm))) state.guaranteed = false;
}

/** Defaults of a pod spec, also applied to the pod templates of workload kinds. */
export function defaultPodSpec(s: PodSpec): void {
  s.restartPolicy ??= 'Always';
  s.dnsPolicy ??= 'ClusterFirst';
  s.terminationGracePeriodSeconds ??= 30;
  s.schedulerName ??= 'default-scheduler';
  s.securityContext ??= {};
  s.enableServiceLinks ??= true;
  if (s.hostNetwork) {
    // Host-network pods expose container ports on the host: hostPort defaults to containerPort.
    for (const c of [...(s.initContainers ?? []), ...(s.containers ?? [])]) {
      for (const p of c.ports ?? []) p.hostPort ??= p.containerPort;
    }
  }
  for (const c of s.initContainers ?? []) defaultContainer(c);
  for (const c of s.containers ?? []) defaultContainer(c);
  for (const v of s.volumes ?? []) {
    if (v.configMap) v.configMap.defaultMode ??= 0o644;
    if (v.secret) v.secret.defaultMode ??= 0o644;
    if (v.hostPath) v.hostPath.type ??= '';
  }
}

function defaultPod(pod: Pod): void {
  pod.spec ??= { containers: [] };
  const s = pod.spec;
  defaultPodSpec(s);
  // The DefaultTolerationSeconds admission plugin: tolerate not-ready/unreachable for five minutes.
  s.tolerations ??= [];
  const tol = s.tolerations;
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    if (!tol.some((t) => (t.key === key || (t.operator === 'Exists' && !t.key)) && (!t.effect || t.effect === 'NoExecute'))) {
      tol.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
    }
  }
  for (const t of tol) if (t.operator === undefined) t.operator = 'Equal';
}

/** Status a freshly created object starts with (the API server ignores status on create for these kinds). */
export function initialStatus(obj: KubeObject): void {
  switch (obj.kind) {
    case 'Pod': {
      const pod = obj as Pod;
      const st: PodStatus = { phase: 'Pending', qosClass: podQOSClass(pod.spec) };
      pod.status = st;
      break;
    }
    case 'Namespace':
      obj.status = { phase: 'Active' };
      break;
    case 'PersistentVolume':
      obj.status = { phase: 'Pending' };
      break;
    case 'PersistentVolumeClaim':
      obj.status = { phase: 'Pending' };
      break;
    case 'VolumeAttachment':
      if (!obj.status) obj.status = { attached: false };
      else obj.status = { attached: false };
      break;
    default:
      kindHooks(obj.kind)?.initialStatus?.(obj);
  }
}

/** Apply API-server defaults for the object's kind. */
export function applyDefaults(obj: KubeObject): void {
  switch (obj.kind) {
    case 'Pod':
      defaultPod(obj as Pod);
      break;
    case 'Namespace':
      obj.spec ??= {};
      obj.spec.finalizers ??= ['kubernetes'];
      break;
    case 'PersistentVolume':
      obj.spec ??= {};
      obj.spec.persistentVolumeReclaimPolicy ??= 'Retain';
      obj.spec.volumeMode ??= 'Filesystem';
      break;
    case 'PersistentVolumeClaim':
      obj.spec ??= {};
      obj.spec.volumeMode ??= 'Filesystem';
      obj.spec.resources ??= {};
      break;
    case 'StorageClass':
      obj.reclaimPolicy ??= 'Delete';
      obj.volumeBindingMode ??= 'Immediate';
      break;
    case 'CSIDriver':
      obj.spec ??= {};
      obj.spec.attachRequired ??= true;
      obj.spec.podInfoOnMount ??= false;
      obj.spec.volumeLifecycleModes ??= ['Persistent'];
      obj.spec.storageCapacity ??= false;
      obj.spec.fsGroupPolicy ??= 'ReadWriteOnceWithFSType';
      obj.spec.requiresRepublish ??= false;
      obj.spec.seLinuxMount ??= false;
      break;
    case 'CSINode':
      obj.spec ??= { drivers: [] };
      obj.spec.drivers ??= [];
      break;
    case 'PriorityClass':
      obj.preemptionPolicy ??= 'PreemptLowerPriority';
      break;
    case 'IPPool': {
      obj.spec ??= {};
      const v6 = typeof obj.spec.cidr === 'string' && obj.spec.cidr.includes(':');
      obj.spec.blockSize ??= v6 ? 122 : 26;
      obj.spec.ipipMode ??= 'Never';
      obj.spec.vxlanMode ??= 'Never';
      obj.spec.nodeSelector ??= 'all()';
      break;
    }
    case 'Node':
      obj.spec ??= {};
      break;
    default:
      kindHooks(obj.kind)?.defaults?.(obj);
  }
}
