// The `kemu` command as a user runs it: a cluster in the background, kubectl-style commands against it,
// and state that survives `kemu down` / `kemu up` with the file store. Uses the built CLI (dist/).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../packages/kemu/dist/cli.js');
const manifest = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../packages/kemu/examples/demo-app.yaml');
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-cli-'));

function kemu(...args: string[]) {
  const r = spawnSync(process.execPath, [cli, ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, KEMU_STATE_DIR: stateDir },
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

async function until(what: string, fn: () => boolean, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (fn()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}

afterAll(() => {
  kemu('down');
  fs.rmSync(stateDir, { recursive: true, force: true });
});

describe.runIf(fs.existsSync(cli))('kemu CLI', () => {
  it('explains what to do when no cluster is running, without a stack trace', () => {
    const r = kemu('get', 'pods');
    expect(r.code).toBe(1);
    expect(r.err.trim()).toMatch(/^error: cannot reach the kemu cluster at .*: start one with `kemu up`/);
    expect(r.err).not.toMatch(/\n\s+at /);
  });

  it('refuses a node that has no cluster to join, or bad flags, with the fix', () => {
    const lone = kemu('node', '--name', 'n1', '--node-ip', '172.18.0.50', '--pod-cidr', '10.244.50.0/24');
    expect(lone.code).toBe(1);
    expect(lone.err.trim()).toMatch(/^error: cannot reach the kemu cluster at .*kemu\.sock .*start one with `kemu up`/);
    const bad = kemu('node', '--name', 'Bad_Name', '--node-ip', '172.18.0.50', '--pod-cidr', '10.244.50.0/24');
    expect(bad.err.trim()).toBe(`error: invalid node name "Bad_Name": use lower-case letters, digits, '-' and '.'`);
    const proc = kemu('node', '--name', 'n1', '--node-ip', '172.18.0.50', '--pod-cidr', '10.244.50.0/24', '--runtime', 'process');
    expect(proc.err.trim()).toBe('error: --runtime process needs real network namespaces: add --datapath linux');
    for (const r of [lone, bad, proc]) expect(r.err).not.toMatch(/\n\s+at /);
  });

  it('runs the app through a detached cluster, and keeps its state across down and up with the file store', async () => {
    const up = kemu('up', '--nodes', '2', '--store', 'file', '--detach');
    expect(up.code, up.err).toBe(0);
    expect(up.out).toMatch(/kemu cluster is up in the background/);
    // The background cluster process got the V8 flags a foreground one runs with.
    const bgPid = Number(fs.readFileSync(path.join(stateDir, 'kemu.pid'), 'utf8'));
    expect(fs.readFileSync(`/proc/${bgPid}/cmdline`, 'utf8').split('\0')).toContain('--no-memory-reducer');
    expect(kemu('up', '--store', 'file', '--detach').err).toMatch(/already running/);

    const nodes = kemu('get', 'nodes');
    expect(nodes.out.split('\n')[0]).toMatch(/^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION$/);
    expect(nodes.out).toMatch(/kemu-node-1\s+Ready/);

    const applied = kemu('apply', '-f', manifest);
    expect(applied.code, applied.err).toBe(0);
    expect(applied.out).toContain('pod/db created');
    const reapplied = kemu('apply', '-f', manifest);
    expect(reapplied.err).toBe('');
    expect(reapplied.out).toContain('pod/db unchanged');
    expect(reapplied.out).toContain('persistentvolumeclaim/db-data unchanged');

    await until('pods Running', () => {
      const out = kemu('get', 'pods').out;
      return out.split('\n').filter((l) => /\s1\/1\s+Running\s/.test(l)).length === 5;
    });
    const wide = kemu('get', 'pods', '-o', 'wide').out;
    expect(wide).toMatch(/web-1\s+1\/1\s+Running\s+0\s+\S+\s+10\.244\.\d\.\d+\s+kemu-node-\d/);
    const asJson = JSON.parse(kemu('get', 'pod', 'db', '-o', 'json').out);
    expect(asJson.status.phase).toBe('Running');
    expect(kemu('get', 'pvc').out).toMatch(/db-data\s+Bound\s+pvc-/);
    expect(kemu('describe', 'pod', 'web-1').out).toMatch(/Init Containers:[\s\S]*migrate:[\s\S]*Events:/);

    const exec = kemu('exec', 'web-1', '--', 'hostname');
    expect(exec.code).toBe(0);
    expect(exec.out.trim()).toBe('web-1');
    expect(kemu('exec', 'web-1', '--', 'false').code).toBe(1);

    const trace = kemu('trace', 'web-1', 'web-2');
    expect(trace.code, trace.err).toBe(0);
    expect(trace.out).toMatch(/web-1 -> web-2 \(10\.244\.\d\.\d+\): reachable/);

    const missing = kemu('get', 'pod', 'nope');
    expect(missing.code).toBe(1);
    expect(missing.err.trim()).toBe('error: Error from server (NotFound): pods "nope" not found');
    expect(kemu('get', 'widgets').err.trim()).toBe('error: the server doesn\'t have a resource type "widgets"');

    expect(kemu('down').code).toBe(0);
    expect(kemu('get', 'pods').code).toBe(1);

    const again = kemu('up', '--nodes', '2', '--store', 'file', '--detach');
    expect(again.code, again.err).toBe(0);
    const after = kemu('get', 'pods');
    expect(after.out).toMatch(/^db\s/m);
    expect(after.out).toMatch(/^web-2\s/m);
    expect(kemu('get', 'pvc').out).toMatch(/db-data\s+Bound/);
    // The pods' network came back with them: the same path still works.
    expect(kemu('trace', 'web-1', 'web-2').out).toMatch(/web-1 -> web-2 \(10\.244\.\d\.\d+\): reachable/);
  }, 180_000);

  it('runs a foreground cluster in a node with its V8 flags, and stops it on one SIGINT', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-cli-fg-'));
    const parent = spawn(process.execPath, [cli, 'up', '--nodes', '1'], { env: { ...process.env, KEMU_STATE_DIR: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    parent.stdout.on('data', (d) => (out += d));
    parent.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => parent.once('exit', (code) => resolve(code)));
    try {
      const pidFile = path.join(dir, 'kemu.pid');
      await until('the cluster to come up', () => /kemu cluster is up/.test(out) && fs.existsSync(pidFile), 60_000);
      const pid = Number(fs.readFileSync(pidFile, 'utf8'));
      // The cluster runs in a child started with the flags; the command the user started waits for it.
      expect(pid).not.toBe(parent.pid);
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      expect(argv).toContain('--no-memory-reducer');
      expect(argv.some((a) => /^--max-old-space-size=\d+$/.test(a))).toBe(true);
      parent.kill('SIGINT');
      expect(await exited).toBe(0);
      expect(out).toMatch(/stopping the cluster/);
      expect(fs.existsSync(pidFile)).toBe(false);
      expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
    } finally {
      parent.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
