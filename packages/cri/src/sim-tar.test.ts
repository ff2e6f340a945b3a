// The simulated container's tar against GNU tar (the machine's own, nobody here wrote it): archives GNU tar
// makes extract into the container's view, archives the container makes extract with GNU tar to the same
// bytes, and members that climb out (`..`, absolute names, planted links) write nothing outside.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import tar from 'tar-stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runSimTar, type SimTarContext } from './sim-tar.js';
import type { ContainerRecord } from './types.js';

let root: string;
let rootfs: string;
let vol: string;
let ro: string;
let ctx: SimTarContext;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-simtar-'));
  rootfs = path.join(root, 'layer');
  vol = path.join(root, 'vol');
  ro = path.join(root, 'ro');
  fs.mkdirSync(vol);
  fs.mkdirSync(ro);
  fs.writeFileSync(path.join(ro, 'config'), 'read only\n');
  const container = {
    config: {
      mounts: [
        { containerPath: '/data', hostPath: vol },
        { containerPath: '/etc/config', hostPath: ro, readonly: true },
      ],
    },
  } as unknown as ContainerRecord;
  ctx = { container, rootfs, synthetic: { '/etc/hostname': 'box\n' } };
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

async function simTar(args: string[], stdin?: Buffer, c = ctx) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  let err = '';
  stdout.on('data', (d: Buffer) => out.push(d));
  stderr.on('data', (d) => (err += d));
  const code = await runSimTar(args, c, { stdin: stdin ? Readable.from([stdin]) : undefined, stdout, stderr });
  return { code, stdout: Buffer.concat(out), stderr: err };
}

function gnuTar(args: string[], input?: Buffer) {
  const r = spawnSync('tar', args, { input });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr.toString() };
}

async function archive(entries: { name: string; type?: 'file' | 'directory' | 'symlink' | 'link'; body?: string; linkname?: string }[]) {
  const pack = tar.pack();
  for (const e of entries) pack.entry({ name: e.name, type: e.type ?? 'file', linkname: e.linkname, mode: 0o644 }, e.body ?? '');
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('tar in a simulated container', () => {
  it('extracts what GNU tar packs (kubectl cp: tar -xmf - -C DIR) and packs what GNU tar extracts to the same bytes', async () => {
    const src = path.join(root, 'src');
    fs.mkdirSync(path.join(src, 'tree', 'sub'), { recursive: true });
    const blob = crypto.randomBytes(100_000);
    fs.writeFileSync(path.join(src, 'tree', 'blob'), blob);
    fs.writeFileSync(path.join(src, 'tree', 'sub', 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    fs.writeFileSync(path.join(src, 'tree', 'empty'), '');
    fs.symlinkSync('blob', path.join(src, 'tree', 'alias'));
    const packed = gnuTar(['-cf', '-', '-C', src, 'tree']);
    expect(packed.code).toBe(0);

    const x = await simTar(['-xmf', '-', '-C', '/tmp'], packed.stdout);
    expect(x).toMatchObject({ code: 0, stderr: '' });
    expect(fs.readFileSync(path.join(rootfs, 'tmp', 'tree', 'blob')).equals(blob)).toBe(true);
    expect(fs.statSync(path.join(rootfs, 'tmp', 'tree', 'sub', 'run.sh')).mode & 0o777).toBe(0o755);
    expect(fs.readlinkSync(path.join(rootfs, 'tmp', 'tree', 'alias'))).toBe('blob');

    // Out again, as kubectl cp POD:/tmp/tree runs it: names lose their leading '/', as GNU tar's do.
    const c = await simTar(['cf', '-', '/tmp/tree']);
    expect(c.code).toBe(0);
    expect(c.stderr).toBe("tar: Removing leading `/' from member names\n");
    expect(gnuTar(['-tf', '-'], c.stdout).stdout.toString().split('\n').filter(Boolean).sort()).toEqual(
      ['tmp/tree/', 'tmp/tree/alias', 'tmp/tree/blob', 'tmp/tree/empty', 'tmp/tree/sub/', 'tmp/tree/sub/run.sh'],
    );
    const dest = path.join(root, 'dest');
    fs.mkdirSync(dest);
    expect(gnuTar(['-xf', '-', '-C', dest], c.stdout).code).toBe(0);
    expect(fs.readFileSync(path.join(dest, 'tmp', 'tree', 'blob')).equals(blob)).toBe(true);
    expect(fs.readFileSync(path.join(dest, 'tmp', 'tree', 'empty')).length).toBe(0);
    expect(fs.readlinkSync(path.join(dest, 'tmp', 'tree', 'alias'))).toBe('blob');
    expect(fs.statSync(path.join(dest, 'tmp', 'tree', 'sub', 'run.sh')).mode & 0o777).toBe(0o755);

    // A directory shows the mounts and synthetic files below it, as in a real container's mount namespace.
    const etcAll = await simTar(['cf', '-', '-C', '/', 'etc']);
    expect(etcAll.code, etcAll.stderr).toBe(0);
    expect(gnuTar(['-tf', '-'], etcAll.stdout).stdout.toString().split('\n').filter(Boolean)).toEqual(['etc/', 'etc/config/', 'etc/config/config', 'etc/hostname']);
    // A synthetic file and a file in a mount archive too; `tar t` lists.
    const etc = await simTar(['-cf', '-', '-C', '/etc', 'hostname']);
    expect(gnuTar(['-xOf', '-'], etc.stdout).stdout.toString()).toBe('box\n');
    expect((await simTar(['tf', '-'], c.stdout)).stdout.toString()).toContain('tmp/tree/sub/run.sh\n');
  });

  it('writes into a mount at its host path, and refuses a read-only mount', async () => {
    const a = await archive([{ name: 'x', body: 'in the volume' }]);
    expect((await simTar(['xf', '-', '-C', '/data'], a)).code).toBe(0);
    expect(fs.readFileSync(path.join(vol, 'x'), 'utf8')).toBe('in the volume');
    const r = await simTar(['xf', '-', '-C', '/etc/config'], a);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('tar: x: Cannot open: Read-only file system\ntar: Exiting with failure status due to previous errors\n');
    expect(fs.readdirSync(ro)).toEqual(['config']);
  });

  it('skips members named with .., strips a leading /, and never writes through a link out of the container', async () => {
    const outside = path.join(root, 'outside');
    fs.mkdirSync(outside);
    const evil = await archive([
      { name: '../../../outside/dotdot', body: 'no' },
      { name: '/abs', body: 'stripped' },
      { name: 'out', type: 'symlink', linkname: outside },
      { name: 'out/through', body: 'no' },
      { name: 'rel', type: 'symlink', linkname: '../../../../../../../..' },
      { name: 'rel/tmp/x', body: 'no' },
      { name: 'data-link', type: 'symlink', linkname: vol },
      { name: 'hard', type: 'link', linkname: '/etc/passwd' },
      { name: 'kept', body: 'yes' },
    ]);
    const r = await simTar(['-xf', '-', '-C', '/tmp'], evil);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("tar: ../../../outside/dotdot: Member name contains '..'\n");
    expect(r.stderr).toContain('tar: out/through: Cannot open: No such file or directory\n');
    expect(r.stderr).toContain('tar: rel/tmp/x: Cannot open: No such file or directory\n');
    expect(r.stderr).toContain('tar: hard: Cannot create: entry type link is not supported here\n');
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(fs.readFileSync(path.join(rootfs, 'tmp', 'abs'), 'utf8')).toBe('stripped');
    expect(fs.readFileSync(path.join(rootfs, 'tmp', 'kept'), 'utf8')).toBe('yes');
    // Links above a member lead where they lead in the container: here into the /data mount.
    fs.symlinkSync('/data', path.join(rootfs, 'tmp', 'to-data'));
    fs.writeFileSync(path.join(vol, 'v.txt'), 'via the link');
    const via = await simTar(['cf', '-', '/tmp/to-data/v.txt']);
    expect(via.code, via.stderr).toBe(0);
    expect(gnuTar(['-xOf', '-'], via.stdout).stdout.toString()).toBe('via the link');
    // A link archived out of the container stays a link; it is not followed to the host.
    const c = await simTar(['cf', '-', '-C', '/tmp', 'out']);
    expect(gnuTar(['-tvf', '-'], c.stdout).stdout.toString()).toContain(`out -> ${outside}`);
    // A member replacing a planted link removes the link instead of writing through it.
    fs.writeFileSync(path.join(outside, 'target'), 'host file');
    fs.symlinkSync(path.join(outside, 'target'), path.join(rootfs, 'tmp', 'swap'));
    expect((await simTar(['xf', '-', '-C', '/tmp'], await archive([{ name: 'swap', body: 'replaced' }]))).code).toBe(0);
    expect(fs.readFileSync(path.join(outside, 'target'), 'utf8')).toBe('host file');
    expect(fs.readFileSync(path.join(rootfs, 'tmp', 'swap'), 'utf8')).toBe('replaced');
  });

  it('bounds what one archive writes, and reports bad input and bad options as tar does', async () => {
    const big = await archive([{ name: 'a', body: 'x'.repeat(3000) }, { name: 'b', body: 'y'.repeat(3000) }]);
    const r = await simTar(['xf', '-', '-C', '/tmp'], big, { ...ctx, maxBytes: 4096 });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('tar: b: Cannot write: No space left on device\n');
    expect(fs.existsSync(path.join(rootfs, 'tmp', 'b'))).toBe(false);
    const many = await archive(Array.from({ length: 5 }, (_, i) => ({ name: `m${i}`, body: '' })));
    const m = await simTar(['xf', '-', '-C', '/tmp'], many, { ...ctx, maxEntries: 3 });
    expect(m.code).toBe(2);
    expect(m.stderr).toContain('tar: m3: Cannot create: more than 3 members in one archive\n');
    expect(fs.existsSync(path.join(rootfs, 'tmp', 'm3'))).toBe(false);
    // Set-id and sticky bits from an archive never reach the host's files.
    const suid = tar.pack();
    suid.entry({ name: 'suid', mode: 0o4755 }, '#!/bin/sh\n');
    suid.entry({ name: 'sdir', type: 'directory', mode: 0o3777 });
    suid.finalize();
    const chunks: Buffer[] = [];
    for await (const c of suid) chunks.push(c as Buffer);
    expect((await simTar(['xpf', '-', '-C', '/tmp'], Buffer.concat(chunks))).code).toBe(0);
    expect(fs.statSync(path.join(rootfs, 'tmp', 'suid')).mode & 0o7777).toBe(0o755);
    expect(fs.statSync(path.join(rootfs, 'tmp', 'sdir')).mode & 0o7777).toBe(0o777);
    const junk = await simTar(['xf', '-'], Buffer.from('this is not an archive'.repeat(40)));
    expect(junk.code).toBe(2);
    expect(junk.stderr).toContain('tar: This does not look like a tar archive\n');
    expect((await simTar(['xf', '/tmp/file.tar'])).stderr).toContain("only '-f -' (standard input/output) is modelled");
    expect((await simTar(['-xqf', '-'])).stderr).toContain("tar: invalid option -- 'q'\n");
    expect((await simTar(['cf', '-'])).stderr).toContain('Cowardly refusing to create an empty archive');
    const missing = await simTar(['cf', '-', '/nope']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('tar: nope: Cannot stat: No such file or directory\n');
  });
});
