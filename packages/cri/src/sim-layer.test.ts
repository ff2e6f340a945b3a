// The simulated container's writable layer through the CRI API: an archive streamed into `tar x` over Exec
// (as kubectl cp sends it) lands in the layer under the runtime's stateDir, ExecSync's cat and test see it,
// `tar c` streams it back, and RemoveContainer takes the layer away.
import fs from 'node:fs';
import path from 'node:path';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCatPod, type TestShim, wsStream } from './test-util.js';

async function archive(files: Record<string, string>): Promise<Buffer> {
  const pack = tar.pack();
  for (const [name, body] of Object.entries(files)) pack.entry({ name, mode: 0o644 }, body);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('sim container writable layer', () => {
  let shim: TestShim;
  let cid: string;
  beforeAll(async () => {
    ({ shim, cid } = await startCatPod('layer-pod'));
  });
  afterAll(async () => {
    await shim?.close();
  });

  it('tar x over Exec writes the layer; cat, test and tar c read it; RemoveContainer removes it', async () => {
    const layer = path.join(shim.stateDir, 'sim-rootfs', cid);
    const exec = async (cmd: string[], stdin?: Buffer) => {
      const { url } = await shim.call('Exec', { containerId: cid, cmd, stdin: stdin !== undefined, stdout: true, stderr: true });
      return wsStream(url!, 'v5.channel.k8s.io', stdin, stdin !== undefined);
    };
    const x = await exec(['tar', '-xmf', '-', '-C', '/srv'], await archive({ 'a.txt': 'layered\n' }));
    expect(x.stderr).toBe('');
    expect(x.error).toContain('"status":"Success"');
    expect(fs.readFileSync(path.join(layer, 'srv', 'a.txt'), 'utf8')).toBe('layered\n');

    const cat = await shim.call('ExecSync', { containerId: cid, cmd: ['cat', '/srv/a.txt'], timeout: 5 });
    expect(Buffer.from(cat.stdout!).toString()).toBe('layered\n');
    expect((await shim.call('ExecSync', { containerId: cid, cmd: ['test', '-d', '/srv'], timeout: 5 })).exitCode).toBe(0);
    expect((await shim.call('ExecSync', { containerId: cid, cmd: ['test', '-d', '/srv/a.txt'], timeout: 5 })).exitCode).toBe(1);
    expect((await shim.call('ExecSync', { containerId: cid, cmd: ['test', '-f', '/srv/a.txt'], timeout: 5 })).exitCode).toBe(0);
    // The synthetic root still shows through where the layer has nothing.
    expect(Buffer.from((await shim.call('ExecSync', { containerId: cid, cmd: ['cat', '/etc/hostname'], timeout: 5 })).stdout!).toString()).toBe('layer-pod\n');

    const c = await shim.call('ExecSync', { containerId: cid, cmd: ['tar', 'cf', '-', '/srv/a.txt'], timeout: 5 });
    const names: string[] = [];
    const ex = tar.extract();
    ex.end(Buffer.from(c.stdout!));
    for await (const e of ex) {
      names.push(e.header.name);
      e.resume();
    }
    expect(names).toEqual(['srv/a.txt']);

    await shim.call('StopContainer', { containerId: cid, timeout: 0 });
    await shim.call('RemoveContainer', { containerId: cid });
    expect(fs.existsSync(layer)).toBe(false);
  });
});
