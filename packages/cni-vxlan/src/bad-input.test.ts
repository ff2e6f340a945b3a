import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InProcessInvoker } from '@kemu/cni';
import { createSimDatapath } from '@kemu/cni/datapath-sim';
import { bridge } from '@kemu/cni-bridge';
import { hostLocal } from '@kemu/cni-host-local';
import { afterAll, describe, expect, it } from 'vitest';
import { vxlan } from './plugin.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-vxlan-bad-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const env = (cmd: string) => ({
  CNI_COMMAND: cmd,
  CNI_CONTAINERID: 'c1',
  CNI_NETNS: '/var/run/netns/p1',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
});

function setup(tag: string) {
  const dir = join(tmp, tag);
  mkdirSync(join(dir, 'flannel'), { recursive: true });
  const dp = createSimDatapath();
  const invoker = new InProcessInvoker({ plugins: [vxlan, bridge, hostLocal], datapath: dp });
  const conf = (subnetFile: string) =>
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'overlay',
      type: 'kemu-vxlan',
      subnetFile,
      dataDir: join(dir, 'flannel'),
      ipam: { dataDir: join(dir, 'ipam') },
    });
  return { dir, dp, invoker, conf };
}

describe('kemu-vxlan reads the files its config names with a bound', () => {
  it('a subnetFile of /dev/zero, a FIFO-like device or an oversized file fails with code 7 at once', async () => {
    const { dir, invoker, conf } = setup('subnet');
    writeFileSync(join(dir, 'big.env'), `FLANNEL_NETWORK=10.244.0.0/16\n#${'x'.repeat(70 << 10)}\n`);
    for (const [file, msg] of [
      ['/dev/zero', /"subnetFile" \/dev\/zero is not a regular file/],
      [dir, /is not a regular file/],
      [join(dir, 'big.env'), /is larger than 65536 bytes/],
    ] as const) {
      const out = await invoker.invoke('kemu-vxlan', env('ADD'), conf(file));
      expect(out.exitCode).toBe(1);
      expect(JSON.parse(out.stdout)).toMatchObject({ code: 7, msg: expect.stringMatching(msg) });
    }
  });

  it('a saved delegate config replaced by a device fails DEL with code 5 instead of hanging', async () => {
    const { dir, invoker, conf } = setup('saved');
    writeFileSync(join(dir, 'subnet.env'), 'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\n');
    symlinkSync('/dev/zero', join(dir, 'flannel', 'c1'));
    const out = await invoker.invoke('kemu-vxlan', env('DEL'), conf(join(dir, 'subnet.env')));
    expect(JSON.parse(out.stdout)).toMatchObject({ code: 5, msg: expect.stringMatching(/saved delegate config .*c1 is not a regular file/) });
  });
});
