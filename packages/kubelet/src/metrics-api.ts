// metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics from a kubelet's Summary, as metrics-server builds
// them: CPU as a rate in nanocores, memory as the working set, stamped with the sample time and window.
import { Quantity, rfc3339 } from '@kemu/core';
import type { Summary } from './stats-summary.js';

export const METRICS_API_VERSION = 'metrics.k8s.io/v1beta1';

export interface NodeMetrics {
  apiVersion: typeof METRICS_API_VERSION;
  kind: 'NodeMetrics';
  metadata: { name: string; creationTimestamp: string; labels?: Record<string, string> };
  timestamp: string;
  window: string;
  usage: { cpu: string; memory: string };
}

export interface PodMetrics {
  apiVersion: typeof METRICS_API_VERSION;
  kind: 'PodMetrics';
  metadata: { name: string; namespace: string; creationTimestamp: string };
  timestamp: string;
  window: string;
  containers: { name: string; usage: { cpu: string; memory: string } }[];
}

/** metrics-server's quantities: CPU in nanocores (`250000000n` is 250m), memory in bytes as BinarySI. */
function usage(nanoCores: number | undefined, bytes: number | undefined) {
  return {
    cpu: new Quantity(BigInt(Math.round(nanoCores ?? 0)), 'DecimalSI').toString(),
    memory: Quantity.fromValue(Math.round(bytes ?? 0), 'BinarySI').toString(),
  };
}

export function nodeMetrics(s: Summary, windowSeconds = 10): NodeMetrics {
  return {
    apiVersion: METRICS_API_VERSION,
    kind: 'NodeMetrics',
    metadata: { name: s.node.nodeName, creationTimestamp: rfc3339() },
    timestamp: s.node.cpu?.time ?? rfc3339(),
    window: `${windowSeconds}s`,
    usage: usage(s.node.cpu?.usageNanoCores, s.node.memory?.workingSetBytes),
  };
}

export function podMetrics(s: Summary, windowSeconds = 10): PodMetrics[] {
  return s.pods.map((p) => ({
    apiVersion: METRICS_API_VERSION,
    kind: 'PodMetrics',
    metadata: { name: p.podRef.name, namespace: p.podRef.namespace, creationTimestamp: rfc3339() },
    timestamp: p.cpu?.time ?? rfc3339(),
    window: `${windowSeconds}s`,
    containers: p.containers.map((c) => ({ name: c.name, usage: usage(c.cpu?.usageNanoCores, c.memory?.workingSetBytes) })),
  }));
}
