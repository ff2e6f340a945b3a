// Pod usage for the horizontal pod autoscaler, read from each node's CRI runtime the way metrics-server
// reads kubelets: cumulative CPU of every container of the pod, turned into a rate between two samples, and
// the working set for memory. A pod's first sample has no rate yet (as with metrics-server).
import type { Pod } from '@kemu/core';
import type { MetricsSource, PodUsage } from '@kemu/controllers';
import type { cri, PromiseApi } from '@kemu/proto';

type Runtime = PromiseApi<cri.RuntimeServiceMethods>;

const num = (v: unknown): number => (typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : Number(v ?? 0));

export class RuntimePodMetrics implements MetricsSource {
  /** Last sample per container id: cumulative CPU core-nanoseconds and its timestamp (ns). */
  private readonly last = new Map<string, { cpu: number; at: number }>();

  constructor(private readonly runtimeOf: (node: string) => Runtime | undefined) {}

  async podUsage(_namespace: string, pods: Pod[]): Promise<Map<string, PodUsage>> {
    const out = new Map<string, PodUsage>();
    const byNode = new Map<string, Pod[]>();
    for (const p of pods) if (p.spec.nodeName) byNode.set(p.spec.nodeName, [...(byNode.get(p.spec.nodeName) ?? []), p]);
    for (const [node, list] of byNode) {
      const rt = this.runtimeOf(node);
      if (!rt) continue;
      const uids = new Map(list.map((p) => [p.metadata.uid!, p]));
      const stats = (await rt.ListContainerStats({ filter: undefined } as cri.ListContainerStatsRequest)).stats ?? [];
      const perPod = new Map<string, { cpu?: number; mem: number; missing: boolean }>();
      for (const s of stats) {
        const pod = uids.get(s.attributes?.labels?.['io.kubernetes.pod.uid'] ?? '');
        const id = s.attributes?.id;
        if (!pod || !s.cpu || !id) continue;
        const cpu = num(s.cpu.usageCoreNanoSeconds?.value);
        const at = num(s.cpu.timestamp);
        const prev = this.last.get(id);
        this.last.set(id, { cpu, at });
        const agg = perPod.get(pod.metadata.name!) ?? { cpu: 0, mem: 0, missing: false };
        if (!prev || at <= prev.at) agg.missing = true;
        else agg.cpu = (agg.cpu ?? 0) + ((cpu - prev.cpu) / (at - prev.at)) * 1000;
        agg.mem += num(s.memory?.workingSetBytes?.value);
        perPod.set(pod.metadata.name!, agg);
      }
      for (const [name, agg] of perPod) out.set(name, { ...(agg.missing ? {} : { cpuMillis: Math.round(agg.cpu ?? 0) }), memoryBytes: agg.mem });
    }
    return out;
  }
}
