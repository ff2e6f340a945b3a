// Simulated devices: `count` identical devices of a model, with stable NVIDIA-style UUIDs (derived from
// the node name, so two nodes never share an ID) spread round-robin over NUMA nodes.
import { createHash } from 'node:crypto';
import type { DeviceInfo } from './devices.js';

export interface SimDeviceOptions {
  count: number;
  model?: string;
  /** Seeds the UUIDs (the node name). */
  seed?: string;
  numaNodes?: number;
  memoryMiB?: number;
}

/** A stable UUID-shaped ID, GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as nvidia-smi prints them. */
export function simDeviceId(seed: string, model: string, index: number): string {
  const h = createHash('sha256').update(`${seed}/${model}/${index}`).digest('hex');
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

export function simDevices(o: SimDeviceOptions): DeviceInfo[] {
  if (!Number.isInteger(o.count) || o.count < 0 || o.count > 1024) throw new RangeError(`device count must be an integer from 0 to 1024, got ${o.count}`);
  const model = o.model ?? 'sim';
  const numa = Math.max(1, o.numaNodes ?? 1);
  return Array.from({ length: o.count }, (_, i) => ({
    id: simDeviceId(o.seed ?? 'kemu', model, i),
    health: 'Healthy' as const,
    numaNode: i % numa,
    index: i,
    model,
    memoryMiB: o.memoryMiB,
    deviceNodes: [],
  }));
}
