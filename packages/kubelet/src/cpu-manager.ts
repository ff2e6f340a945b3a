// The kubelet's CPU manager (upstream pkg/kubelet/cm/cpumanager) with its two policies. `none`: every
// container shares every CPU. `static`: a container of a Guaranteed pod that asks for whole CPUs gets that
// many CPUs of its own (cpuset), taken from the shared pool; the reserved CPUs (reservedSystemCPUs, or the
// lowest-numbered ceil(kubeReserved.cpu + systemReserved.cpu)) are never given away; every other container
// runs on the shared pool. Assignments are kept in cpu_manager_state across restarts.
import fs from 'node:fs';
import path from 'node:path';
import { type Container, type Pod, parseQuantity, podQOSClass } from '@kemu/core';
import type { KubeletConfiguration } from './kubelet-config.js';

/** "0-2,5" <-> [0, 1, 2, 5] (the cpuset list format). */
export function formatCpuSet(cpus: number[]): string {
  const sorted = [...new Set(cpus)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    parts.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

export function parseCpuSet(text: string): number[] {
  const out: number[] = [];
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m || (m[2] !== undefined && Number(m[2]) < Number(m[1]))) throw new Error(`invalid cpuset ${JSON.stringify(text)}`);
    for (let c = Number(m[1]); c <= Number(m[2] ?? m[1]); c++) out.push(c);
  }
  return out;
}

/** A pod the static policy cannot give its CPUs; the kubelet fails it with UnexpectedAdmissionError. */
export class CpuAdmissionError extends Error {
  override readonly name = 'CpuAdmissionError';
  readonly reason = 'UnexpectedAdmissionError';
}

export const CPU_MANAGER_STATE_FILE = 'cpu_manager_state';

interface State {
  policyName: string;
  defaultCpuSet: string;
  entries: Record<string, Record<string, string>>;
}

export class CpuManager {
  private readonly all: number[];
  private readonly reserved: number[];
  /** Exclusive CPUs by pod UID and container name. */
  private entries = new Map<string, Map<string, number[]>>();

  constructor(
    private readonly config: KubeletConfiguration,
    cpuCapacity: string,
    private readonly stateDir?: string,
  ) {
    const n = Math.max(1, Math.floor(parseQuantity(cpuCapacity).milliValue() / 1000));
    this.all = Array.from({ length: n }, (_, i) => i);
    if (config.reservedSystemCPUs) this.reserved = parseCpuSet(config.reservedSystemCPUs).filter((c) => c < n);
    else {
      const milli = parseQuantity(config.kubeReserved.cpu ?? '0').add(config.systemReserved.cpu ?? '0').milliValue();
      this.reserved = this.all.slice(0, Math.ceil(milli / 1000));
    }
    this.load();
  }

  get policy(): 'none' | 'static' {
    return this.config.cpuManagerPolicy;
  }

  /** The shared pool: every CPU not given to a container exclusively (reserved ones included). */
  defaultSet(): number[] {
    const taken = new Set([...this.entries.values()].flatMap((m) => [...m.values()].flat()));
    return this.all.filter((c) => !taken.has(c));
  }

  /** Whole CPUs a container of a Guaranteed pod asks for, or 0 when it shares (upstream guaranteedCPUs). */
  static exclusiveCpus(pod: Pod, c: Container): number {
    if (podQOSClass(pod.spec) !== 'Guaranteed') return 0;
    const req = c.resources?.requests?.cpu ?? c.resources?.limits?.cpu;
    if (req === undefined) return 0;
    const milli = parseQuantity(req).milliValue();
    return milli % 1000 === 0 ? milli / 1000 : 0;
  }

  /** Admission (upstream Allocate): assigns exclusive CPUs to the pod's containers that qualify. */
  admit(pod: Pod): void {
    if (this.policy !== 'static') return;
    const uid = pod.metadata.uid ?? '';
    if (this.entries.has(uid)) return;
    const mine = new Map<string, number[]>();
    const reserved = new Set(this.reserved);
    let free = this.defaultSet().filter((c) => !reserved.has(c));
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
      const n = CpuManager.exclusiveCpus(pod, c);
      if (!n) continue;
      if (free.length < n) {
        throw new CpuAdmissionError(`not enough cpus available to satisfy request: requested=${n}, available=${free.length}`);
      }
      mine.set(c.name, free.slice(0, n));
      free = free.slice(n);
    }
    if (mine.size) {
      this.entries.set(uid, mine);
      this.save();
    }
  }

  /** The container's cpuset for its CRI resources: its own CPUs, or the shared pool (static policy only). */
  cpusetFor(pod: Pod, containerName: string): string | undefined {
    if (this.policy !== 'static') return undefined;
    const own = this.entries.get(pod.metadata.uid ?? '')?.get(containerName);
    return formatCpuSet(own ?? this.defaultSet());
  }

  release(uid: string): void {
    if (this.entries.delete(uid)) this.save();
  }

  private file(): string | undefined {
    return this.stateDir ? path.join(this.stateDir, CPU_MANAGER_STATE_FILE) : undefined;
  }

  private save() {
    const f = this.file();
    if (!f) return;
    const state: State = {
      policyName: this.policy,
      defaultCpuSet: formatCpuSet(this.defaultSet()),
      entries: Object.fromEntries([...this.entries].map(([uid, m]) => [uid, Object.fromEntries([...m].map(([c, cpus]) => [c, formatCpuSet(cpus)]))])),
    };
    fs.mkdirSync(path.dirname(f), { recursive: true, mode: 0o750 });
    fs.writeFileSync(`${f}.tmp`, JSON.stringify(state), { mode: 0o600 });
    fs.renameSync(`${f}.tmp`, f);
  }

  private load() {
    const f = this.file();
    if (!f || !fs.existsSync(f)) return;
    const state = JSON.parse(fs.readFileSync(f, 'utf8')) as State;
    // A state written under another policy is not reused (upstream refuses to start; we start clean).
    if (state.policyName !== this.policy) return;
    for (const [uid, m] of Object.entries(state.entries ?? {})) this.entries.set(uid, new Map(Object.entries(m).map(([c, s]) => [c, parseCpuSet(s)])));
  }
}
