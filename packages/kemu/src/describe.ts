// `kemu describe`, laid out like kubectl describe: aligned key/value sections, conditions and events as
// tables, nested values indented.
import type { ContainerStatus, Deployment, Event, KubeObject, Node, Pod } from '@kemu/core';
import { toYaml } from '@kemu/core';
import { describeDeployment } from './describe-workloads.js';
import { humanDuration, table } from './printers.js';

export function kv(rows: [string, string | undefined][], indent = ''): string {
  const width = Math.max(...rows.map(([k]) => k.length)) + 2;
  return rows.map(([k, v]) => `${indent}${`${k}:`.padEnd(width)}${v ?? '<none>'}`).join('\n');
}

export function map(m: Record<string, string> | undefined, indent: string): string {
  const entries = Object.entries(m ?? {});
  if (!entries.length) return '<none>';
  return entries.map(([k, v], i) => `${i ? indent : ''}${k}=${v}`).join('\n');
}

export function events(evs: Event[], now: number): string {
  if (!evs.length) return 'Events:                <none>';
  const rows = evs
    .sort((a, b) => Date.parse(a.lastTimestamp ?? '') - Date.parse(b.lastTimestamp ?? ''))
    .map((e) => [
      e.type ?? 'Normal',
      e.reason ?? '',
      `${humanDuration(now - Date.parse(e.lastTimestamp ?? e.metadata.creationTimestamp ?? ''))}${(e.count ?? 1) > 1 ? ` (x${e.count} over ${humanDuration(Date.parse(e.lastTimestamp ?? '') - Date.parse(e.firstTimestamp ?? ''))})` : ''}`,
      e.source?.component ?? '',
      e.message ?? '',
    ]);
  const t = table(['Type', 'Reason', 'Age', 'From', 'Message'], rows)
    .split('\n')
    .map((l) => `  ${l}`);
  t.splice(1, 0, `  ${'----'.padEnd(6)}`);
  return `Events:\n${t.join('\n')}`;
}

function state(s: ContainerStatus['state']): string {
  if (s?.running) return `Running\n      Started:      ${s.running.startedAt ?? ''}`;
  if (s?.terminated)
    return `Terminated\n      Reason:       ${s.terminated.reason ?? ''}\n      Exit Code:    ${s.terminated.exitCode}\n      Started:      ${s.terminated.startedAt ?? ''}\n      Finished:     ${s.terminated.finishedAt ?? ''}`;
  if (s?.waiting) return `Waiting\n      Reason:       ${s.waiting.reason ?? ''}`;
  return 'Waiting';
}

function describePod(p: Pod, evs: Event[], now: number): string {
  const s = p.status ?? {};
  const out = [
    kv([
      ['Name', p.metadata.name],
      ['Namespace', p.metadata.namespace],
      ['Priority', String(p.spec.priority ?? 0)],
      ['Service Account', p.spec.serviceAccountName ?? 'default'],
      ['Node', p.spec.nodeName ? `${p.spec.nodeName}/${s.hostIP ?? ''}` : '<none>'],
      ['Start Time', s.startTime],
      ['Labels', map(p.metadata.labels, ' '.repeat(14))],
      ['Annotations', map(p.metadata.annotations, ' '.repeat(14))],
      ['Status', p.metadata.deletionTimestamp ? 'Terminating' : s.phase],
      ['IP', s.podIP],
    ]),
    `IPs:\n  ${(s.podIPs ?? []).map((x) => `IP:  ${x.ip}`).join('\n  ') || '<none>'}`,
  ];
  const section = (title: string, specs: Pod['spec']['containers'], statuses: ContainerStatus[] | undefined) => {
    if (!specs.length) return;
    out.push(`${title}:`);
    for (const c of specs) {
      const st = statuses?.find((x) => x.name === c.name);
      out.push(`  ${c.name}:`);
      out.push(
        kv(
          [
            ['Container ID', st?.containerID],
            ['Image', c.image],
            ['Image ID', st?.imageID || undefined],
            ['Port', (c.ports ?? []).map((x) => `${x.containerPort}/${x.protocol ?? 'TCP'}`).join(', ') || undefined],
            ['Host Port', (c.ports ?? []).map((x) => `${x.hostPort ?? 0}/${x.protocol ?? 'TCP'}`).join(', ') || undefined],
            ['State', state(st?.state)],
            ...(st?.lastState?.terminated ? ([['Last State', state(st.lastState)]] as [string, string][]) : []),
            ['Ready', String(st?.ready ?? false)],
            ['Restart Count', String(st?.restartCount ?? 0)],
            ['Mounts', (c.volumeMounts ?? []).map((m) => `${m.mountPath} from ${m.name} (${m.readOnly ? 'ro' : 'rw'})`).join('\n      ') || '<none>'],
          ],
          '    ',
        ),
      );
    }
  };
  section('Init Containers', p.spec.initContainers ?? [], s.initContainerStatuses);
  section('Containers', p.spec.containers, s.containerStatuses);
  if (s.conditions?.length) {
    out.push(`Conditions:\n${table(['Type', 'Status'], s.conditions.map((c) => [c.type, c.status])).split('\n').map((l) => `  ${l}`).join('\n')}`);
  }
  out.push(
    `Volumes:${(p.spec.volumes ?? []).length ? '' : '  <none>'}`,
    ...(p.spec.volumes ?? []).map((v) => {
      if (v.persistentVolumeClaim) return `  ${v.name}:\n    Type:       PersistentVolumeClaim\n    ClaimName:  ${v.persistentVolumeClaim.claimName}\n    ReadOnly:   ${v.persistentVolumeClaim.readOnly ?? false}`;
      if (v.emptyDir) return `  ${v.name}:\n    Type:       EmptyDir`;
      if (v.hostPath) return `  ${v.name}:\n    Type:       HostPath\n    Path:       ${v.hostPath.path}`;
      return `  ${v.name}:\n    Type:       ${Object.keys(v).find((k) => k !== 'name') ?? 'unknown'}`;
    }),
    kv([
      ['QoS Class', s.qosClass],
      ['Node-Selectors', map(p.spec.nodeSelector, ' '.repeat(17))],
      ['Tolerations', (p.spec.tolerations ?? []).map((t) => `${t.key ?? ''}${t.operator === 'Exists' ? '' : `=${t.value ?? ''}`}:${t.effect ?? ''}`).join('\n') || '<none>'],
    ]),
    events(evs, now),
  );
  return out.join('\n');
}

function describeNode(n: Node, evs: Event[], now: number): string {
  const s = n.status ?? {};
  const conds = table(
    ['Type', 'Status', 'LastHeartbeatTime', 'LastTransitionTime', 'Reason', 'Message'],
    (s.conditions ?? []).map((c) => [c.type, c.status, c.lastHeartbeatTime ?? '', c.lastTransitionTime ?? '', c.reason ?? '', c.message ?? '']),
  );
  const res = (r: Record<string, string> | undefined) => Object.entries(r ?? {}).map(([k, v]) => `  ${`${k}:`.padEnd(20)}${v}`).join('\n');
  return [
    kv([
      ['Name', n.metadata.name],
      ['Labels', map(n.metadata.labels, ' '.repeat(20))],
      ['Annotations', map(n.metadata.annotations, ' '.repeat(20))],
      ['CreationTimestamp', n.metadata.creationTimestamp],
      ['Taints', (n.spec?.taints ?? []).map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`).join('\n                    ') || '<none>'],
      ['Unschedulable', String(n.spec?.unschedulable ?? false)],
    ]),
    `Conditions:\n${conds.split('\n').map((l) => `  ${l}`).join('\n')}`,
    `Addresses:\n${(s.addresses ?? []).map((a) => `  ${`${a.type}:`.padEnd(12)}${a.address}`).join('\n')}`,
    `Capacity:\n${res(s.capacity)}`,
    `Allocatable:\n${res(s.allocatable)}`,
    `System Info:\n${Object.entries(s.nodeInfo ?? {}).map(([k, v]) => `  ${`${k}:`.padEnd(28)}${v}`).join('\n')}`,
    kv([
      ['PodCIDR', n.spec?.podCIDR],
      ['PodCIDRs', (n.spec?.podCIDRs ?? []).join(',') || undefined],
    ]),
    events(evs, now),
  ].join('\n');
}

export function describeObject(obj: KubeObject, evs: Event[], now = Date.now()): string {
  if (obj.kind === 'Pod') return describePod(obj as Pod, evs, now);
  if (obj.kind === 'Node') return describeNode(obj as Node, evs, now);
  if (obj.kind === 'Deployment') return describeDeployment(obj as Deployment, evs, now);
  const { metadata, apiVersion: _a, kind: _k, ...rest } = obj as KubeObject & Record<string, unknown>;
  return [
    kv([
      ['Name', metadata.name],
      ...(metadata.namespace ? ([['Namespace', metadata.namespace]] as [string, string][]) : []),
      ['Labels', map(metadata.labels, ' '.repeat(14))],
      ['Annotations', map(metadata.annotations, ' '.repeat(14))],
      ['Finalizers', (metadata.finalizers ?? []).join(', ') || undefined],
    ]),
    toYaml(rest as unknown as KubeObject)
      .trimEnd()
      .split('\n')
      .map((l) => l.replace(/^(\w)/, (c) => c.toUpperCase()))
      .join('\n'),
    events(evs, now),
  ].join('\n');
}
