// Resource metrics read the way metrics-server reads them: each node's kubelet Summary (/stats/summary at the
// endpoint the Node carries) turned into metrics.k8s.io NodeMetrics and PodMetrics. `kemu top` prints them;
// the API server serves them as metrics.k8s.io/v1beta1 for kubectl top.
import type { Node } from '@kemu/core';
import { KUBELET_ENDPOINT_ANNOTATION, nodeMetrics, type NodeMetrics, podMetrics, type PodMetrics, type Summary } from '@kemu/kubelet';

async function summaryOf(node: Node): Promise<Summary | undefined> {
  const url = node.metadata.annotations?.[KUBELET_ENDPOINT_ANNOTATION];
  if (!url) return undefined;
  try {
    const res = await fetch(`${url}/stats/summary`, { signal: AbortSignal.timeout(10_000) });
    return res.ok ? ((await res.json()) as Summary) : undefined;
  } catch {
    return undefined;
  }
}

/** NodeMetrics and PodMetrics of those of `nodes` whose kubelet answers (what the API server serves as metrics.k8s.io). */
export async function metricsOfNodes(nodes: Node[]): Promise<{ nodes: Node[]; nodeMetrics: Map<string, NodeMetrics>; podMetrics: PodMetrics[] }> {
  const summaries = await Promise.all(nodes.map(summaryOf));
  const nm = new Map<string, NodeMetrics>();
  const pm: PodMetrics[] = [];
  summaries.forEach((s, i) => {
    if (!s) return;
    nm.set(nodes[i].metadata.name ?? '', nodeMetrics(s));
    pm.push(...podMetrics(s));
  });
  return { nodes, nodeMetrics: nm, podMetrics: pm };
}
