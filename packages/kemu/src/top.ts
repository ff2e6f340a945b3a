// `kemu top nodes|pods`: what `kubectl top` shows, read the way metrics-server reads it, from each node's
// kubelet (/stats/summary at the endpoint the Node carries), turned into metrics.k8s.io NodeMetrics and
// PodMetrics; percentages are of the node's allocatable, as kubectl computes them.
import { type Node, parseQuantity } from '@kemu/core';
import type { NodeMetrics, PodMetrics } from '@kemu/kubelet';
import { client, type Out, stdio, UsageError } from './commands.js';
import { table } from './printers.js';
import { metricsOfNodes } from './resource-metrics.js';

export interface TopOptions {
  stateDir?: string;
  namespace?: string;
  allNamespaces?: boolean;
  containers?: boolean;
}

const cpu = (q: string) => `${parseQuantity(q).milliValue()}m`;
const mem = (q: string) => `${Math.floor(parseQuantity(q).value() / 2 ** 20)}Mi`;
const pct = (used: string, of: string | undefined) => {
  const total = of ? parseQuantity(of).milliValue() : 0;
  return total > 0 ? `${Math.floor((parseQuantity(used).milliValue() * 100) / total)}%` : '<unknown>';
};

/** NodeMetrics and PodMetrics of every node whose kubelet answers. */
export async function collectMetrics(stateDir?: string): Promise<{ nodes: Node[]; nodeMetrics: Map<string, NodeMetrics>; podMetrics: PodMetrics[] }> {
  return metricsOfNodes((await client(stateDir).list('Node', {})).items as Node[]);
}

export async function top(what: string, o: TopOptions, out: Out = stdio): Promise<void> {
  const kind = ['node', 'nodes', 'no'].includes(what) ? 'nodes' : ['pod', 'pods', 'po'].includes(what) ? 'pods' : undefined;
  if (!kind) throw new UsageError(`unknown resource type ${JSON.stringify(what)}: kemu top takes nodes or pods`);
  const m = await collectMetrics(o.stateDir);
  if (!m.nodeMetrics.size) throw new UsageError('error: Metrics API not available');
  if (kind === 'nodes') {
    const rows = m.nodes.map((n) => {
      const x = m.nodeMetrics.get(n.metadata.name ?? '');
      if (!x) return [n.metadata.name ?? '', '<unknown>', '<unknown>', '<unknown>', '<unknown>'];
      const a = n.status?.allocatable ?? {};
      return [n.metadata.name ?? '', cpu(x.usage.cpu), pct(x.usage.cpu, a.cpu), mem(x.usage.memory), pct(x.usage.memory, a.memory)];
    });
    out.log(table(['NAME', 'CPU(cores)', 'CPU(%)', 'MEMORY(bytes)', 'MEMORY(%)'], rows));
    return;
  }
  const ns = o.allNamespaces ? undefined : (o.namespace ?? 'default');
  const pods = m.podMetrics.filter((p) => ns === undefined || p.metadata.namespace === ns).sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`));
  if (!pods.length) {
    out.err(ns ? `No resources found in ${ns} namespace.` : 'No resources found');
    return;
  }
  const sum = (p: PodMetrics, r: 'cpu' | 'memory') => p.containers.reduce((a, c) => a.add(c.usage[r]), parseQuantity('0')).toString();
  const lead = (p: PodMetrics) => (o.allNamespaces ? [p.metadata.namespace] : []);
  const headers = [...(o.allNamespaces ? ['NAMESPACE'] : []), ...(o.containers ? ['POD', 'NAME'] : ['NAME']), 'CPU(cores)', 'MEMORY(bytes)'];
  const rows = o.containers
    ? pods.flatMap((p) => p.containers.map((c) => [...lead(p), p.metadata.name, c.name, cpu(c.usage.cpu), mem(c.usage.memory)]))
    : pods.map((p) => [...lead(p), p.metadata.name, cpu(sum(p, 'cpu')), mem(sum(p, 'memory'))]);
  out.log(table(headers, rows));
}
