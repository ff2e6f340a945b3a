// The kemu-scheduler command, run as its own process (from source through tsx, so no build is needed).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { peers, requirePeers, startEtcd } from '@kemu/test-peers';

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = mkdtempSync(path.join(tmpdir(), 'kemu-sched-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function cli(...args: string[]) {
  const r = spawnSync(
    process.execPath,
    ['--conditions=@kemu/source', '--import', 'tsx', path.join(pkg, 'src/cli.ts'), ...args],
    {
      cwd: pkg,
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function file(name: string, text: string): string {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe('kemu-scheduler simulate', () => {
  it('prints one placement per pod, including the preemption it makes', () => {
    const r = cli('simulate', '--cluster', 'examples/cluster.yaml', '--pods', 'examples/pods.yaml');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const lines = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.pod, l.node, l.reason])).toEqual([
      ['default/web-1', null, 'Preempted'],
      ['default/urgent', 'node-b', 'Scheduled'],
      ['default/huge', null, 'Unschedulable'],
    ]);
    expect(lines[1].preempted).toEqual(['default/web-1']);
    expect(lines[2].message).toBe(
      '0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod..',
    );
  });

  it('--explain with an out-of-tree plugin module shows its weighted score', () => {
    const r = cli(
      'simulate',
      '--cluster',
      'examples/cluster.yaml',
      '--pods',
      'examples/pods.yaml',
      '--plugin',
      'examples/prefer-label.mjs',
      '--config',
      'examples/prefer-label-config.yaml',
      '--explain',
      '-o',
      'json',
    );
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out);
    const b = out[0].scores.find((s: { node: string }) => s.node === 'node-b');
    expect(b.plugins.PreferLabel).toBe(500);
    expect(out[2].filters['node-a']).toEqual({
      plugin: 'NodeResourcesFit',
      code: 'Unschedulable',
      reasons: ['Insufficient cpu'],
    });
  });

  it('an invalid config names the field and exits 1 without a stack trace', () => {
    const cfg = file(
      'bad.yaml',
      'apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n  - plugins:\n      score:\n        enabled:\n          - name: NoSuchPlugin\n',
    );
    const r = cli(
      'simulate',
      '--cluster',
      'examples/cluster.yaml',
      '--pods',
      'examples/pods.yaml',
      '--config',
      cfg,
    );
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toBe(
      `error: invalid configuration: profiles[0].plugins.score.enabled[0].name: Invalid value: "NoSuchPlugin": plugin is not registered\n`,
    );
  });

  it('an out-of-range value in the config file names the field', () => {
    const cfg = file('pct.yaml', 'percentageOfNodesToScore: 150\n');
    const r = cli(
      'simulate',
      '--cluster',
      'examples/cluster.yaml',
      '--pods',
      'examples/pods.yaml',
      '--config',
      cfg,
    );
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `error: invalid configuration in ${cfg}: percentageOfNodesToScore: Invalid value: 150: not in valid range [0-100]\n`,
    );
  });

  it('missing files and malformed manifests get one line each', () => {
    const missing = cli('simulate', '--cluster', path.join(dir, 'nope.yaml'), '--pods', 'examples/pods.yaml');
    expect(missing.code).toBe(1);
    expect(missing.err).toBe(`error: cannot read --cluster ${path.join(dir, 'nope.yaml')}: no such file\n`);
    const broken = file('broken.yaml', 'kind: Pod\nmetadata: [\n');
    const bad = cli('simulate', '--cluster', 'examples/cluster.yaml', '--pods', broken);
    expect(bad.code).toBe(1);
    expect(bad.err.split('\n').length).toBe(2);
    expect(bad.err).toMatch(new RegExp(`^error: --pods ${broken}: `));
    const notPods = cli('simulate', '--cluster', 'examples/cluster.yaml', '--pods', 'examples/cluster.yaml');
    expect(notPods.err).toBe(
      'error: --pods examples/cluster.yaml: expected only Pod objects, found Node "node-a"\n',
    );
  });

  it('a node with a malformed quantity is named', () => {
    const cluster = file(
      'badnode.yaml',
      'apiVersion: v1\nkind: Node\nmetadata: { name: n1 }\nstatus: { allocatable: { cpu: four } }\n',
    );
    const r = cli('simulate', '--cluster', cluster, '--pods', 'examples/pods.yaml');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error: Node "n1": invalid quantity "four"/);
    expect(r.err.trim().split('\n')).toHaveLength(1);
  });

  it('reads PodDisruptionBudgets and CSIStorageCapacities, and names a missing PriorityClass', () => {
    const cluster = file(
      'pdb.yaml',
      [
        'apiVersion: policy/v1',
        'kind: PodDisruptionBudget',
        'metadata: { name: guard, namespace: default }',
        'spec: { selector: { matchLabels: { app: x } } }',
        'status: { disruptionsAllowed: 0 }',
        '---',
        'apiVersion: storage.k8s.io/v1',
        'kind: CSIStorageCapacity',
        'metadata: { name: cap, namespace: default }',
        'storageClassName: fast',
        'capacity: 10Gi',
        '---',
        'apiVersion: v1',
        'kind: Node',
        'metadata: { name: n1 }',
        'status: { allocatable: { cpu: "4", memory: 8Gi, pods: "10" } }',
      ].join('\n'),
    );
    const r = cli('simulate', '--cluster', cluster, '--pods', 'examples/pods.yaml');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const urgent = r.out.trim().split('\n').map((l) => JSON.parse(l)).find((p) => p.pod === 'default/urgent');
    expect(urgent).toMatchObject({ node: null, reason: 'Unschedulable', message: 'no PriorityClass with name high was found' });
  });

  it('requires --cluster and --pods', () => {
    const r = cli('simulate', '--pods', 'examples/pods.yaml');
    expect(r.code).toBe(1);
    expect(r.err).toContain("required option '--cluster <file>' not specified");
  });
});

describe('kemu-scheduler run', () => {
  it('schedules loaded pods against a store and prints the events', () => {
    const r = cli('run', '--load', 'examples/cluster.yaml', '--load', 'examples/pods.yaml', '--once');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const events = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events).toContainEqual({
      pod: 'default/huge',
      type: 'Warning',
      reason: 'FailedScheduling',
      message:
        '0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod..',
    });
    // All pods are queued before the first cycle, so the high-priority pod goes first and takes node-b.
    expect(events).toContainEqual({
      pod: 'default/urgent',
      type: 'Normal',
      reason: 'Scheduled',
      message: 'Successfully assigned default/urgent to node-b',
    });
    expect(events.find((e) => e.pod === 'default/web-1')?.reason).toBe('FailedScheduling');
  });
});

const canEtcd = requirePeers('the kemu-scheduler run --etcd test', [peers.etcd]);

describe.runIf(canEtcd)(
  'kemu-scheduler run --etcd (a separate process sharing the cluster through etcd)',
  () => {
    it('binds pods created by another client and stops cleanly on SIGTERM', async () => {
      const { spawn } = await import('node:child_process');
      const { createEtcdStore } = await import('@kemu/core');
      // Ready before the store opens: a client that dials a still-starting etcd is refused.
      const etcd = await startEtcd();
      const client = etcd.endpoint;
      let sched: ReturnType<typeof spawn> | undefined;
      try {
        const store = await createEtcdStore({ endpoints: client, prefix: '/sched-test/' });
        await store.create({
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name: 'n1', labels: { 'kubernetes.io/hostname': 'n1' } },
          status: { allocatable: { cpu: '2', memory: '4Gi', pods: '10' } },
        });
        sched = spawn(
          process.execPath,
          [
            '--conditions=@kemu/source',
            '--import',
            'tsx',
            path.join(pkg, 'src/cli.ts'),
            'run',
            '--etcd',
            client,
            '--etcd-prefix',
            '/sched-test/',
          ],
          {
            cwd: pkg,
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let out = '';
        let err = '';
        sched.stdout!.on('data', (d) => (out += d));
        sched.stderr!.on('data', (d) => (err += d));
        await store.create({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'web', namespace: 'default' },
          spec: { containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: '1' } } }] },
        });
        let bound: string | undefined;
        for (let i = 0; i < 300 && !bound; i++) {
          bound = ((await store.get('Pod', 'default', 'web')) as { spec: { nodeName?: string } }).spec
            .nodeName;
          if (!bound) await new Promise((r) => setTimeout(r, 100));
        }
        expect(bound).toBe('n1');
        // The Scheduled event is written after the binding; give the event watch a moment to print it.
        for (let i = 0; i < 100 && !out.includes('"reason":"Scheduled"'); i++)
          await new Promise((r) => setTimeout(r, 100));
        const exited = new Promise<number | null>((r) => sched!.once('exit', (code) => r(code)));
        sched.kill('SIGTERM');
        expect(await exited).toBe(0);
        expect(err).toBe('');
        expect(out).toContain('"reason":"Scheduled"');
        await store.close();
      } finally {
        if (sched && sched.exitCode === null) sched.kill('SIGKILL');
        await etcd.stop();
      }
    }, 90_000);

    it('a malformed --etcd URL is one clear line', () => {
      const r = cli('run', '--etcd', 'not-a-url');
      expect(r.code).toBe(1);
      expect(r.err).toBe('error: --etcd: "not-a-url" is not a client URL like http://127.0.0.1:2379\n');
    });
  },
);
