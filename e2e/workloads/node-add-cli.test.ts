// `kemu node add|remove` as a user runs them: against a `kemu up --detach` in the background, through the
// built CLI (dist/), with kubectl-style output and errors without stack traces.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../packages/kemu/dist/cli.js');
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-node-add-'));
const procStateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-node-add-proc-'));

function kemuIn(dir: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, KEMU_STATE_DIR: dir } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
const kemu = (...args: string[]) => kemuIn(stateDir, ...args);

afterAll(() => {
  for (const dir of [stateDir, procStateDir]) {
    kemuIn(dir, 'down');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

describe.runIf(fs.existsSync(cli))('kemu node add and remove', () => {
  it('refuses a bad taint before asking the cluster, and says when there is no cluster', () => {
    const bad = kemu('node', 'add', '--taint', 'gpu=h200');
    expect(bad.code).toBe(1);
    expect(bad.err).toContain("option '--taint <key=value:Effect>' argument 'gpu=h200' is invalid. invalid taint spec: gpu=h200: want key=value:Effect or key:Effect");
    const none = kemu('node', 'add');
    expect(none.code).toBe(1);
    expect(none.err.trim()).toMatch(/^error: cannot reach the kemu cluster at .*kemu\.sock/);
    // Running a node by hand still asks for its flags.
    expect(kemu('node', '--node-ip', '172.18.0.50', '--pod-cidr', '10.244.50.0/24').err.trim()).toBe("error: required option '--name <name>' not specified");
  });

  it('adds nodes to a running cluster, tainted as asked, and removes one', () => {
    const up = kemu('up', '--nodes', '1', '--fast', '--detach');
    expect(up.code, up.err).toBe(0);
    const added = kemu('node', 'add', '--count', '2');
    expect(added.code, added.err).toBe(0);
    expect(added.out.trim().split('\n')).toEqual(['node/kemu-node-2 added', 'node/kemu-node-3 added']);
    const gpu = kemu('node', 'add', '--name', 'gpu-1', '--taint', 'nvidia.com/gpu=h200:NoSchedule', '--taint', 'dedicated:NoExecute');
    expect(gpu.code, gpu.err).toBe(0);
    const nodes = kemu('get', 'nodes');
    for (const n of ['kemu-node-1', 'kemu-node-2', 'kemu-node-3', 'gpu-1']) expect(nodes.out).toMatch(new RegExp(`^${n}\\s+Ready`, 'm'));
    const taints = JSON.parse(kemu('get', 'node', 'gpu-1', '-o', 'json').out).spec.taints;
    expect(taints).toEqual([
      { key: 'nvidia.com/gpu', value: 'h200', effect: 'NoSchedule' },
      { key: 'dedicated', effect: 'NoExecute' },
    ]);
    const dup = kemu('node', 'add', '--name', 'gpu-1');
    expect(dup.code).toBe(1);
    expect(dup.err.trim()).toBe('error: Error from server (AlreadyExists): nodes "gpu-1" already exists');
    const removed = kemu('node', 'remove', 'kemu-node-2');
    expect(removed.code, removed.err).toBe(0);
    expect(removed.out.trim()).toBe('node/kemu-node-2 removed');
    expect(kemu('get', 'nodes').out).not.toMatch(/kemu-node-2/);
    const gone = kemu('node', 'remove', 'kemu-node-2');
    expect(gone.err.trim()).toBe('error: Error from server (NotFound): nodes "kemu-node-2" not found');
  }, 180_000);

  it('adds a node in a process of its own to a cluster run with --node-processes, registered with its taints', () => {
    const up = kemuIn(procStateDir, 'up', '--nodes', '1', '--node-processes', '--fast', '--detach');
    expect(up.code, up.err).toBe(0);
    const added = kemuIn(procStateDir, 'node', 'add', '--name', 'edge-1', '--taint', 'edge=true:NoSchedule');
    expect(added.code, added.err).toBe(0);
    const node = JSON.parse(kemuIn(procStateDir, 'get', 'node', 'edge-1', '-o', 'json').out);
    expect(node.spec.taints).toEqual([{ key: 'edge', value: 'true', effect: 'NoSchedule' }]);
    expect(node.metadata.annotations['kemu.io/cri-endpoint']).toMatch(/nodes\/edge-1\/cri\.sock$/);
    expect(kemuIn(procStateDir, 'get', 'nodes').out).toMatch(/^edge-1\s+Ready/m);
    const removed = kemuIn(procStateDir, 'node', 'remove', 'edge-1');
    expect(removed.code, removed.err).toBe(0);
    expect(kemuIn(procStateDir, 'get', 'nodes').out).not.toMatch(/edge-1/);
  }, 180_000);
});
