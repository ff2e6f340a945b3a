// kubectl cp (v1.32, and v1.20 where Debian's kubernetes-client is unpacked) against a composed cluster's API
// server, both directions: kubectl runs `test -d` and `tar -xmf - -C DIR` (into the pod) or `tar cf - PATH`
// (out of it) through exec, and the simulated container's tar reads and writes its file view (its writable
// layer and its mounts). Bytes round-trip exactly; an archive cannot write outside the container.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KUBECTL_OLD, peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpsCluster, type KubectlResult, startHttpsCluster } from './https-cluster.js';

const ok = requirePeers('kubectl cp through a composed cluster', [peers.kubectl]);
const okOld = requirePeers('kubectl v1.20 cp through a composed cluster', [peers.kubectl, peers.kubectlOld]);

const pod = `apiVersion: v1
kind: Pod
metadata: {name: box}
spec:
  containers:
  - name: c
    image: busybox:1.36
    command: [sleep, infinity]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
`;

describe.runIf(ok)('kubectl cp through the API server', () => {
  let h: HttpsCluster;
  let dir: string;
  const run = (bin: string, args: string[], stdin?: Buffer): Promise<KubectlResult & { raw: Buffer }> =>
    new Promise((resolve) => {
      const child = spawn(bin, args, { env: h.env() });
      const out: Buffer[] = [];
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code: code ?? 1, stdout: Buffer.concat(out).toString(), raw: Buffer.concat(out), stderr }));
      child.stdin.end(stdin ?? '');
    });

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-cp-'));
    h = await startHttpsCluster('cp');
    const apply = await h.kubectl(['apply', '-f', '-'], { stdin: pod });
    expect(apply.code, apply.stderr).toBe(0);
    const ready = await h.kubectl(['wait', 'pod/box', '--for=condition=Ready', '--timeout=60s']);
    expect(ready.code, ready.stderr).toBe(0);
  }, 120_000);

  afterAll(async () => {
    await h?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a file into the pod and back: the same bytes, and exec cat sees them in the pod', async () => {
    const bytes = crypto.randomBytes(300_000);
    const src = path.join(dir, 'blob');
    fs.writeFileSync(src, bytes);
    const up = await run('kubectl', ['cp', src, 'box:/tmp/x']);
    expect(up.code, up.stderr).toBe(0);
    const cat = await run('kubectl', ['exec', 'box', '--', 'cat', '/tmp/x']);
    expect(cat.code, cat.stderr).toBe(0);
    expect(cat.raw.equals(bytes)).toBe(true);
    const back = path.join(dir, 'blob2');
    const down = await run('kubectl', ['cp', 'box:/tmp/x', back]);
    expect(down.code, down.stderr).toBe(0);
    expect(fs.readFileSync(back).equals(bytes)).toBe(true);
    // --no-preserve runs `tar --no-same-permissions --no-same-owner -xmf -`.
    const np = await run('kubectl', ['cp', '--no-preserve', src, 'box:/tmp/np']);
    expect(np.code, np.stderr).toBe(0);
    expect((await run('kubectl', ['exec', 'box', '--', 'cat', '/tmp/np'])).raw.equals(bytes)).toBe(true);
  });

  it('a directory tree into an existing directory of the pod (a mounted volume) and back', async () => {
    const tree = path.join(dir, 'tree');
    fs.mkdirSync(path.join(tree, 'sub'), { recursive: true });
    fs.writeFileSync(path.join(tree, 'a.txt'), 'alpha\n');
    fs.writeFileSync(path.join(tree, 'sub', 'b.bin'), Buffer.from([0, 1, 2, 255]));
    fs.writeFileSync(path.join(tree, 'empty'), '');
    // /data exists in the pod (its emptyDir), so the tree lands as /data/tree.
    const up = await run('kubectl', ['cp', tree, 'box:/data']);
    expect(up.code, up.stderr).toBe(0);
    expect((await run('kubectl', ['exec', 'box', '--', 'cat', '/data/tree/a.txt'])).stdout).toBe('alpha\n');
    const back = path.join(dir, 'tree-back');
    const down = await run('kubectl', ['cp', 'box:/data/tree', back]);
    expect(down.code, down.stderr).toBe(0);
    expect(fs.readFileSync(path.join(back, 'a.txt'), 'utf8')).toBe('alpha\n');
    expect([...fs.readFileSync(path.join(back, 'sub', 'b.bin'))]).toEqual([0, 1, 2, 255]);
    expect(fs.readFileSync(path.join(back, 'empty')).length).toBe(0);
  });

  it('a file that does not exist in the pod: tar says so and exits 2, and kubectl cp writes nothing', async () => {
    // kubectl cp sends tar's stderr to its own stdout and may end at the archive's end before it arrives (as
    // with a real container's tar), so the message is asserted on a plain exec of the same command.
    const e = await run('kubectl', ['exec', 'box', '--', 'tar', 'cf', '-', '/tmp/missing']);
    expect(e.code).toBe(2);
    expect(e.stderr).toContain('tar: tmp/missing: Cannot stat: No such file or directory\ntar: Exiting with failure status due to previous errors\n');
    expect(e.stderr).toContain('command terminated with exit code 2');
    await run('kubectl', ['cp', 'box:/tmp/missing', path.join(dir, 'never')]);
    expect(fs.existsSync(path.join(dir, 'never'))).toBe(false);
  });

  it('tar through exec: an archive whose members climb out with .. or through a planted link writes nothing outside', async () => {
    const outside = path.join(dir, 'outside');
    fs.mkdirSync(outside);
    // A raw archive built here (GNU tar with -P keeps the names as written).
    const staging = path.join(dir, 'evil');
    fs.mkdirSync(staging);
    fs.writeFileSync(path.join(staging, 'f'), 'pwned');
    fs.symlinkSync(outside, path.join(staging, 'link'));
    const archive = await new Promise<Buffer>((resolve) => {
      const child = spawn('tar', ['-cf', '-', '-P', '-C', staging, 'link', '--transform', 's,^f$,../../../../..' + outside + '/dotdot,', 'f']);
      const out: Buffer[] = [];
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.on('close', () => resolve(Buffer.concat(out)));
    });
    const x = await run('kubectl', ['exec', '-i', 'box', '--', 'tar', '-xmf', '-', '-C', '/tmp'], archive);
    expect(x.stderr).toContain("Member name contains '..'");
    expect(x.code).toBe(2);
    // The link was made inside the pod; a second archive writing through it is refused.
    const through = await new Promise<Buffer>((resolve) => {
      const child = spawn('tar', ['-cf', '-', '-C', staging, '--transform', 's,^f$,link/through,', 'f']);
      const out: Buffer[] = [];
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.on('close', () => resolve(Buffer.concat(out)));
    });
    const y = await run('kubectl', ['exec', '-i', 'box', '--', 'tar', 'xf', '-', '-C', '/tmp'], through);
    expect(y.code).toBe(2);
    expect(y.stderr).toContain('link/through: Cannot open');
    expect(fs.readdirSync(outside)).toEqual([]);
  });

  it.runIf(okOld)('kubectl v1.20: into the pod and back', async () => {
    const src = path.join(dir, 'old-src');
    fs.writeFileSync(src, 'from an old client\n');
    const up = await run(KUBECTL_OLD, ['cp', src, 'box:/tmp/old']);
    expect(up.code, up.stderr).toBe(0);
    const back = path.join(dir, 'old-back');
    const down = await run(KUBECTL_OLD, ['cp', 'box:/tmp/old', back]);
    expect(down.code, down.stderr).toBe(0);
    expect(fs.readFileSync(back, 'utf8')).toBe('from an old client\n');
  });
});
