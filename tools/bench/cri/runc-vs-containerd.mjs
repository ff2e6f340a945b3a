#!/usr/bin/env node
// kemu-cri's runc backend against containerd 1.6 (its CRI plugin, runc through its shim), driven by the same
// CRI client in the same run: image pull (RemoveImage, then PullImage of the same busybox image from the same
// local registry, so each pull downloads) and pod startup (RunPodSandbox → CreateContainer → StartContainer
// until the container runs). Everything — registry, containerd, kemu-cri — runs in a network namespace the
// benchmark makes (the node); pods get the reference bridge + host-local plugins' network inside it.
//
//   node tools/bench/cri/runc-vs-containerd.mjs [--pulls 8] [--pods 8] [--runs 3] [--json FILE]
//
// Reports per runtime the medians over runs of each run's p50 and p99, and the ratio kemu / containerd.
// Runtimes alternate within each run; one warm-up pull and pod per runtime per run are not counted.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const self = fileURLToPath(import.meta.url);
const repo = path.resolve(path.dirname(self), '../../..');
const { values } = parseArgs({
  options: {
    pulls: { type: 'string', default: '8' },
    pods: { type: 'string', default: '8' },
    runs: { type: 'string', default: '3' },
    json: { type: 'string', default: path.join(repo, '.bench-out', 'cri-runc-vs-containerd.json') },
    netns: { type: 'string' },
  },
});

// Outer: make the node's network namespace and run the benchmark inside it (TypeScript helpers via tsx).
if (!values.netns) {
  const ns = `kemu-bench-runc-${process.pid}`;
  spawnSync('ip', ['netns', 'add', ns]);
  spawnSync('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  try {
    const r = spawnSync(
      'nsenter',
      [`--net=/var/run/netns/${ns}`, process.execPath, '--conditions=@kemu/source', '--import', 'tsx', self, ...process.argv.slice(2), '--netns', ns],
      { stdio: 'inherit', cwd: repo },
    );
    process.exitCode = r.status ?? 1;
  } finally {
    spawnSync('ip', ['netns', 'delete', ns]);
  }
  process.exit();
}

const PULLS = Number(values.pulls);
const PODS = Number(values.pods);
const RUNS = Number(values.runs);
const { buildPauseImage, cleanupDir, startContainerd } = await import(path.join(repo, 'e2e/containerd/harness.ts'));
const { buildBusyboxImages, startRegistry } = await import(path.join(repo, 'packages/cri/src/test-util-registry.ts'));
const { cri, openChannel } = await import('@kemu/proto');

const tmp = mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-runc-'));
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const median = (xs) => pct(xs, 50);

const built = buildBusyboxImages(path.join(tmp, 'images'));
const registry = await startRegistry();
await registry.push(built.layout, 'v1', 'bench/busybox:v1');
const IMAGE = `${registry.host}/bench/busybox:v1`;

const hosts = path.join(tmp, 'hosts');
mkdirSync(path.join(hosts, registry.host), { recursive: true });
writeFileSync(
  path.join(hosts, registry.host, 'hosts.toml'),
  `server = "http://${registry.host}"\n\n[host."http://${registry.host}"]\n  capabilities = ["pull", "resolve"]\n`,
);
const cniConf = path.join(tmp, 'net.d');
mkdirSync(cniConf);
// containerd needs an interface with an address: the reference bridge + host-local, inside the node namespace.
writeFileSync(
  path.join(cniConf, '10-bench.conflist'),
  JSON.stringify({
    cniVersion: '1.0.0',
    name: 'bench',
    plugins: [{ type: 'bridge', bridge: 'bench0', isGateway: true, ipMasq: false, ipam: { type: 'host-local', ranges: [[{ subnet: '10.123.0.0/16' }]], dataDir: path.join(tmp, 'ipam') } }],
  }),
);
const logs = path.join(tmp, 'logs');
mkdirSync(logs);

const containerd = await startContainerd({
  dir: path.join(tmp, 'containerd'),
  netns: values.netns,
  cniConfDir: cniConf,
  cniBinDir: '/usr/lib/cni',
  sandboxImageArchive: buildPauseImage(tmp),
  registryConfigPath: hosts,
});

const kemuSock = path.join(tmp, 'kemu', 'cri.sock');
mkdirSync(path.dirname(kemuSock), { recursive: true });
const kemu = spawn(
  process.execPath,
  [
    '--conditions=@kemu/source', '--import', 'tsx', path.join(repo, 'packages/cri/src/cli.ts'), 'serve',
    '--backend', 'runc', '--listen', `unix://${kemuSock}`, '--state-dir', path.join(tmp, 'kemu', 'state'),
    '--cni-conf-dir', cniConf, '--cni-bin-dir', '/usr/lib/cni', '--allowed-log-root', logs, '--registry-config', hosts,
  ],
  { stdio: ['ignore', 'ignore', 'pipe'], cwd: repo },
);
let kemuErr = '';
kemu.stderr.on('data', (d) => (kemuErr += d));
for (let i = 0; !existsSync(kemuSock); i++) {
  if (kemu.exitCode !== null || i > 600) throw new Error(`kemu-cri did not start: ${kemuErr}`);
  await new Promise((r) => setTimeout(r, 50));
}

const runtimes = {};
for (const [name, socket] of [['containerd', containerd.socket], ['kemu-runc', kemuSock]]) {
  const ch = openChannel(`unix://${socket}`);
  runtimes[name] = { ch, rt: ch.service(cri.RuntimeServiceService), img: ch.service(cri.ImageServiceService) };
}

let seq = 0;
async function onePull({ img }) {
  await img.RemoveImage({ image: { image: IMAGE } }).catch(() => undefined);
  const t0 = performance.now();
  await img.PullImage({ image: { image: IMAGE } }, { timeoutMs: 120_000 });
  return performance.now() - t0;
}

async function onePod({ rt }) {
  const name = `bench-${process.pid}-${++seq}`;
  const config = {
    metadata: { name, namespace: 'bench', uid: `uid-${name}`, attempt: 0 },
    hostname: name,
    logDirectory: path.join(logs, name),
    linux: {},
  };
  const t0 = performance.now();
  const { podSandboxId } = await rt.RunPodSandbox({ config }, { timeoutMs: 60_000 });
  const { containerId } = await rt.CreateContainer(
    { podSandboxId, config: { metadata: { name: 'c', attempt: 0 }, image: { image: IMAGE }, command: ['sleep', '3600'], logPath: 'c.log' }, sandboxConfig: config },
    { timeoutMs: 60_000 },
  );
  await rt.StartContainer({ containerId }, { timeoutMs: 60_000 });
  const ms = performance.now() - t0;
  const st = await rt.ContainerStatus({ containerId });
  if (st.status?.state !== cri.ContainerState.CONTAINER_RUNNING) throw new Error(`${name}: container is not running`);
  return { ms, podSandboxId };
}

async function cleanup({ rt }, pods) {
  for (const id of pods) {
    await rt.StopPodSandbox({ podSandboxId: id }, { timeoutMs: 60_000 });
    await rt.RemovePodSandbox({ podSandboxId: id }, { timeoutMs: 60_000 });
  }
}

const result = { pull: {}, podStartup: {} };
for (const n of Object.keys(runtimes)) {
  result.pull[n] = { p50: [], p99: [] };
  result.podStartup[n] = { p50: [], p99: [] };
}
try {
  for (let run = 0; run < RUNS; run++) {
    for (const [name, r] of Object.entries(runtimes)) {
      await onePull(r); // warm-up
      const pulls = [];
      for (let i = 0; i < PULLS; i++) pulls.push(await onePull(r));
      const warm = await onePod(r); // warm-up
      const pods = [warm.podSandboxId];
      const starts = [];
      for (let i = 0; i < PODS; i++) {
        const p = await onePod(r);
        starts.push(p.ms);
        pods.push(p.podSandboxId);
      }
      await cleanup(r, pods);
      result.pull[name].p50.push(pct(pulls, 50));
      result.pull[name].p99.push(pct(pulls, 99));
      result.podStartup[name].p50.push(pct(starts, 50));
      result.podStartup[name].p99.push(pct(starts, 99));
    }
  }
} finally {
  for (const r of Object.values(runtimes)) r.ch.close();
  kemu.kill('SIGTERM');
  await new Promise((r) => (kemu.exitCode !== null ? r() : kemu.once('exit', r)));
  await containerd.stop();
  await registry.stop();
  // kemu-cri's containers outlive it by design (as containerd's do); the benchmark removed its pods first.
  cleanupDir(tmp);
}

const ctd = spawnSync('containerd', ['--version'], { encoding: 'utf8' }).stdout.trim().split(' ')[2];
const runcV = spawnSync('runc', ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0];
console.log(`containerd ${ctd}, ${runcV}; ${PULLS} pulls and ${PODS} pods per runtime x ${RUNS} runs; medians of per-run p50/p99 (ms)`);
const rows = [];
for (const [what, key] of [['image pull', 'pull'], ['pod startup (run+create+start)', 'podStartup']]) {
  const k = result[key]['kemu-runc'];
  const c = result[key].containerd;
  const row = {
    what,
    kemu: { p50: median(k.p50), p99: median(k.p99) },
    containerd: { p50: median(c.p50), p99: median(c.p99) },
  };
  row.ratio = { p50: row.kemu.p50 / row.containerd.p50, p99: row.kemu.p99 / row.containerd.p99 };
  rows.push(row);
  console.log(
    `${what.padEnd(32)} kemu p50 ${row.kemu.p50.toFixed(1)} p99 ${row.kemu.p99.toFixed(1)} | containerd p50 ${row.containerd.p50.toFixed(1)} p99 ${row.containerd.p99.toFixed(1)} | ratio p50 ${row.ratio.p50.toFixed(2)} p99 ${row.ratio.p99.toFixed(2)}`,
  );
}
mkdirSync(path.dirname(values.json), { recursive: true });
writeFileSync(values.json, JSON.stringify({ date: new Date().toISOString(), pulls: PULLS, pods: PODS, runs: RUNS, rows, raw: result }, null, 2));
