// Resource arithmetic for scheduling: quantities parsed once into plain numbers (CPU in millicores,
// everything else in whole units), and a pod's effective request with the init-container max rule.
import type { Container, Pod } from './types.js';

const DECIMAL: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};
const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const QTY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

const cache = new Map<string, number>();

/** Parse a quantity to a number of base units; throws a one-line error on malformed input. */
export function parseQuantity(q: string | number, milli = false): number {
  if (typeof q === 'number') return milli ? Math.ceil(q * 1000) : Math.ceil(q);
  const key = milli ? `m:${q}` : q;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const m = QTY.exec(String(q).trim());
  if (!m)
    throw new Error(
      `invalid quantity "${q}": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
    );
  let v = Number(m[1]);
  if (m[2] !== undefined) v *= 10 ** Number(m[2]);
  else if (m[3] !== undefined) v *= DECIMAL[m[3]] ?? BINARY[m[3]];
  // Round up like Kubernetes Value()/MilliValue(); the epsilon absorbs float noise such as 0.1*1000.
  const scaled = milli ? v * 1000 : v;
  const out = Math.ceil(scaled - 1e-9);
  if (cache.size > 100_000) cache.clear();
  cache.set(key, out);
  return out;
}

export const CPU = 'cpu';
export const MEMORY = 'memory';
export const EPHEMERAL = 'ephemeral-storage';
export const PODS = 'pods';

/** Requests as numbers; `scalar` holds extended resources and hugepages. */
export interface Resource {
  milliCPU: number;
  memory: number;
  ephemeral: number;
  scalar: Map<string, number> | null;
}

export function emptyResource(): Resource {
  return { milliCPU: 0, memory: 0, ephemeral: 0, scalar: null };
}

export function resourceFromList(list: Record<string, string | number> | undefined): Resource {
  const r = emptyResource();
  if (!list) return r;
  for (const name in list) {
    const v = list[name];
    if (name === CPU) r.milliCPU = parseQuantity(v, true);
    else if (name === MEMORY) r.memory = parseQuantity(v);
    else if (name === EPHEMERAL) r.ephemeral = parseQuantity(v);
    else if (name !== PODS && isScalarResource(name)) {
      r.scalar ??= new Map();
      r.scalar.set(name, parseQuantity(v));
    }
  }
  return r;
}

/** Extended resources (domain-qualified, not kubernetes.io), hugepages and attachable-volume limits. */
export function isScalarResource(name: string): boolean {
  if (name.startsWith('hugepages-') || name.startsWith('attachable-volumes-')) return true;
  return name.includes('/') && !name.startsWith('kubernetes.io/') && !name.startsWith('requests.');
}

export function addResource(a: Resource, b: Resource, sign = 1): void {
  a.milliCPU += sign * b.milliCPU;
  a.memory += sign * b.memory;
  a.ephemeral += sign * b.ephemeral;
  if (b.scalar) {
    a.scalar ??= new Map();
    for (const [k, v] of b.scalar) a.scalar.set(k, (a.scalar.get(k) ?? 0) + sign * v);
  }
}

function maxResource(a: Resource, b: Resource): void {
  a.milliCPU = Math.max(a.milliCPU, b.milliCPU);
  a.memory = Math.max(a.memory, b.memory);
  a.ephemeral = Math.max(a.ephemeral, b.ephemeral);
  if (b.scalar) {
    a.scalar ??= new Map();
    for (const [k, v] of b.scalar) a.scalar.set(k, Math.max(a.scalar.get(k) ?? 0, v));
  }
}

export function cloneResource(r: Resource): Resource {
  return {
    milliCPU: r.milliCPU,
    memory: r.memory,
    ephemeral: r.ephemeral,
    scalar: r.scalar ? new Map(r.scalar) : null,
  };
}

/** Default requests assumed for scoring when a container sets none (kube-scheduler's non-zero rule). */
export const DEFAULT_MILLI_CPU_REQUEST = 100;
export const DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024;

function containerRequest(c: Container, nonZero: boolean): Resource {
  const req = c.resources?.requests;
  const r = resourceFromList(req);
  if (nonZero) {
    if (!req || req.cpu === undefined) r.milliCPU = DEFAULT_MILLI_CPU_REQUEST;
    if (!req || req.memory === undefined) r.memory = DEFAULT_MEMORY_REQUEST;
  }
  return r;
}

/**
 * Effective pod request: sum of app containers and sidecars, or the largest init-container step if
 * bigger (an init container runs alongside the sidecars started before it), plus pod overhead.
 */
export function podRequests(pod: Pod, nonZero = false): Resource {
  const sum = emptyResource();
  for (const c of pod.spec.containers ?? []) addResource(sum, containerRequest(c, nonZero));
  const inits = pod.spec.initContainers;
  if (inits && inits.length > 0) {
    const sidecars = emptyResource();
    const initMax = emptyResource();
    for (const c of inits) {
      const r = containerRequest(c, nonZero);
      if (c.restartPolicy === 'Always') {
        addResource(sidecars, r);
        maxResource(initMax, sidecars);
      } else {
        const step = cloneResource(r);
        addResource(step, sidecars);
        maxResource(initMax, step);
      }
    }
    addResource(sum, sidecars);
    maxResource(sum, initMax);
  }
  if (pod.spec.overhead) addResource(sum, resourceFromList(pod.spec.overhead));
  return sum;
}
