// The kubelet's Prometheus endpoints from the Summary: /metrics/resource (the metric names metrics-server
// reads, upstream's resource metrics collector) and a /metrics/cadvisor subset (the container_* series
// Prometheus dashboards use). Text exposition format 0.0.4, samples stamped in milliseconds.
import { type Pod, parseQuantity } from '@kemu/core';
import type { Summary } from './stats-summary.js';

type Labels = Record<string, string>;

/** Escapes a label value as the exposition format requires. */
function esc(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function num(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toExponential().replace(/e\+?/, 'e+').replace('e+-', 'e-');
}

class Exposition {
  private readonly lines: string[] = [];
  family(name: string, type: 'counter' | 'gauge', help: string, samples: { labels?: Labels; value: number | undefined; ts?: number }[]) {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const s of samples) {
      if (s.value === undefined || !Number.isFinite(s.value)) continue;
      const l = s.labels && Object.keys(s.labels).length ? `{${Object.entries(s.labels).map(([k, v]) => `${k}="${esc(v)}"`).join(',')}}` : '';
      this.lines.push(`${name}${l} ${num(s.value)}${s.ts !== undefined ? ` ${s.ts}` : ''}`);
    }
  }
  toString() {
    return `${this.lines.join('\n')}\n`;
  }
}

const ms = (time: string | undefined) => (time ? Date.parse(time) : undefined);
const seconds = (ns: number | undefined) => (ns === undefined ? undefined : ns / 1e9);

/** /metrics/resource, as the kubelet's resource metrics collector writes it. */
export function resourceMetrics(s: Summary): string {
  const e = new Exposition();
  const containers = s.pods.flatMap((p) => p.containers.map((c) => ({ p, c, labels: { container: c.name, namespace: p.podRef.namespace, pod: p.podRef.name } })));
  e.family('container_cpu_usage_seconds_total', 'counter', '[STABLE] Cumulative cpu time consumed by the container in core-seconds', containers.map(({ c, labels }) => ({ labels, value: seconds(c.cpu?.usageCoreNanoSeconds), ts: ms(c.cpu?.time) })));
  e.family('container_memory_working_set_bytes', 'gauge', '[STABLE] Current working set of the container in bytes', containers.map(({ c, labels }) => ({ labels, value: c.memory?.workingSetBytes, ts: ms(c.memory?.time) })));
  e.family('container_start_time_seconds', 'gauge', '[STABLE] Start time of the container since unix epoch in seconds', containers.map(({ c, labels }) => ({ labels, value: (ms(c.startTime) ?? NaN) / 1000, ts: ms(c.cpu?.time) })));
  e.family('node_cpu_usage_seconds_total', 'counter', '[STABLE] Cumulative cpu time consumed by the node in core-seconds', [{ value: seconds(s.node.cpu?.usageCoreNanoSeconds), ts: ms(s.node.cpu?.time) }]);
  e.family('node_memory_working_set_bytes', 'gauge', '[STABLE] Current working set of the node in bytes', [{ value: s.node.memory?.workingSetBytes, ts: ms(s.node.memory?.time) }]);
  const pods = s.pods.map((p) => ({ p, labels: { namespace: p.podRef.namespace, pod: p.podRef.name } }));
  e.family('pod_cpu_usage_seconds_total', 'counter', '[STABLE] Cumulative cpu time consumed by the pod in core-seconds', pods.map(({ p, labels }) => ({ labels, value: seconds(p.cpu?.usageCoreNanoSeconds), ts: ms(p.cpu?.time) })));
  e.family('pod_memory_working_set_bytes', 'gauge', '[STABLE] Current working set of the pod in bytes', pods.map(({ p, labels }) => ({ labels, value: p.memory?.workingSetBytes, ts: ms(p.memory?.time) })));
  e.family('resource_scrape_error', 'gauge', '[STABLE] 1 if there was an error while getting container metrics, 0 otherwise', [{ value: 0 }]);
  return e.toString();
}

/** A /metrics/cadvisor subset: usage, and the limits the container runs with (from the pod spec). */
export function cadvisorMetrics(s: Summary, pods: Pod[]): string {
  const e = new Exposition();
  const byUid = new Map(pods.map((p) => [p.metadata.uid ?? '', p]));
  const rows = s.pods.flatMap((p) =>
    p.containers.map((c) => {
      const spec = byUid.get(p.podRef.uid)?.spec.containers.find((x) => x.name === c.name);
      return {
        c,
        spec,
        labels: { container: c.name, id: `/kubepods/pod${p.podRef.uid}/${c.name}`, image: spec?.image ?? '', name: c.name, namespace: p.podRef.namespace, pod: p.podRef.name },
      };
    }),
  );
  e.family('container_cpu_usage_seconds_total', 'counter', 'Cumulative cpu time consumed in seconds.', rows.map(({ c, labels }) => ({ labels: { ...labels, cpu: 'total' }, value: seconds(c.cpu?.usageCoreNanoSeconds), ts: ms(c.cpu?.time) })));
  e.family('container_memory_working_set_bytes', 'gauge', 'Current working set in bytes.', rows.map(({ c, labels }) => ({ labels, value: c.memory?.workingSetBytes, ts: ms(c.memory?.time) })));
  e.family('container_memory_usage_bytes', 'gauge', 'Current memory usage in bytes, including all memory regardless of when it was accessed', rows.map(({ c, labels }) => ({ labels, value: c.memory?.usageBytes, ts: ms(c.memory?.time) })));
  e.family('container_memory_rss', 'gauge', 'Size of RSS in bytes.', rows.map(({ c, labels }) => ({ labels, value: c.memory?.rssBytes, ts: ms(c.memory?.time) })));
  e.family('container_fs_usage_bytes', 'gauge', 'Number of bytes that are consumed by the container on this filesystem.', rows.map(({ c, labels }) => ({ labels: { ...labels, device: 'rootfs' }, value: (c.rootfs?.usedBytes ?? 0) + (c.logs?.usedBytes ?? 0), ts: ms(c.rootfs?.time) })));
  e.family('container_spec_memory_limit_bytes', 'gauge', 'Memory limit for the container.', rows.map(({ spec, labels }) => ({ labels, value: spec?.resources?.limits?.memory ? parseQuantity(spec.resources.limits.memory).value() : 0 })));
  return e.toString();
}

