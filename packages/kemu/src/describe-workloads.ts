// `kemu describe deployment`, laid out as kubectl describes one: the replica counts, strategy, pod template
// and conditions, then events.
import type { Deployment, PodTemplateSpec } from '@kemu/core';
import { events, kv, map } from './describe.js';
import { table } from './printers.js';

function template(t: PodTemplateSpec | undefined): string {
  const lines = ['Pod Template:', `  Labels:  ${map(t?.metadata?.labels, '           ')}`];
  if (t?.metadata?.annotations && Object.keys(t.metadata.annotations).length) lines.push(`  Annotations:  ${map(t.metadata.annotations, '                ')}`);
  lines.push('  Containers:');
  for (const c of t?.spec?.containers ?? []) {
    lines.push(`   ${c.name}:`);
    lines.push(
      kv(
        [
          ['Image', c.image],
          ['Port', (c.ports ?? []).map((p) => `${p.containerPort}/${p.protocol ?? 'TCP'}`).join(', ') || '<none>'],
          ['Host Port', (c.ports ?? []).map((p) => `${p.hostPort ?? 0}/${p.protocol ?? 'TCP'}`).join(', ') || '<none>'],
          ...(c.command ? ([['Command', c.command.join(' ')]] as [string, string][]) : []),
          ['Environment', (c.env ?? []).map((e) => `${e.name}=${e.value ?? ''}`).join('\n      ') || '<none>'],
          ['Mounts', (c.volumeMounts ?? []).map((m) => `${m.mountPath} from ${m.name}${m.readOnly ? ' (ro)' : ' (rw)'}`).join('\n      ') || '<none>'],
        ],
        '    ',
      ),
    );
  }
  lines.push(`  Volumes:         ${(t?.spec?.volumes ?? []).map((v) => v.name).join(', ') || '<none>'}`);
  return lines.join('\n');
}

export function describeDeployment(d: Deployment, evs: Parameters<typeof events>[0], now: number): string {
  const st = d.status ?? {};
  const s = d.spec;
  const selector = Object.entries(s.selector?.matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .concat((s.selector?.matchExpressions ?? []).map((e) => `${e.key} ${e.operator.toLowerCase()} (${(e.values ?? []).join(',')})`))
    .join(',');
  const ru = s.strategy?.rollingUpdate;
  const conds = (st.conditions ?? []).map((c) => [c.type, c.status, c.reason ?? '']);
  const condTable = conds.length
    ? table(['Type', 'Status', 'Reason'], conds)
        .split('\n')
        .map((l) => `  ${l}`)
    : [];
  if (condTable.length) condTable.splice(1, 0, condTable[0].replace(/\S/g, '-'));
  return [
    kv([
      ['Name', d.metadata.name],
      ['Namespace', d.metadata.namespace],
      ['CreationTimestamp', d.metadata.creationTimestamp],
      ['Labels', map(d.metadata.labels, ' '.repeat(24))],
      ['Annotations', map(d.metadata.annotations, ' '.repeat(24))],
      ['Selector', selector || '<none>'],
      [
        'Replicas',
        `${s.replicas ?? 1} desired | ${st.updatedReplicas ?? 0} updated | ${st.replicas ?? 0} total | ${st.availableReplicas ?? 0} available | ${st.unavailableReplicas ?? 0} unavailable`,
      ],
      ['StrategyType', s.strategy?.type ?? 'RollingUpdate'],
      ['MinReadySeconds', String(s.minReadySeconds ?? 0)],
      ...(s.strategy?.type !== 'Recreate' ? ([['RollingUpdateStrategy', `${ru?.maxUnavailable ?? '25%'} max unavailable, ${ru?.maxSurge ?? '25%'} max surge`]] as [string, string][]) : []),
    ]),
    template(s.template),
    condTable.length ? `Conditions:\n${condTable.join('\n')}` : 'Conditions:  <none>',
    events(evs, now),
  ].join('\n');
}
