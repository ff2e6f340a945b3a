// Stats RPCs: ContainerStats, ListContainerStats, PodSandboxStats, ListPodSandboxStats and the pod metrics.
import { cri } from '@kemu/proto';
import { matchesLabels } from './labels.js';
import type { RuntimeContext } from './runtime-context.js';
import { nowNs } from './time.js';
import type { Backend, ContainerRecord, SandboxRecord } from './types.js';

/**
 * A container without a process (created or exited) has no CPU or memory figures: like containerd 1.6's
 * ListContainerStats, its entry carries the attributes and the writable layer only.
 */
async function statsOf(ctx: RuntimeContext, c: ContainerRecord): Promise<cri.ContainerStats> {
  const ts = nowNs();
  const u = c.state === 'running' ? await ctx.backend.containerUsage(c) : undefined;
  return {
    attributes: { id: c.id, metadata: c.config.metadata, labels: c.config.labels ?? {}, annotations: c.config.annotations ?? {} },
    cpu: u ? { timestamp: ts, usageCoreNanoSeconds: { value: u.cpuCoreNanoSeconds }, usageNanoCores: { value: 0 } } : null,
    memory: u
      ? {
          timestamp: ts,
          workingSetBytes: { value: u.memoryWorkingSetBytes },
          usageBytes: { value: u.memoryUsageBytes },
          rssBytes: { value: u.rssBytes },
          availableBytes: { value: 0 },
          pageFaults: { value: 0 },
          majorPageFaults: { value: 0 },
        }
      : null,
    writableLayer: {
      timestamp: ts,
      fsId: { mountpoint: ctx.images.fsInfo().mountpoint },
      usedBytes: { value: 0 },
      inodesUsed: { value: 0 },
    },
  };
}

// containerd 1.6 fails ContainerStats for a container without a task ("unexpected metrics response: []");
// this shim answers it with the same entry ListContainerStats gives.
export async function containerStats(ctx: RuntimeContext, req: cri.ContainerStatsRequest): Promise<cri.ContainerStatsResponse> {
  return { stats: await statsOf(ctx, ctx.getContainer(req.containerId)) };
}

export async function listContainerStats(ctx: RuntimeContext, req: cri.ListContainerStatsRequest): Promise<cri.ListContainerStatsResponse> {
  // Like containerd, every container in the store reports stats; one without a process reports zero usage.
  const items = ctx.filterContainers(req.filter);
  return { stats: await Promise.all(items.map((c) => statsOf(ctx, c))) };
}

async function sandboxStatsOf(ctx: RuntimeContext, sb: SandboxRecord): Promise<cri.PodSandboxStats> {
  const ts = nowNs();
  const containers = await Promise.all(
    ctx.containersOf(sb.id)
      .filter((c) => c.state === 'running')
      .map((c) => statsOf(ctx, c)),
  );
  const usage = await Promise.all(
    ctx.containersOf(sb.id)
      .filter((c) => c.state === 'running')
      .map((c) => ctx.backend.containerUsage(c)),
  );
  const sum = (f: (u: (typeof usage)[number]) => number) => usage.reduce((a, u) => a + f(u), 0);
  const nets = sb.state === 'ready' ? await ctx.backend.networkUsage(sb) : [];
  const toIface = (n: (typeof nets)[number]) => ({
    name: n.name,
    rxBytes: { value: n.rxBytes },
    rxErrors: { value: n.rxErrors },
    txBytes: { value: n.txBytes },
    txErrors: { value: n.txErrors },
  });
  return {
    attributes: { id: sb.id, metadata: sb.config.metadata, labels: sb.config.labels ?? {}, annotations: sb.config.annotations ?? {} },
    linux: {
      cpu: { timestamp: ts, usageCoreNanoSeconds: { value: sum((u) => u.cpuCoreNanoSeconds) }, usageNanoCores: { value: 0 } },
      memory: {
        timestamp: ts,
        workingSetBytes: { value: sum((u) => u.memoryWorkingSetBytes) },
        usageBytes: { value: sum((u) => u.memoryUsageBytes) },
        rssBytes: { value: sum((u) => u.rssBytes) },
        availableBytes: { value: 0 },
        pageFaults: { value: 0 },
        majorPageFaults: { value: 0 },
      },
      network: {
        timestamp: ts,
        defaultInterface: nets.length ? toIface(nets.find((n) => n.name === 'eth0') ?? nets[0]) : null,
        interfaces: nets.map(toIface),
      },
      process: { timestamp: ts, processCount: { value: sum((u) => u.processCount) } },
      containers,
    },
  };
}

export async function podSandboxStats(ctx: RuntimeContext, req: cri.PodSandboxStatsRequest): Promise<cri.PodSandboxStatsResponse> {
  return { stats: await sandboxStatsOf(ctx, ctx.getSandbox(req.podSandboxId)) };
}

export async function listPodSandboxStats(ctx: RuntimeContext, req: cri.ListPodSandboxStatsRequest): Promise<cri.ListPodSandboxStatsResponse> {
  const f = req.filter;
  let items = ctx.sandboxes.matching(f?.labelSelector).filter((s) => s.state === 'ready');
  if (f?.id) {
    let full: string | undefined;
    try {
      full = ctx.sandboxIds.resolve(f.id);
    } catch {
      full = undefined;
    }
    items = items.filter((s) => s.id === full);
  }
  if (f?.labelSelector) items = items.filter((s) => matchesLabels(s.config.labels, f.labelSelector));
  return { stats: await Promise.all(items.map((s) => sandboxStatsOf(ctx, s))) };
}

export function listMetricDescriptors(): cri.ListMetricDescriptorsResponse {
  return { descriptors: METRICS.map(({ name, help }) => ({ name, help, labelKeys: ['container', 'pod', 'namespace'] })) };
}

export async function listPodSandboxMetrics(ctx: RuntimeContext): Promise<cri.ListPodSandboxMetricsResponse> {
  const podMetrics: cri.PodSandboxMetrics[] = [];
  const ts = nowNs();
  for (const sb of ctx.sandboxes.values()) {
    if (sb.state !== 'ready') continue;
    const m = sb.config.metadata ?? {};
    const containerMetrics: cri.ContainerMetrics[] = [];
    for (const c of ctx.containersOf(sb.id)) {
      if (c.state !== 'running') continue;
      const u = await ctx.backend.containerUsage(c);
      const labelValues = [c.config.metadata?.name ?? '', m.name ?? '', m.namespace ?? ''];
      containerMetrics.push({
        containerId: c.id,
        metrics: METRICS.map((d) => ({
          name: d.name,
          timestamp: ts,
          metricType: d.type,
          labelValues,
          value: { value: d.value(c, u) },
        })),
      });
    }
    podMetrics.push({ podSandboxId: sb.id, metrics: [], containerMetrics });
  }
  return { podMetrics };
}

const METRICS: {
  name: string;
  help: string;
  type: cri.MetricType;
  value: (c: ContainerRecord, u: Awaited<ReturnType<Backend['containerUsage']>>) => number;
}[] = [
  {
    name: 'container_cpu_usage_seconds_total',
    help: 'Cumulative cpu time consumed in seconds.',
    type: cri.MetricType.COUNTER,
    value: (_c, u) => Math.floor(u.cpuCoreNanoSeconds / 1e9),
  },
  {
    name: 'container_memory_working_set_bytes',
    help: 'Current working set in bytes.',
    type: cri.MetricType.GAUGE,
    value: (_c, u) => u.memoryWorkingSetBytes,
  },
  {
    name: 'container_start_time_seconds',
    help: 'Start time of the container since unix epoch in seconds.',
    type: cri.MetricType.GAUGE,
    value: (c) => Math.floor(c.startedAt / 1e9),
  },
];
