// NVIDIA GPU discovery through nvidia-smi, as a device plugin on a real GPU host needs it:
// `nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits` for the inventory
// and `nvidia-smi topo -m` for each GPU's NUMA node. The tool is run without a shell, with a time bound.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import type { DeviceInfo } from './devices.js';

export const QUERY_FIELDS = ['index', 'uuid', 'name', 'memory.total'] as const;

/** nvidia-smi failed or printed something this parser does not understand. */
export class NvidiaSmiError extends Error {
  override readonly name = 'NvidiaSmiError';
}

export interface NvidiaGpu {
  index: number;
  uuid: string;
  name: string;
  memoryMiB: number;
}

/** Parses `--query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits` output. */
export function parseQueryGpu(text: string): NvidiaGpu[] {
  const gpus: NvidiaGpu[] = [];
  for (const [n, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line) continue;
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length !== QUERY_FIELDS.length) {
      throw new NvidiaSmiError(`nvidia-smi line ${n + 1}: expected ${QUERY_FIELDS.length} fields (${QUERY_FIELDS.join(', ')}), got ${JSON.stringify(line)}`);
    }
    const [index, uuid, name, memory] = cells;
    // With nounits memory is a bare number of MiB; tolerate a unit in case the flag was dropped.
    const mem = Number(memory.replace(/\s*MiB$/, ''));
    if (!/^\d+$/.test(index) || !/^(GPU|MIG)-[0-9a-fA-F-]+$/.test(uuid) || !Number.isFinite(mem)) {
      throw new NvidiaSmiError(`nvidia-smi line ${n + 1}: not an index, UUID and memory: ${JSON.stringify(line)}`);
    }
    gpus.push({ index: Number(index), uuid, name, memoryMiB: mem });
  }
  return gpus;
}

/** Each GPU's NUMA node from `nvidia-smi topo -m` (the "NUMA Affinity" column; absent or N/A: none). */
export function parseTopoNuma(text: string): Map<number, number> {
  const lines = text.split('\n');
  const header = lines.find((l) => l.includes('NUMA Affinity'));
  const out = new Map<number, number>();
  if (!header) return out;
  const col = header.split('\t').findIndex((c) => c.trim() === 'NUMA Affinity');
  for (const l of lines) {
    const m = /^GPU(\d+)\t/.exec(l);
    if (!m) continue;
    const cell = l.split('\t')[col]?.trim() ?? '';
    if (/^\d+$/.test(cell)) out.set(Number(m[1]), Number(cell));
  }
  return out;
}

function run(bin: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(bin, args, { timeout: timeoutMs, maxBuffer: 1 << 20, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) {
        const detail = `${stdout}${stderr}`.trim().split('\n')[0] || (err as NodeJS.ErrnoException).code || err.message;
        reject(new NvidiaSmiError(`${bin} ${args.join(' ')} failed: ${detail}`));
        return;
      }
      resolve(stdout);
    });
  });
}

export interface NvidiaDiscoveryOptions {
  /** The nvidia-smi to run (default: `nvidia-smi` on PATH). */
  bin?: string;
  timeoutMs?: number;
  /** Also hand out the GPUs' device nodes that exist on this host (NVIDIA's pass-device-specs). */
  passDeviceSpecs?: boolean;
}

/** The host's GPUs as device-plugin devices, IDs being their UUIDs as NVIDIA's plugin uses them. */
export async function discoverNvidiaGpus(o: NvidiaDiscoveryOptions = {}): Promise<DeviceInfo[]> {
  const bin = o.bin ?? 'nvidia-smi';
  const timeout = o.timeoutMs ?? 10_000;
  const gpus = parseQueryGpu(await run(bin, [`--query-gpu=${QUERY_FIELDS.join(',')}`, '--format=csv,noheader,nounits'], timeout));
  let numa = new Map<number, number>();
  try {
    numa = parseTopoNuma(await run(bin, ['topo', '-m'], timeout));
  } catch {
    // topology is a hint only
  }
  return gpus.map((g) => ({
    id: g.uuid,
    health: 'Healthy' as const,
    index: g.index,
    model: g.name,
    memoryMiB: g.memoryMiB,
    numaNode: numa.get(g.index),
    deviceNodes: o.passDeviceSpecs
      ? [`/dev/nvidia${g.index}`, '/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools'].filter((p) => fs.existsSync(p))
      : [],
  }));
}
