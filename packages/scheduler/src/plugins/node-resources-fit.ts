import {
  MAX_NODE_SCORE,
  type FilterPlugin,
  type PluginFactory,
  type PreFilterPlugin,
  type PreScorePlugin,
  type ScorePlugin,
} from '../framework.js';
import type { NodeInfo } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';
import { CPU, EPHEMERAL, MEMORY } from '../resources.js';
import { Status } from '../status.js';
import { NodeResourcesBalancedAllocation, NodeResourcesFit } from './names.js';

// Shared, immutable filter results for the common rejections.
const INSUFFICIENT_CPU = Status.unschedulable('Insufficient cpu').withPlugin(NodeResourcesFit);
const INSUFFICIENT_MEMORY = Status.unschedulable('Insufficient memory').withPlugin(NodeResourcesFit);
const INSUFFICIENT_CPU_MEMORY = Status.unschedulable('Insufficient cpu', 'Insufficient memory').withPlugin(
  NodeResourcesFit,
);

export interface ResourceSpec {
  name: string;
  weight: number;
}

export interface NodeResourcesFitArgs {
  ignoredResources?: string[];
  ignoredResourceGroups?: string[];
  scoringStrategy?: {
    type?: 'LeastAllocated' | 'MostAllocated' | 'RequestedToCapacityRatio';
    resources?: ResourceSpec[];
    requestedToCapacityRatio?: { shape: { utilization: number; score: number }[] };
  };
}

export const DEFAULT_SCORING_RESOURCES: ResourceSpec[] = [
  { name: CPU, weight: 1 },
  { name: MEMORY, weight: 1 },
];

function podRequest(pi: PodInfo, name: string, nonZero: boolean): number {
  if (name === CPU) return nonZero ? pi.nonZeroCPU : pi.requests.milliCPU;
  if (name === MEMORY) return nonZero ? pi.nonZeroMem : pi.requests.memory;
  if (name === EPHEMERAL) return pi.requests.ephemeral;
  return pi.requests.scalar?.get(name) ?? 0;
}

function nodeAllocatable(n: NodeInfo, name: string): number {
  if (name === CPU) return n.allocatable.milliCPU;
  if (name === MEMORY) return n.allocatable.memory;
  if (name === EPHEMERAL) return n.allocatable.ephemeral;
  return n.allocatable.scalar?.get(name) ?? 0;
}

function nodeRequested(n: NodeInfo, name: string, nonZero: boolean): number {
  if (name === CPU) return nonZero ? n.nonZeroCPU : n.requested.milliCPU;
  if (name === MEMORY) return nonZero ? n.nonZeroMem : n.requested.memory;
  if (name === EPHEMERAL) return n.requested.ephemeral;
  return n.requested.scalar?.get(name) ?? 0;
}

/**
 * Fills parallel arrays of (requested, allocatable) for the scored resources; a resource the node
 * lacks, or an extended resource the pod does not ask for, is left at zero and skipped by scorers.
 */
function gather(
  pi: PodInfo,
  n: NodeInfo,
  resources: ResourceSpec[],
  useRequested: boolean,
  req: number[],
  alloc: number[],
): void {
  for (let i = 0; i < resources.length; i++) {
    const name = resources[i].name;
    const pr = podRequest(pi, name, !useRequested);
    if (pr === 0 && name !== CPU && name !== MEMORY) {
      req[i] = 0;
      alloc[i] = 0;
      continue;
    }
    alloc[i] = nodeAllocatable(n, name);
    req[i] = nodeRequested(n, name, !useRequested) + pr;
  }
}

type Scorer = (req: number[], alloc: number[]) => number;

function weighted(resources: ResourceSpec[], f: (req: number, cap: number) => number): Scorer {
  return (req, alloc) => {
    let score = 0;
    let wsum = 0;
    for (let i = 0; i < resources.length; i++) {
      if (alloc[i] === 0) continue;
      score += f(req[i], alloc[i]) * resources[i].weight;
      wsum += resources[i].weight;
    }
    return wsum === 0 ? 0 : Math.trunc(score / wsum);
  };
}

const leastRequested = (req: number, cap: number) =>
  cap === 0 || req > cap ? 0 : Math.trunc(((cap - req) * MAX_NODE_SCORE) / cap);
const mostRequested = (req: number, cap: number) => {
  if (cap === 0) return 0;
  // Above capacity counts as fully used, as in the reference scorer.
  return Math.trunc((Math.min(req, cap) * MAX_NODE_SCORE) / cap);
};

function brokenLinear(shape: { utilization: number; score: number }[]): (p: number) => number {
  return (p) => {
    for (let i = 0; i < shape.length; i++) {
      if (p <= shape[i].utilization) {
        if (i === 0) return shape[0].score;
        const a = shape[i - 1];
        const b = shape[i];
        return (
          a.score + Math.trunc(((b.score - a.score) * (p - a.utilization)) / (b.utilization - a.utilization))
        );
      }
    }
    return shape[shape.length - 1].score;
  };
}

export function balancedScore(req: number[], alloc: number[]): number {
  const fr: number[] = [];
  let total = 0;
  for (let i = 0; i < req.length; i++) {
    if (alloc[i] === 0) continue;
    const f = Math.min(req[i] / alloc[i], 1);
    total += f;
    fr.push(f);
  }
  let std = 0;
  if (fr.length === 2) std = Math.abs((fr[0] - fr[1]) / 2);
  else if (fr.length > 2) {
    const mean = total / fr.length;
    let s = 0;
    for (const f of fr) s += (f - mean) * (f - mean);
    std = Math.sqrt(s / fr.length);
  }
  return Math.trunc((1 - std) * MAX_NODE_SCORE);
}

type FitPlugin = PreFilterPlugin & FilterPlugin & PreScorePlugin & ScorePlugin;

export const newNodeResourcesFit: PluginFactory = (args: NodeResourcesFitArgs | undefined): FitPlugin => {
  const ignored = new Set(args?.ignoredResources ?? []);
  const ignoredGroups = new Set(args?.ignoredResourceGroups ?? []);
  const strategy = args?.scoringStrategy ?? {};
  const resources =
    strategy.resources && strategy.resources.length > 0 ? strategy.resources : DEFAULT_SCORING_RESOURCES;
  let scorer: Scorer;
  switch (strategy.type ?? 'LeastAllocated') {
    case 'MostAllocated':
      scorer = weighted(resources, mostRequested);
      break;
    case 'RequestedToCapacityRatio': {
      // Shape scores are 0..10 in the config; node scores are 0..100.
      const shape = (strategy.requestedToCapacityRatio?.shape ?? []).map((p) => ({
        utilization: p.utilization,
        score: p.score * (MAX_NODE_SCORE / 10),
      }));
      const f = brokenLinear(shape);
      scorer = weighted(resources, (req, cap) => {
        if (cap === 0 || req > cap) return f(100);
        return f(Math.trunc((req * 100) / cap));
      });
      break;
    }
    default:
      scorer = weighted(resources, leastRequested);
  }
  const req = new Array<number>(resources.length).fill(0);
  const alloc = new Array<number>(resources.length).fill(0);
  const isIgnored = (name: string) =>
    ignored.has(name) || (name.includes('/') && ignoredGroups.has(name.split('/')[0]));
  return {
    name: NodeResourcesFit,
    preFilter() {
      return null;
    },
    filter(_s, pi, n) {
      const r = pi.requests;
      const tooMany = n.pods.length + 1 > n.allowedPodNumber;
      const cpu = r.milliCPU > 0 && r.milliCPU > n.allocatable.milliCPU - n.requested.milliCPU;
      const mem = r.memory > 0 && r.memory > n.allocatable.memory - n.requested.memory;
      const eph = r.ephemeral > 0 && r.ephemeral > n.allocatable.ephemeral - n.requested.ephemeral;
      if (!tooMany && !cpu && !mem && !eph && r.scalar === null) return null;
      if (r.scalar === null && !tooMany && !eph) {
        if (cpu && !mem) return INSUFFICIENT_CPU;
        if (mem && !cpu) return INSUFFICIENT_MEMORY;
        return INSUFFICIENT_CPU_MEMORY;
      }
      // Slow path only when something does not fit (or extended resources are requested).
      const reasons: string[] = [];
      if (tooMany) reasons.push('Too many pods');
      if (cpu) reasons.push('Insufficient cpu');
      if (mem) reasons.push('Insufficient memory');
      if (eph) reasons.push('Insufficient ephemeral-storage');
      if (r.scalar) {
        for (const [name, v] of r.scalar) {
          if (v === 0 || isIgnored(name)) continue;
          const free = (n.allocatable.scalar?.get(name) ?? 0) - (n.requested.scalar?.get(name) ?? 0);
          if (v > free) reasons.push(`Insufficient ${name}`);
        }
      }
      return reasons.length > 0 ? Status.unschedulable(...reasons) : null;
    },
    preScore() {
      return null;
    },
    score(_s, pi, n) {
      gather(pi, n, resources, false, req, alloc);
      return scorer(req, alloc);
    },
    eventsToRegister: () => [
      { resource: 'Pod', action: 'Delete' },
      { resource: 'Node', action: '*' },
    ],
  };
};

export interface BalancedAllocationArgs {
  resources?: ResourceSpec[];
}

export const newBalancedAllocation: PluginFactory = (
  args: BalancedAllocationArgs | undefined,
): PreScorePlugin & ScorePlugin => {
  const resources = args?.resources && args.resources.length > 0 ? args.resources : DEFAULT_SCORING_RESOURCES;
  const req = new Array<number>(resources.length).fill(0);
  const alloc = new Array<number>(resources.length).fill(0);
  return {
    name: NodeResourcesBalancedAllocation,
    preScore(_s, pi) {
      // Best-effort pods would all pile onto one node if scored here.
      for (const r of resources) if (podRequest(pi, r.name, false) > 0) return null;
      return Status.skip();
    },
    score(_s, pi, n) {
      gather(pi, n, resources, true, req, alloc);
      return balancedScore(req, alloc);
    },
    eventsToRegister: () => [
      { resource: 'Pod', action: 'Delete' },
      { resource: 'Node', action: '*' },
    ],
  };
};
