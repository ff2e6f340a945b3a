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

/** One label set's request series: its counts by response code and its duration histogram. */
interface Series {
  /** The label text, formatted once. */
  text: string;
  codes: Map<number, number>;
  /** Requests per bucket (not cumulative; text() sums them). */
  counts: number[];
  sum: number;
  count: number;
}

export class ApiMetrics {
  /** Series by their label values joined, so a request neither formats its labels nor hashes their text. */
  private readonly series = new Map<string, Series>();
  private readonly longRunning = new Map<string, number>();

  observe(labels: RequestLabels, code: number, seconds: number): void {
    const k = `${labels.verb}\u0000${labels.group}\u0000${labels.version}\u0000${labels.resource}\u0000${labels.subresource}\u0000${labels.scope}`;
    let s = this.series.get(k);
    if (!s) {
      s = { text: labelText({ ...labels, component: 'apiserver' } as unknown as Record<string, string>), codes: new Map(), counts: BUCKETS.map(() => 0), sum: 0, count: 0 };
      this.series.set(k, s);
    }
    s.codes.set(code, (s.codes.get(code) ?? 0) + 1);
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]) i++;
    if (i < BUCKETS.length) s.counts[i]++;
    s.sum += seconds;
    s.count++;
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
    for (const s of this.series.values()) for (const [code, v] of s.codes) out.push(`apiserver_request_total{${s.text},code="${code}"} ${v}`);
    out.push('# HELP apiserver_request_duration_seconds Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.');
    out.push('# TYPE apiserver_request_duration_seconds histogram');
    for (const h of this.series.values()) {
      const k = h.text;
      let cumulative = 0;
      BUCKETS.forEach((b, i) => out.push(`apiserver_request_duration_seconds_bucket{${k},le="${b}"} ${(cumulative += h.counts[i])}`));
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
