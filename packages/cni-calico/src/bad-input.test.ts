import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { invokePlugin, MemoryDatapath } from '@kemu/cni';
import { afterAll, describe, expect, it } from 'vitest';
import { calicoIpam } from './plugin.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-calico-bad-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const add = async (store: string) =>
  JSON.parse(
    (
      await invokePlugin(calicoIpam, {
        env: { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1', CNI_NETNS: '/x', CNI_IFNAME: 'eth0', CNI_PATH: '/x' },
        stdin: JSON.stringify({ cniVersion: '1.0.0', name: 'n', type: 'kemu-calico-ipam', ipam: { type: 'kemu-calico-ipam', nodename: 'node-1', kemu: { store } } }),
        datapath: async () => new MemoryDatapath(),
        delegate: async () => undefined,
      })
    ).stdout,
  );

describe('kemu-calico-ipam: the file store a config names', () => {
  it('must be a directory (or not exist yet), reached without "..": code 7 otherwise, not "try again later"', async () => {
    symlinkSync('/dev/zero', join(tmp, 'zero'));
    expect(await add('file:/dev/zero')).toMatchObject({ code: 7, msg: 'ipam "kemu.store": /dev/zero is not a directory' });
    expect(await add(`file:${join(tmp, 'zero')}`)).toMatchObject({ code: 7, msg: expect.stringMatching(/zero is not a directory/) });
    expect(await add(`file:${tmp}/../x`)).toMatchObject({ code: 7, msg: expect.stringMatching(/must not contain "\.\."/) });
  });
});
