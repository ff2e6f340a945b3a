// Output formatted like kubectl's: the same columns per kind, the pod STATUS column derived as kubectl
// does (Init:0/1, CrashLoopBackOff, Completed, Terminating...), ages as kubectl's HumanDuration.
import type {
  Event,
  KubeObject,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  StorageClass,
  VolumeAttachment,
} from '@kemu/core';

/** kubectl's duration.HumanDuration. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8)
    return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const years = Math.floor(hours / 24 / 365);
  const days = Math.floor(hours / 24) % 365;
  if (hours < 24 * 365 * 8) return days === 0 ? `${years}y` : `${years}y${days}d`;
  return `${years}y`;
}

const age = (ts: string | undefined, now: number) => (ts ? humanDuration(now - Date.parse(ts)) : '<unknown>');

/** Renders rows as kubectl does: upper-case headers, columns padded and separated by three spaces. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('   ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** The pod STATUS column, as kubectl's printPod computes it. */
export function podStatusReason(pod: Pod): string {
  const s = pod.status ?? {};
  let reason: string = s.reason || s.phase || 'Pending';
  const inits = pod.spec.initContainers ?? [];
  let initializing = false;
  (s.initContainerStatuses ?? []).forEach((c, i) => {
    if (initializing) return;
    const t = c.state?.terminated;
    if (t && t.exitCode === 0) return;
    if (inits[i]?.restartPolicy === 'Always' && c.started) return;
    if (t)
      reason = t.reason
        ? `Init:${t.reason}`
        : t.signal
          ? `Init:Signal:${t.signal}`
          : `Init:ExitCode:${t.exitCode}`;
    else if (c.state?.waiting?.reason && c.state.waiting.reason !== 'PodInitializing')
      reason = `Init:${c.state.waiting.reason}`;
    else reason = `Init:${i}/${inits.length}`;
    initializing = true;
  });
  if (!initializing) {
    let hasRunning = false;
    for (const c of [...(s.containerStatuses ?? [])].reverse()) {
      if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
      else if (c.state?.terminated?.reason) reason = c.state.terminated.reason;
      else if (c.state?.terminated)
        reason = c.state.terminated.signal
          ? `Signal:${c.state.terminated.signal}`
          : `ExitCode:${c.state.terminated.exitCode}`;
      else if (c.ready && c.state?.running) hasRunning = true;
    }
    if (reason === 'Completed' && hasRunning) {
      const ready = pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      reason = ready ? 'Running' : 'NotReady';
    }
  }
  if (pod.metadata.deletionTimestamp) reason = s.reason === 'NodeLost' ? 'Unknown' : 'Terminating';
  return reason;
}

function podRow(p: Pod, now: number, wide: boolean, withNs: boolean): string[] {
  const statuses = p.status?.containerStatuses ?? [];
  const ready = statuses.filter((c) => c.ready).length;
  let restarts = 0;
  let lastRestart = 0;
  for (const c of statuses) {
    restarts += c.restartCount;
    const fin = c.lastState?.terminated?.finishedAt;
    if (fin) lastRestart = Math.max(lastRestart, Date.parse(fin));
  }
  const restartsCell =
    lastRestart && restarts ? `${restarts} (${humanDuration(now - lastRestart)} ago)` : String(restarts);
  const row = [
    p.metadata.name ?? '',
    `${ready}/${p.spec.containers.length}`,
    podStatusReason(p),
    restartsCell,
    age(p.metadata.creationTimestamp, now),
  ];
  if (wide)
    row.push(
      p.status?.podIP ?? '<none>',
      p.spec.nodeName ?? '<none>',
      p.status?.nominatedNodeName ?? '<none>',
      '<none>',
    );
  return withNs ? [p.metadata.namespace ?? '', ...row] : row;
}

function nodeRow(n: Node, now: number, wide: boolean): string[] {
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
  let status = ready?.status === 'True' ? 'Ready' : ready ? 'NotReady' : 'Unknown';
  if (n.spec?.unschedulable) status += ',SchedulingDisabled';
  const roles =
    Object.keys(n.metadata.labels ?? {})
      .filter((k) => k.startsWith('node-role.kubernetes.io/'))
      .map((k) => k.slice('node-role.kubernetes.io/'.length))
      .join(',') || '<none>';
  const row = [
    n.metadata.name ?? '',
    status,
    roles,
    age(n.metadata.creationTimestamp, now),
    n.status?.nodeInfo?.kubeletVersion ?? '',
  ];
  if (wide) {
    const addr = (t: string) => n.status?.addresses?.find((a) => a.type === t)?.address ?? '<none>';
    row.push(
      addr('InternalIP'),
      addr('ExternalIP'),
      n.status?.nodeInfo?.osImage ?? '',
      n.status?.nodeInfo?.kernelVersion ?? '',
      n.status?.nodeInfo?.containerRuntimeVersion ?? '',
    );
  }
  return row;
}

const MODES: Record<string, string> = {
  ReadWriteOnce: 'RWO',
  ReadOnlyMany: 'ROX',
  ReadWriteMany: 'RWX',
  ReadWriteOncePod: 'RWOP',
};
const modes = (m: string[] | undefined) => (m ?? []).map((x) => MODES[x] ?? x).join(',');

export interface PrintOptions {
  wide?: boolean;
  allNamespaces?: boolean;
  now?: number;
}

/** A kubectl-style table for objects of one kind. */
export function printTable(kind: string, items: KubeObject[], o: PrintOptions = {}): string {
  const now = o.now ?? Date.now();
  const wide = o.wide ?? false;
  const ns = o.allNamespaces ?? false;
  const withNs = (h: string[], rows: string[][]) =>
    ns
      ? table(
          ['NAMESPACE', ...h],
          rows.map((r, i) => [items[i].metadata.namespace ?? '', ...r]),
        )
      : table(h, rows);
  if (!items.length) return '';
  switch (kind) {
    case 'Pod': {
      const h = ['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE'];
      if (wide) h.push('IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES');
      return withNs(
        h,
        (items as Pod[]).map((p) => podRow(p, now, wide, false)),
      );
    }
    case 'Node': {
      const h = ['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION'];
      if (wide) h.push('INTERNAL-IP', 'EXTERNAL-IP', 'OS-IMAGE', 'KERNEL-VERSION', 'CONTAINER-RUNTIME');
      return table(
        h,
        (items as Node[]).map((n) => nodeRow(n, now, wide)),
      );
    }
    case 'PersistentVolumeClaim':
      return withNs(
        [
          'NAME',
          'STATUS',
          'VOLUME',
          'CAPACITY',
          'ACCESS MODES',
          'STORAGECLASS',
          'VOLUMEATTRIBUTESCLASS',
          'AGE',
          ...(wide ? ['VOLUMEMODE'] : []),
        ],
        (items as PersistentVolumeClaim[]).map((c) => [
          c.metadata.name ?? '',
          c.status?.phase ?? 'Pending',
          c.spec.volumeName ?? '',
          c.status?.capacity?.storage ?? '',
          modes(c.status?.accessModes),
          c.spec.storageClassName ?? '<unset>',
          '<unset>',
          age(c.metadata.creationTimestamp, now),
          ...(wide ? [c.spec.volumeMode ?? 'Filesystem'] : []),
        ]),
      );
    case 'PersistentVolume':
      return table(
        [
          'NAME',
          'CAPACITY',
          'ACCESS MODES',
          'RECLAIM POLICY',
          'STATUS',
          'CLAIM',
          'STORAGECLASS',
          'VOLUMEATTRIBUTESCLASS',
          'REASON',
          'AGE',
        ],
        (items as PersistentVolume[]).map((v) => [
          v.metadata.name ?? '',
          v.spec.capacity?.storage ?? '',
          modes(v.spec.accessModes),
          v.spec.persistentVolumeReclaimPolicy ?? 'Retain',
          v.status?.phase ?? 'Pending',
          v.spec.claimRef ? `${v.spec.claimRef.namespace}/${v.spec.claimRef.name}` : '',
          v.spec.storageClassName ?? '',
          '<unset>',
          v.status?.reason ?? '',
          age(v.metadata.creationTimestamp, now),
        ]),
      );
    case 'StorageClass':
      return table(
        ['NAME', 'PROVISIONER', 'RECLAIMPOLICY', 'VOLUMEBINDINGMODE', 'ALLOWVOLUMEEXPANSION', 'AGE'],
        (items as StorageClass[]).map((s) => [
          `${s.metadata.name}${s.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'] === 'true' ? ' (default)' : ''}`,
          s.provisioner,
          s.reclaimPolicy ?? 'Delete',
          s.volumeBindingMode ?? 'Immediate',
          String(s.allowVolumeExpansion ?? false),
          age(s.metadata.creationTimestamp, now),
        ]),
      );
    case 'VolumeAttachment':
      return table(
        ['NAME', 'ATTACHER', 'PV', 'NODE', 'ATTACHED', 'AGE'],
        (items as VolumeAttachment[]).map((v) => [
          v.metadata.name ?? '',
          v.spec.attacher,
          v.spec.source.persistentVolumeName ?? '',
          v.spec.nodeName,
          String(v.status?.attached ?? false),
          age(v.metadata.creationTimestamp, now),
        ]),
      );
    case 'Event':
      return withNs(
        ['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'],
        (items as Event[]).map((e) => [
          age(e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp, now),
          e.type ?? 'Normal',
          e.reason ?? '',
          `${(e.involvedObject.kind ?? '').toLowerCase()}/${e.involvedObject.name ?? ''}`,
          e.message ?? '',
        ]),
      );
    case 'Namespace':
      return table(
        ['NAME', 'STATUS', 'AGE'],
        items.map((n) => [
          n.metadata.name ?? '',
          (n as { status?: { phase?: string } }).status?.phase ?? 'Active',
          age(n.metadata.creationTimestamp, now),
        ]),
      );
    default:
      return withNs(
        ['NAME', 'AGE'],
        items.map((x) => [x.metadata.name ?? '', age(x.metadata.creationTimestamp, now)]),
      );
  }
}

/** `kubectl get` names for kinds: plural, singular and short names. */
export const KIND_ALIASES: Record<string, string> = {
  po: 'Pod',
  pod: 'Pod',
  pods: 'Pod',
  no: 'Node',
  node: 'Node',
  nodes: 'Node',
  ns: 'Namespace',
  namespace: 'Namespace',
  namespaces: 'Namespace',
  pvc: 'PersistentVolumeClaim',
  persistentvolumeclaim: 'PersistentVolumeClaim',
  persistentvolumeclaims: 'PersistentVolumeClaim',
  pv: 'PersistentVolume',
  persistentvolume: 'PersistentVolume',
  persistentvolumes: 'PersistentVolume',
  sc: 'StorageClass',
  storageclass: 'StorageClass',
  storageclasses: 'StorageClass',
  volumeattachment: 'VolumeAttachment',
  volumeattachments: 'VolumeAttachment',
  ev: 'Event',
  event: 'Event',
  events: 'Event',
  cm: 'ConfigMap',
  configmap: 'ConfigMap',
  configmaps: 'ConfigMap',
  lease: 'Lease',
  leases: 'Lease',
  csidriver: 'CSIDriver',
  csidrivers: 'CSIDriver',
  csinode: 'CSINode',
  csinodes: 'CSINode',
  pc: 'PriorityClass',
  priorityclass: 'PriorityClass',
  priorityclasses: 'PriorityClass',
  ippool: 'IPPool',
  ippools: 'IPPool',
  ipamblock: 'IPAMBlock',
  ipamblocks: 'IPAMBlock',
  blockaffinity: 'BlockAffinity',
  blockaffinities: 'BlockAffinity',
  csistoragecapacity: 'CSIStorageCapacity',
  csistoragecapacities: 'CSIStorageCapacity',
};

export function resolveKind(word: string): string | undefined {
  return KIND_ALIASES[word.toLowerCase()];
}
