// Small builders for tests and benchmarks: nodes and pods with the fields scheduling reads.
import type { Container, Node, Pod, Taint } from './types.js';

export interface NodeOpts {
  cpu?: string;
  memory?: string;
  pods?: number;
  labels?: Record<string, string>;
  taints?: Taint[];
  unschedulable?: boolean;
  images?: { names: string[]; sizeBytes: number }[];
  extra?: Record<string, string>;
}

export function makeNode(name: string, o: NodeOpts = {}): Node {
  const alloc = {
    cpu: o.cpu ?? '4',
    memory: o.memory ?? '32Gi',
    pods: String(o.pods ?? 110),
    ...(o.extra ?? {}),
  };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...(o.labels ?? {}) } },
    spec: { taints: o.taints, unschedulable: o.unschedulable },
    status: { capacity: alloc, allocatable: alloc, images: o.images },
  };
}

export interface PodOpts {
  namespace?: string;
  cpu?: string;
  memory?: string;
  labels?: Record<string, string>;
  nodeName?: string;
  priority?: number;
  spec?: Partial<Pod['spec']>;
  containers?: Container[];
  startTime?: string;
}

export function makePod(name: string, o: PodOpts = {}): Pod {
  const requests: Record<string, string> = {};
  if (o.cpu) requests.cpu = o.cpu;
  if (o.memory) requests.memory = o.memory;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: o.namespace ?? 'default', uid: `uid-${name}`, labels: o.labels },
    spec: {
      containers: o.containers ?? [
        { name: 'c', image: 'registry.k8s.io/pause:3.9', resources: { requests } },
      ],
      nodeName: o.nodeName,
      priority: o.priority,
      ...(o.spec ?? {}),
    },
    status: o.startTime ? { startTime: o.startTime } : {},
  };
}
