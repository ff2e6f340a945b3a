import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HOST_NETNS, isDatapathError } from './datapath.js';
import { createSimDatapath } from './datapath-sim.js';
import { datapathFromEnv } from './plugin-main.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-sim-state-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('the simulated datapath reads its state file (KEMU_NETSIM_STATE) with a bound', () => {
  it('a state file that is a symlink to /dev/zero is an EIO error at once, not an endless read', async () => {
    const state = join(tmp, 'state.json');
    symlinkSync('/dev/zero', state);
    const dp = await datapathFromEnv({ KEMU_DATAPATH: 'sim', KEMU_NETSIM_STATE: state });
    let err: unknown;
    await dp.listLinks(HOST_NETNS).catch((e) => (err = e));
    expect(isDatapathError(err, 'EIO')).toBe(true);
    expect((err as Error).message).toBe(`netsim state file ${state} is not a regular file`);
  });

  it('a directory as the state file is refused the same way', async () => {
    const dp = createSimDatapath({ statePath: tmp });
    await expect(dp.listLinks(HOST_NETNS)).rejects.toThrow(/netsim state file .* is not a regular file/);
  });
});
