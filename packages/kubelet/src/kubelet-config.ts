// The kubelet's configuration file (kubelet.config.k8s.io/v1beta1 KubeletConfiguration): decoding with the
// upstream defaults, validation in the upstream wording, eviction thresholds, and the node-allocatable
// reservation (capacity - kubeReserved - systemReserved - hard eviction) the kubelet publishes.
import fs from 'node:fs';
import { parseQuantity, Quantity } from '@kemu/core';
import { parse as parseYaml } from 'yaml';

export const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
export const KUBELET_CONFIG_KIND = 'KubeletConfiguration';

export type CgroupDriver = 'cgroupfs' | 'systemd';
export type CpuManagerPolicy = 'none' | 'static';
export type MemoryManagerPolicy = 'None' | 'Static';
export type TopologyManagerPolicy = 'none' | 'best-effort' | 'restricted' | 'single-numa-node';

/** The fields of KubeletConfiguration this kubelet acts on, with upstream JSON names. */
export interface KubeletConfiguration {
  apiVersion: typeof KUBELET_CONFIG_API_VERSION;
  kind: typeof KUBELET_CONFIG_KIND;
  kubeReserved: Record<string, string>;
  systemReserved: Record<string, string>;
  reservedSystemCPUs: string;
  enforceNodeAllocatable: string[];
  evictionHard: Record<string, string>;
  evictionSoft: Record<string, string>;
  evictionSoftGracePeriod: Record<string, string>;
  evictionMinimumReclaim: Record<string, string>;
  evictionPressureTransitionPeriod: string;
  evictionMaxPodGracePeriod: number;
  mergeDefaultEvictionSettings: boolean;
  maxPods: number;
  podPidsLimit: number;
  cgroupDriver: CgroupDriver;
  cgroupsPerQOS: boolean;
  cgroupRoot: string;
  cpuCFSQuota: boolean;
  cpuCFSQuotaPeriod: string;
  cpuManagerPolicy: CpuManagerPolicy;
  memoryManagerPolicy: MemoryManagerPolicy;
  topologyManagerPolicy: TopologyManagerPolicy;
  topologyManagerScope: 'container' | 'pod';
  imageGCHighThresholdPercent: number;
  imageGCLowThresholdPercent: number;
  imageMinimumGCAge: string;
  clusterDNS: string[];
  clusterDomain: string;
}

/** Upstream's default hard eviction thresholds (pkg/kubelet/apis/config/v1beta1 defaults, Linux). */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = Object.freeze({
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
  'imagefs.inodesFree': '5%',
});

export function defaultKubeletConfiguration(): KubeletConfiguration {
  return {
    apiVersion: KUBELET_CONFIG_API_VERSION,
    kind: KUBELET_CONFIG_KIND,
    kubeReserved: {},
    systemReserved: {},
    reservedSystemCPUs: '',
    enforceNodeAllocatable: ['pods'],
    evictionHard: { ...DEFAULT_EVICTION_HARD },
    evictionSoft: {},
    evictionSoftGracePeriod: {},
    evictionMinimumReclaim: {},
    evictionPressureTransitionPeriod: '5m0s',
    evictionMaxPodGracePeriod: 0,
    mergeDefaultEvictionSettings: false,
    maxPods: 110,
    podPidsLimit: -1,
    cgroupDriver: 'cgroupfs',
    cgroupsPerQOS: true,
    cgroupRoot: '/',
    cpuCFSQuota: true,
    cpuCFSQuotaPeriod: '100ms',
    cpuManagerPolicy: 'none',
    memoryManagerPolicy: 'None',
    topologyManagerPolicy: 'none',
    topologyManagerScope: 'container',
    imageGCHighThresholdPercent: 85,
    imageGCLowThresholdPercent: 80,
    imageMinimumGCAge: '2m0s',
    clusterDNS: [],
    clusterDomain: '',
  };
}

/** A configuration file that cannot be used; the message names the file and the offending field. */
export class KubeletConfigError extends Error {
  override readonly name = 'KubeletConfigError';
}

/** Eviction signals the kubelet knows (pkg/kubelet/eviction/api). */
export const EVICTION_SIGNALS = [
  'memory.available',
  'allocatableMemory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'containerfs.available',
  'containerfs.inodesFree',
  'pid.available',
] as const;
export type EvictionSignal = (typeof EVICTION_SIGNALS)[number];

/** One threshold: signal < quantity, or signal < percentage of capacity. */
export interface EvictionThreshold {
  signal: EvictionSignal;
  /** Absolute amount (bytes, inodes or pids), when given as a quantity. */
  quantity?: Quantity;
  /** Fraction of capacity in [0, 1], when given as a percentage. */
  percentage?: number;
  /** Soft thresholds only: how long the signal must stay crossed before pods are evicted. */
  gracePeriodMs: number;
  /** How much beyond the threshold to reclaim once crossed. */
  minReclaim?: { quantity?: Quantity; percentage?: number };
  hard: boolean;
}

const DURATION_UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses a Go duration ("1m30s", "100ms", "0") into milliseconds. */
export function parseGoDuration(text: string, field: string): number {
  const s = String(text).trim();
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;
  let total = 0;
  let pos = 0;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    sign = s[0] === '-' ? -1 : 1;
    pos = 1;
  }
  if (pos >= s.length) throw new KubeletConfigError(`${field}: invalid duration ${JSON.stringify(text)}`);
  while (pos < s.length) {
    re.lastIndex = pos;
    const m = re.exec(s);
    if (!m) throw new KubeletConfigError(`${field}: invalid duration ${JSON.stringify(text)}`);
    total += Number(m[1]) * DURATION_UNITS[m[2]];
    pos = re.lastIndex;
  }
  return sign * total;
}

function parseThresholdValue(signal: string, value: string, what: string): { quantity?: Quantity; percentage?: number } {
  const v = String(value).trim();
  if (v.endsWith('%')) {
    const pct = Number(v.slice(0, -1));
    if (!Number.isFinite(pct) || v.length === 1) throw new KubeletConfigError(`${what}: invalid percentage ${JSON.stringify(v)} for signal ${signal}`);
    if (pct < 0) throw new KubeletConfigError(`${what}: eviction percentage threshold ${signal} must be >= 0%: ${v}`);
    if (pct > 100) throw new KubeletConfigError(`${what}: eviction percentage threshold ${signal} must be <= 100%: ${v}`);
    return { percentage: pct / 100 };
  }
  let q: Quantity;
  try {
    q = parseQuantity(v);
  } catch {
    throw new KubeletConfigError(`${what}: invalid quantity ${JSON.stringify(v)} for signal ${signal}`);
  }
  if (q.nanos < 0n) throw new KubeletConfigError(`${what}: eviction threshold ${signal} cannot be negative: ${v}`);
  return { quantity: q };
}

function checkSignal(signal: string, what: string): EvictionSignal {
  if (!(EVICTION_SIGNALS as readonly string[]).includes(signal)) throw new KubeletConfigError(`${what}: unsupported eviction signal ${signal}`);
  return signal as EvictionSignal;
}

/** The hard and soft thresholds of a configuration, as upstream's ParseThresholdConfig builds them. */
export function evictionThresholds(c: KubeletConfiguration): EvictionThreshold[] {
  const out: EvictionThreshold[] = [];
  const reclaim = new Map<string, { quantity?: Quantity; percentage?: number }>();
  for (const [signal, v] of Object.entries(c.evictionMinimumReclaim)) {
    checkSignal(signal, 'evictionMinimumReclaim');
    reclaim.set(signal, parseThresholdValue(signal, v, 'evictionMinimumReclaim'));
  }
  for (const [signal, v] of Object.entries(c.evictionHard)) {
    const s = checkSignal(signal, 'evictionHard');
    const t = parseThresholdValue(signal, v, 'evictionHard');
    // A zero threshold disables the signal (upstream drops it).
    if ((t.quantity && t.quantity.isZero()) || t.percentage === 0) continue;
    out.push({ signal: s, ...t, gracePeriodMs: 0, minReclaim: reclaim.get(signal), hard: true });
  }
  for (const [signal, v] of Object.entries(c.evictionSoft)) {
    const s = checkSignal(signal, 'evictionSoft');
    const t = parseThresholdValue(signal, v, 'evictionSoft');
    const grace = c.evictionSoftGracePeriod[signal];
    if (grace === undefined) throw new KubeletConfigError(`evictionSoft: threshold for signal ${signal} must have a grace period in evictionSoftGracePeriod`);
    const gracePeriodMs = parseGoDuration(grace, `evictionSoftGracePeriod[${signal}]`);
    if (gracePeriodMs < 0) throw new KubeletConfigError(`evictionSoftGracePeriod[${signal}]: must be positive: ${grace}`);
    out.push({ signal: s, ...t, gracePeriodMs, minReclaim: reclaim.get(signal), hard: false });
  }
  for (const signal of Object.keys(c.evictionSoftGracePeriod)) {
    checkSignal(signal, 'evictionSoftGracePeriod');
    if (!(signal in c.evictionSoft)) throw new KubeletConfigError(`evictionSoftGracePeriod: grace period for signal ${signal} has no evictionSoft threshold`);
  }
  return out;
}

/** The amount a threshold stands for, given the signal's capacity. */
export function thresholdAmount(t: { quantity?: Quantity; percentage?: number }, capacity: number): number {
  if (t.quantity) return t.quantity.value();
  return Math.round((t.percentage ?? 0) * capacity);
}

/**
 * What node allocatable holds back from capacity (upstream GetNodeAllocatableReservation): kubeReserved +
 * systemReserved, plus the hard eviction thresholds of memory.available (memory) and nodefs.available
 * (ephemeral-storage).
 */
export function allocatableReservation(c: KubeletConfiguration, capacity: Record<string, string>): Record<string, string> {
  const sum = new Map<string, bigint>();
  const add = (k: string, q: Quantity) => sum.set(k, (sum.get(k) ?? 0n) + q.nanos);
  for (const m of [c.kubeReserved, c.systemReserved]) for (const [k, v] of Object.entries(m)) add(k, parseQuantity(v));
  const evictionFor: Record<string, string> = { 'memory.available': 'memory', 'nodefs.available': 'ephemeral-storage' };
  for (const t of evictionThresholds(c)) {
    const resource = t.hard ? evictionFor[t.signal] : undefined;
    if (!resource || capacity[resource] === undefined) continue;
    add(resource, Quantity.fromValue(thresholdAmount(t, parseQuantity(capacity[resource]).value())));
  }
  const out: Record<string, string> = {};
  for (const [k, nanos] of sum) out[k] = new Quantity(nanos, k === 'cpu' ? 'DecimalSI' : 'BinarySI').toString();
  return out;
}

/** Node capacity as the kubelet reports it: the machine's, with `pods` set to maxPods. */
export function nodeCapacity(c: KubeletConfiguration, machine: Record<string, string>): Record<string, string> {
  return { ...machine, pods: String(c.maxPods) };
}

const KNOWN_FIELDS = new Set(Object.keys(defaultKubeletConfiguration()));

type Raw = Record<string, unknown>;

function stringMap(raw: Raw, field: string): Record<string, string> | undefined {
  const v = raw[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw new KubeletConfigError(`${field}: must be a map of strings`);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v as Raw)) {
    if (typeof x !== 'string' && typeof x !== 'number') throw new KubeletConfigError(`${field}[${k}]: must be a string`);
    out[k] = String(x);
  }
  return out;
}

function pick<T>(raw: Raw, field: string, type: 'string' | 'number' | 'boolean'): T | undefined {
  const v = raw[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== type) throw new KubeletConfigError(`${field}: must be a ${type}, got ${JSON.stringify(v)}`);
  if (type === 'number' && !Number.isInteger(v)) throw new KubeletConfigError(`${field}: must be an integer, got ${v}`);
  return v as T;
}

function oneOf<T extends string>(raw: Raw, field: string, allowed: readonly T[]): T | undefined {
  const v = pick<string>(raw, field, 'string');
  if (v === undefined) return undefined;
  if (!allowed.includes(v as T)) throw new KubeletConfigError(`${field}: unsupported value ${JSON.stringify(v)}: supported values: ${allowed.map((a) => JSON.stringify(a)).join(', ')}`);
  return v as T;
}

/** Upstream's ValidateKubeletConfiguration, for the fields this kubelet acts on. */
export function validateKubeletConfiguration(c: KubeletConfiguration): void {
  const errs: string[] = [];
  const pct = (f: 'imageGCHighThresholdPercent' | 'imageGCLowThresholdPercent', flag: string) => {
    if (c[f] < 0 || c[f] > 100) errs.push(`${f} (${flag}) ${c[f]} must be between 0 and 100, inclusive`);
  };
  pct('imageGCHighThresholdPercent', '--image-gc-high-threshold');
  pct('imageGCLowThresholdPercent', '--image-gc-low-threshold');
  if (c.imageGCLowThresholdPercent >= c.imageGCHighThresholdPercent) {
    errs.push(`imageGCLowThresholdPercent (--image-gc-low-threshold) ${c.imageGCLowThresholdPercent} must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) ${c.imageGCHighThresholdPercent}`);
  }
  if (c.maxPods < 0) errs.push(`maxPods (--max-pods) ${c.maxPods} must not be a negative number`);
  if (c.podPidsLimit === 0 || c.podPidsLimit < -1) errs.push(`podPidsLimit (--pod-max-pids) ${c.podPidsLimit} must be -1 (unlimited) or a positive number`);
  if (c.evictionMaxPodGracePeriod < 0) errs.push(`evictionMaxPodGracePeriod (--eviction-max-pod-grace-period) ${c.evictionMaxPodGracePeriod} must not be a negative number`);
  const period = parseGoDuration(c.cpuCFSQuotaPeriod, 'cpuCFSQuotaPeriod');
  if (period < 1 || period > 1000) errs.push(`cpuCFSQuotaPeriod (--cpu-cfs-quota-period) ${c.cpuCFSQuotaPeriod} must be between 1ms and 1sec, inclusive`);
  parseGoDuration(c.evictionPressureTransitionPeriod, 'evictionPressureTransitionPeriod');
  if (!c.cgroupsPerQOS && c.enforceNodeAllocatable.length) {
    errs.push('enforceNodeAllocatable (--enforce-node-allocatable) is not supported unless cgroupsPerQOS (--cgroups-per-qos) feature is turned on');
  }
  for (const v of c.enforceNodeAllocatable) {
    if (!['pods', 'system-reserved', 'kube-reserved', 'none'].includes(v)) {
      errs.push(`invalid option ${JSON.stringify(v)} specified for enforceNodeAllocatable (--enforce-node-allocatable) setting. Valid options are "pods", "system-reserved", "kube-reserved", or "none"`);
    }
  }
  for (const [what, m] of [
    ['kubeReserved', c.kubeReserved],
    ['systemReserved', c.systemReserved],
  ] as const) {
    for (const [k, v] of Object.entries(m)) {
      let q: Quantity;
      try {
        q = parseQuantity(v);
      } catch {
        errs.push(`${what}[${k}]: invalid quantity ${JSON.stringify(v)}`);
        continue;
      }
      if (q.nanos < 0n) errs.push(`${what}[${k}]: resource quantity ${JSON.stringify(v)} must not be negative`);
    }
  }
  if (c.cpuManagerPolicy === 'static') {
    const reserved = parseQuantity(c.kubeReserved.cpu ?? '0').add(c.systemReserved.cpu ?? '0');
    if (reserved.isZero() && !c.reservedSystemCPUs) {
      errs.push('cpuManagerPolicy static: the static policy requires systemReserved.cpu + kubeReserved.cpu to be greater than zero, or reservedSystemCPUs');
    }
  }
  if (c.memoryManagerPolicy === 'Static' && !c.kubeReserved.memory && !c.systemReserved.memory) {
    errs.push('memoryManagerPolicy Static: the Static policy requires kubeReserved.memory or systemReserved.memory');
  }
  for (const ip of c.clusterDNS) {
    if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(ip) && !/^[0-9a-fA-F:]+$/.test(ip)) errs.push(`clusterDNS: invalid IP address ${JSON.stringify(ip)}`);
  }
  if (errs.length) throw new KubeletConfigError(`invalid configuration: ${errs.join(', ')}`);
  evictionThresholds(c); // throws on a bad threshold
}

export interface DecodedKubeletConfig {
  config: KubeletConfiguration;
  /** Fields the file has that this kubelet does not act on (upstream warns and decodes leniently). */
  warnings: string[];
}

/** Decodes a KubeletConfiguration document (YAML or JSON), applying upstream defaults, and validates it. */
export function decodeKubeletConfiguration(text: string, source = 'kubelet config'): DecodedKubeletConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new KubeletConfigError(`${source}: not YAML or JSON: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new KubeletConfigError(`${source}: expected a KubeletConfiguration object`);
  const r = raw as Raw;
  if (r.kind !== KUBELET_CONFIG_KIND) throw new KubeletConfigError(`${source}: kind ${JSON.stringify(r.kind ?? '')} is not ${KUBELET_CONFIG_KIND}`);
  if (r.apiVersion !== KUBELET_CONFIG_API_VERSION) {
    throw new KubeletConfigError(`${source}: no kind "${KUBELET_CONFIG_KIND}" is registered for version ${JSON.stringify(r.apiVersion ?? '')}: supported: ${KUBELET_CONFIG_API_VERSION}`);
  }
  const c = defaultKubeletConfiguration();
  const warnings: string[] = [];
  try {
    for (const k of Object.keys(r)) if (!KNOWN_FIELDS.has(k)) warnings.push(`unknown field "${k}"`);
    const evictionHard = stringMap(r, 'evictionHard');
    if (evictionHard) c.evictionHard = pick<boolean>(r, 'mergeDefaultEvictionSettings', 'boolean') ? { ...DEFAULT_EVICTION_HARD, ...evictionHard } : evictionHard;
    c.mergeDefaultEvictionSettings = pick<boolean>(r, 'mergeDefaultEvictionSettings', 'boolean') ?? false;
    for (const f of ['kubeReserved', 'systemReserved', 'evictionSoft', 'evictionSoftGracePeriod', 'evictionMinimumReclaim'] as const) {
      const m = stringMap(r, f);
      if (m) c[f] = m;
    }
    for (const f of ['maxPods', 'podPidsLimit', 'imageGCHighThresholdPercent', 'imageGCLowThresholdPercent', 'evictionMaxPodGracePeriod'] as const) {
      const v = pick<number>(r, f, 'number');
      if (v !== undefined) c[f] = v;
    }
    for (const f of ['cgroupsPerQOS', 'cpuCFSQuota'] as const) {
      const v = pick<boolean>(r, f, 'boolean');
      if (v !== undefined) c[f] = v;
    }
    for (const f of ['reservedSystemCPUs', 'evictionPressureTransitionPeriod', 'cpuCFSQuotaPeriod', 'imageMinimumGCAge', 'clusterDomain', 'cgroupRoot'] as const) {
      const v = pick<string>(r, f, 'string');
      if (v !== undefined) c[f] = v;
    }
    if (!c.cgroupRoot) c.cgroupRoot = '/';
    c.cgroupDriver = oneOf(r, 'cgroupDriver', ['cgroupfs', 'systemd'] as const) ?? c.cgroupDriver;
    c.cpuManagerPolicy = oneOf(r, 'cpuManagerPolicy', ['none', 'static'] as const) ?? c.cpuManagerPolicy;
    c.memoryManagerPolicy = oneOf(r, 'memoryManagerPolicy', ['None', 'Static'] as const) ?? c.memoryManagerPolicy;
    c.topologyManagerPolicy = oneOf(r, 'topologyManagerPolicy', ['none', 'best-effort', 'restricted', 'single-numa-node'] as const) ?? c.topologyManagerPolicy;
    c.topologyManagerScope = oneOf(r, 'topologyManagerScope', ['container', 'pod'] as const) ?? c.topologyManagerScope;
    for (const f of ['clusterDNS', 'enforceNodeAllocatable'] as const) {
      const v = r[f];
      if (v === undefined || v === null) continue;
      if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new KubeletConfigError(`${f}: must be a list of strings`);
      c[f] = v as string[];
    }
    validateKubeletConfiguration(c);
  } catch (err) {
    if (err instanceof KubeletConfigError) throw new KubeletConfigError(`${source}: ${err.message}`);
    throw err;
  }
  return { config: c, warnings };
}

/** Reads and decodes a KubeletConfiguration file. */
export function loadKubeletConfiguration(file: string): DecodedKubeletConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new KubeletConfigError(`failed to read kubelet config file "${file}": ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return decodeKubeletConfiguration(text, `kubelet config file "${file}"`);
}
