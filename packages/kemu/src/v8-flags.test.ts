import { afterEach, describe, expect, it, vi } from 'vitest';
import { clusterV8Flags, untilStopSignal } from './v8-flags.js';

const GiB = 2 ** 30;

describe('clusterV8Flags', () => {
  it('adds a heap limit of three quarters of memory, no memory reducer, doubling growth and a 64 MiB semi-space', () => {
    expect(clusterV8Flags([], '', 24 * GiB)).toEqual([
      '--max-old-space-size=18432',
      '--no-memory-reducer',
      '--heap-growing-percent=100',
      '--max-semi-space-size=64',
    ]);
  });

  it('leaves alone every flag the user set, in any of the spellings V8 takes', () => {
    expect(clusterV8Flags(['--max-old-space-size=4096', '--memory-reducer', '--heap-growing-percent=50', '--max_semi_space_size=16'], '', 24 * GiB)).toEqual([]);
    expect(clusterV8Flags(['--nomemory-reducer'], '--max-old-space-size=2048 --heap_growing_percent=0', 24 * GiB)).toEqual(['--max-semi-space-size=64']);
    expect(clusterV8Flags(['--no_memory_reducer', '--import', 'tsx'], '', 8 * GiB)).toEqual([
      '--max-old-space-size=6144',
      '--heap-growing-percent=100',
      '--max-semi-space-size=64',
    ]);
  });

  it('never sets a heap limit below 1 GiB', () => {
    expect(clusterV8Flags([], '', GiB)[0]).toBe('--max-old-space-size=1024');
  });
});

describe('untilStopSignal', () => {
  afterEach(() => vi.restoreAllMocks());

  it('stops on the first signal, takes a copy within a second for the same one, and exits on a later one', async () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    let release!: () => void;
    const stop = vi.fn(() => new Promise<void>((r) => (release = r)));
    const now = vi.spyOn(Date, 'now').mockReturnValue(1_000_000);
    const done = untilStopSignal(stop);
    process.emit('SIGTERM');
    process.emit('SIGINT');
    expect(stop).toHaveBeenCalledTimes(1);
    expect(exit).not.toHaveBeenCalled();
    now.mockReturnValue(1_002_000);
    process.emit('SIGINT');
    expect(exit).toHaveBeenCalledWith(130);
    release();
    await done;
    expect(process.listenerCount('SIGINT') + process.listenerCount('SIGTERM')).toBe(0);
  });
});
