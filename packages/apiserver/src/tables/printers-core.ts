// Printers of the core/v1 kinds, with the columns kubectl shows for them (and its -o wide ones).
import type { ConfigMap, Event, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod } from '@kemu/core';
import { age } from './human-duration.js';
import { podReady, podRestarts, podStatusReason } from './pod-status.js';
import { column, NAME_COLUMN, registerPrinter } from './table.js';

const AGE = column('Age', 'string', 'Time since the object was created.');
const none = (v: string | undefined | null) => (v ? v : '<none>');

/** Node roles from `node-role.kubernetes.io/<role>` and `kubernetes.io/role` labels. */
export function nodeRoles(n: Node): string {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(n.metadata.labels ?? {})) {
    if (k.startsWith('node-role.kubernetes.io/') && k.length > 'node-role.kubernetes.io/'.length) roles.add(k.slice('node-role.kubernetes.io/'.length));
    else if (k === 'kubernetes.io/role' && v) roles.add(v);
  }
  return roles.size ? [...roles].sort().join(',') : '<none>';
}

/** Node STATUS: Ready / NotReady / Unknown, then SchedulingDisabled when cordoned. */
export function nodeStatus(n: Node): string {
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
  const out = [ready?.status === 'True' ? 'Ready' : ready && ready.status === 'False' ? 'NotReady' : 'Unknown'];
  if (n.spec?.unschedulable) out.push('SchedulingDisabled');
  return out.join(',');
}

const ACCESS_MODES: Record<string, string> = { ReadWriteOnce: 'RWO', ReadOnlyMany: 'ROX', ReadWriteMany: 'RWX', ReadWriteOncePod: 'RWOP' };
export const accessModes = (m: string[] | undefined) => (m ?? []).map((x) => ACCESS_MODES[x] ?? x).join(',');


/** Register the printers of these kinds. */
export function registerCorePrinters(): void {
  registerPrinter('v1', 'Pod', {
    columns: [
      NAME_COLUMN,
      column('Ready', 'string', 'Ready containers of all containers.'),
      column('Status', 'string', 'Summary of the pod and its containers.'),
      column('Restarts', 'string', 'Restarts of the pod\'s containers, and when the last one was.'),
      AGE,
      column('IP', 'string', 'The pod\'s IP address.', 1),
      column('Node', 'string', 'The node the pod runs on.', 1),
      column('Nominated Node', 'string', 'The node a preempting pod waits for.', 1),
      column('Readiness Gates', 'string', 'Readiness gates that are true, of all gates.', 1),
    ],
    row(o, now) {
      const p = o as Pod;
      const gates = p.spec?.readinessGates as { conditionType: string }[] | undefined;
      const gatesCell = gates?.length
        ? `${gates.filter((g) => p.status?.conditions?.some((c) => c.type === g.conditionType && c.status === 'True')).length}/${gates.length}`
        : '<none>';
      return [
        p.metadata.name ?? '',
        podReady(p),
        podStatusReason(p),
        podRestarts(p, now),
        age(p.metadata.creationTimestamp, now),
        none(p.status?.podIP),
        none(p.spec?.nodeName),
        none(p.status?.nominatedNodeName),
        gatesCell,
      ];
    },
    conditions(o) {
      const phase = (o as Pod).status?.phase;
      return phase === 'Succeeded' || phase === 'Failed' ? [{ type: 'Completed', status: 'True' }] : undefined;
    },
  });

  registerPrinter('v1', 'Node', {
    columns: [
      NAME_COLUMN,
      column('Status', 'string', 'Readiness of the node.'),
      column('Roles', 'string', 'Roles of the node, from its labels.'),
      AGE,
      column('Version', 'string', 'Version of the node\'s kubelet.'),
      column('Internal-IP', 'string', 'The node\'s internal address.', 1),
      column('External-IP', 'string', 'The node\'s external address.', 1),
      column('OS-Image', 'string', 'The node\'s operating system.', 1),
      column('Kernel-Version', 'string', 'The node\'s kernel.', 1),
      column('Container-Runtime', 'string', 'The node\'s container runtime and its version.', 1),
    ],
    row(o, now) {
      const n = o as Node;
      const addr = (t: string) => none(n.status?.addresses?.find((a) => a.type === t)?.address);
      const info = n.status?.nodeInfo ?? {};
      return [
        n.metadata.name ?? '',
        nodeStatus(n),
        nodeRoles(n),
        age(n.metadata.creationTimestamp, now),
        info.kubeletVersion ?? '',
        addr('InternalIP'),
        addr('ExternalIP'),
        info.osImage || '<unknown>',
        info.kernelVersion || '<unknown>',
        info.containerRuntimeVersion || '<unknown>',
      ];
    },
  });

  registerPrinter('v1', 'Namespace', {
    columns: [NAME_COLUMN, column('Status', 'string', 'Active or Terminating.'), AGE],
    row: (o, now) => [o.metadata.name ?? '', (o as Namespace).status?.phase ?? 'Active', age(o.metadata.creationTimestamp, now)],
  });

  registerPrinter('v1', 'ConfigMap', {
    columns: [NAME_COLUMN, column('Data', 'string', 'Number of keys.'), AGE],
    row(o, now) {
      const c = o as ConfigMap;
      return [c.metadata.name ?? '', Object.keys(c.data ?? {}).length + Object.keys(c.binaryData ?? {}).length, age(c.metadata.creationTimestamp, now)];
    },
  });

  registerPrinter('v1', 'Event', {
    columns: [
      column('Last Seen', 'string', 'Time since the event last occurred.'),
      column('Type', 'string', 'Normal or Warning.'),
      column('Reason', 'string', 'Why the event happened.'),
      column('Object', 'string', 'The object the event is about.'),
      column('Subobject', 'string', 'The part of the object the event is about.', 1),
      column('Source', 'string', 'The component that reported the event.', 1),
      column('Message', 'string', 'What happened.'),
      column('First Seen', 'string', 'Time since the event first occurred.', 1),
      column('Count', 'string', 'How many times it occurred.', 1),
      { ...NAME_COLUMN, priority: 1 },
    ],
    row(o, now) {
      const e = o as Event;
      const series = (e as { series?: { count?: number; lastObservedTime?: string } }).series;
      const last = series?.lastObservedTime ?? e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp;
      const first = e.firstTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp;
      const source = e.source?.component
        ? [e.source.component, e.source.host].filter(Boolean).join(', ')
        : [(e as { reportingController?: string }).reportingController ?? e.reportingComponent, e.reportingInstance].filter(Boolean).join(', ');
      return [
        age(last, now),
        e.type ?? '',
        e.reason ?? '',
        `${(e.involvedObject?.kind ?? '').toLowerCase()}/${e.involvedObject?.name ?? ''}`,
        e.involvedObject?.fieldPath ?? '',
        source,
        (e.message ?? '').trim(),
        age(first, now),
        String(series?.count ?? e.count ?? 1),
        e.metadata.name ?? '',
      ];
    },
  });

  registerPrinter('v1', 'PersistentVolume', {
    columns: [
      NAME_COLUMN,
      column('Capacity', 'string', 'Size of the volume.'),
      column('Access Modes', 'string', 'How the volume may be mounted.'),
      column('Reclaim Policy', 'string', 'What happens to the volume when released.'),
      column('Status', 'string', 'Binding phase.'),
      column('Claim', 'string', 'The claim bound to the volume.'),
      column('StorageClass', 'string', 'Storage class of the volume.'),
      column('VolumeAttributesClass', 'string', 'Attributes class of the volume.'),
      column('Reason', 'string', 'Why the volume is in its phase.'),
      AGE,
      column('VolumeMode', 'string', 'Filesystem or Block.', 1),
    ],
    row(o, now) {
      const v = o as PersistentVolume;
      const ref = v.spec?.claimRef;
      return [
        v.metadata.name ?? '',
        v.spec?.capacity?.storage ?? '',
        accessModes(v.spec?.accessModes),
        v.spec?.persistentVolumeReclaimPolicy ?? '',
        v.status?.phase ?? '',
        ref ? `${ref.namespace}/${ref.name}` : '',
        v.spec?.storageClassName ?? '',
        (v.spec as { volumeAttributesClassName?: string })?.volumeAttributesClassName ?? '<unset>',
        v.status?.reason ?? '',
        age(v.metadata.creationTimestamp, now),
        v.spec?.volumeMode ?? 'Filesystem',
      ];
    },
  });

  registerPrinter('v1', 'PersistentVolumeClaim', {
    columns: [
      NAME_COLUMN,
      column('Status', 'string', 'Binding phase.'),
      column('Volume', 'string', 'The volume bound to the claim.'),
      column('Capacity', 'string', 'Size of the bound volume.'),
      column('Access Modes', 'string', 'How the volume may be mounted.'),
      column('StorageClass', 'string', 'Storage class of the claim.'),
      column('VolumeAttributesClass', 'string', 'Attributes class of the claim.'),
      AGE,
      column('VolumeMode', 'string', 'Filesystem or Block.', 1),
    ],
    row(o, now) {
      const c = o as PersistentVolumeClaim;
      const bound = c.status?.phase === 'Bound';
      return [
        c.metadata.name ?? '',
        c.status?.phase ?? '',
        c.spec?.volumeName ?? '',
        bound ? (c.status?.capacity?.storage ?? '') : '',
        bound ? accessModes(c.status?.accessModes) : '',
        c.metadata.annotations?.['volume.beta.kubernetes.io/storage-class'] ?? c.spec?.storageClassName ?? '',
        (c.spec as { volumeAttributesClassName?: string })?.volumeAttributesClassName ?? '<unset>',
        age(c.metadata.creationTimestamp, now),
        c.spec?.volumeMode ?? 'Filesystem',
      ];
    },
  });
}
