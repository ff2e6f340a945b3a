import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CniError } from './errors.js';
import { datapathFromEnv } from './plugin-main.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-hostns-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function failure(env: Record<string, string>): Promise<CniError> {
  try {
    await datapathFromEnv(env);
  } catch (e) {
    expect(e).toBeInstanceOf(CniError);
    return e as CniError;
  }
  throw new Error('expected a CniError');
}

describe('KEMU_HOST_NETNS names the node namespace for the linux datapath', () => {
  it('a FIFO there fails at once with code 4 instead of blocking in open(2)', async () => {
    const fifo = join(tmp, 'fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const e = await failure({ KEMU_HOST_NETNS: fifo });
    expect(e.code).toBe(4);
    expect(e.message).toMatch(/^KEMU_HOST_NETNS: .*fifo is not a network namespace \(file system type 0x/);
  });

  it('a missing path or a device is code 4 too', async () => {
    expect((await failure({ KEMU_HOST_NETNS: join(tmp, 'missing') })).message).toMatch(/does not exist/);
    expect((await failure({ KEMU_HOST_NETNS: '/dev/zero' })).message).toMatch(/\/dev\/zero is not a network namespace/);
  });
});
