import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { discoverNvidiaGpus, NvidiaSmiError, parseQueryGpu, parseTopoNuma } from './nvidia-smi.js';

const fixtures = path.join(import.meta.dirname, '..', 'test-fixtures');
const fake = path.join(fixtures, 'bin', 'nvidia-smi');
// What the real nvidia-smi printed on a one-H200 machine, one section per command (see the file's header).
const real = fs
  .readFileSync(path.join(fixtures, 'nvidia-smi-h200.txt'), 'utf8')
  .split('\n')
  .filter((l) => !l.startsWith('#'))
  .join('\n')
  .split(/^---$/m)
  .map((s) => s.replace(/^\n/, ''));

describe('the fake nvidia-smi prints what the real one printed', () => {
  const run = (args: string[]) => {
    try {
      return { out: execFileSync(fake, args, { encoding: 'utf8' }), rc: 0 };
    } catch (err) {
      return { out: String((err as { stdout: string }).stdout), rc: (err as { status: number }).status };
    }
  };
  it.each([
    [['-L'], 0],
    [['--query-gpu=index,uuid,name,memory.total,memory.used,pci.bus_id,driver_version,compute_cap,utilization.gpu,temperature.gpu,power.draw', '--format=csv'], 1],
    [['--query-gpu=index,uuid,name,memory.total', '--format=csv,noheader,nounits'], 2],
  ])('%j', (args, section) => {
    expect(run(args)).toEqual({ out: real[section], rc: 0 });
  });
  it('fails an unknown field as the real one does', () => {
    expect(run(['--query-gpu=bogus', '--format=csv'])).toEqual({ out: real[3].replace(/rc=2\n$/, ''), rc: 2 });
  });
  it('prints the topology matrix', () => {
    expect(run(['topo', '-m']).out).toBe(real[4].slice(0, real[4].indexOf('crw')));
  });
});

describe('parsing nvidia-smi output', () => {
  it('reads the inventory query', () => {
    expect(parseQueryGpu(real[2])).toEqual([{ index: 0, uuid: 'GPU-ace0c60b-b916-e7a0-c228-23c554d83224', name: 'NVIDIA H200', memoryMiB: 143771 }]);
  });
  it('reads the NUMA affinity of each GPU', () => {
    expect([...parseTopoNuma(real[4])]).toEqual([[0, 0]]);
  });
  it.each([
    ['0, GPU-ace0c60b, NVIDIA H200', /expected 4 fields/],
    ['x, GPU-ace0c60b, NVIDIA H200, 1', /not an index, UUID and memory/],
    ['0, not-a-uuid, NVIDIA H200, 1', /not an index, UUID and memory/],
  ])('rejects %j', (line, message) => {
    expect(() => parseQueryGpu(line)).toThrow(NvidiaSmiError);
    expect(() => parseQueryGpu(line)).toThrow(message);
  });
});

describe('discovery through nvidia-smi on PATH', () => {
  const withPath = async <T>(env: Record<string, string>, fn: () => Promise<T>): Promise<T> => {
    const saved = { ...process.env };
    Object.assign(process.env, { PATH: `${path.dirname(fake)}:${process.env.PATH}` }, env);
    try {
      return await fn();
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  };

  it('finds the H200 with its UUID, memory and NUMA node', async () => {
    const gpus = await withPath({}, () => discoverNvidiaGpus());
    expect(gpus).toEqual([
      { id: 'GPU-ace0c60b-b916-e7a0-c228-23c554d83224', health: 'Healthy', index: 0, model: 'NVIDIA H200', memoryMiB: 143771, numaNode: 0, deviceNodes: [] },
    ]);
  });

  it('finds several', async () => {
    const gpus = await withPath({ FAKE_NVIDIA_SMI_GPUS: '4' }, () => discoverNvidiaGpus());
    expect(gpus.map((g) => g.index)).toEqual([0, 1, 2, 3]);
    expect(new Set(gpus.map((g) => g.id)).size).toBe(4);
  });

  it('reports a failing nvidia-smi with its own words', async () => {
    await expect(withPath({ FAKE_NVIDIA_SMI_FAIL: '1' }, () => discoverNvidiaGpus())).rejects.toThrow(
      /nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits failed: Unable to determine the device handle/,
    );
  });

  it('reports a missing nvidia-smi', async () => {
    await expect(discoverNvidiaGpus({ bin: path.join(fixtures, 'no-such-nvidia-smi') })).rejects.toThrow(/failed: ENOENT/);
  });
});
