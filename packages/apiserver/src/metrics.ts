// Request metrics in Prometheus text format (/metrics), named as kube-apiserver names them:
// apiserver_request_total (by verb, group, version, resource, subresource, scope, code) and
// apiserver_request_duration_seconds (a histogram by verb, group, version, resource, subresource, scope),
// plus apiserver_longrunning_requests for open watches and streams.
const BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];

export interface RequestLabels {
  verb: string;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  scope: string;
}

function labelText(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
    .join(',');
}

export class ApiMetrics {
  /** Label texts by their values joined, so a request does not format its labels again. */
  private readonly labelCache = new Map<string, string>();
  private readonly totals = new Map<string, number>();
  private readonly durations = new Map<string, { counts: number[]; sum: number; count: number }>();
  private readonly longRunning = new Map<string, number>();

  private labels(labels: RequestLabels): string {
    const k = `${labels.verb}\u0000${labels.group}\u0000${labels.version}\u0000${labels.resource}\u0000${labels.subresource}\u0000${labels.scope}`;
    let text = this.labelCache.get(k);
    if (text === undefined) this.labelCache.set(k, (text = labelText({ ...labels, component: 'apiserver' } as unknown as Record<string, string>)));
    return text;
  }

  observe(labels: RequestLabels, code: number, seconds: number): void {
    const dk = this.labels(labels);
    const tk = `${dk},code="${code}"`;
    this.totals.set(tk, (this.totals.get(tk) ?? 0) + 1);
    let h = this.durations.get(dk);
    if (!h) this.durations.set(dk, (h = { counts: BUCKETS.map(() => 0), sum: 0, count: 0 }));
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]) h.counts[i]++;
    h.sum += seconds;
    h.count++;
  }

  /** Marks a long-running request (watch, stream) open; call the returned function when it ends. */
  longRunningStarted(labels: RequestLabels): () => void {
    const k = labelText({ ...labels, component: 'apiserver' } as Record<string, string>);
    this.longRunning.set(k, (this.longRunning.get(k) ?? 0) + 1);
    return () => this.longRunning.set(k, (this.longRunning.get(k) ?? 1) - 1);
  }

  text(): string {
    const out: string[] = [];
    out.push('# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.');
    out.push('# TYPE apiserver_request_total counter');
    for (const [k, v] of this.totals) out.push(`apiserver_request_total{${k}} ${v}`);
    out.push('# HELP apiserver_request_duration_seconds Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.');
    out.push('# TYPE apiserver_request_duration_seconds histogram');
    for (const [k, h] of this.durations) {
      BUCKETS.forEach((b, i) => out.push(`apiserver_request_duration_seconds_bucket{${k},le="${b}"} ${h.counts[i]}`));
      out.push(`apiserver_request_duration_seconds_bucket{${k},le="+Inf"} ${h.count}`);
      out.push(`apiserver_request_duration_seconds_sum{${k}} ${h.sum}`);
      out.push(`apiserver_request_duration_seconds_count{${k}} ${h.count}`);
    }
    out.push('# HELP apiserver_longrunning_requests Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component.');
    out.push('# TYPE apiserver_longrunning_requests gauge');
    for (const [k, v] of this.longRunning) out.push(`apiserver_longrunning_requests{${k}} ${v}`);
    return `${out.join('\n')}\n`;
  }
}
