#!/usr/bin/env node
// Pod network setup under containerd 1.6's CRI plugin: the reference plugins, kemu's plugin executables
// alone, and kemu's with `kemu-cni daemon`, in the same run. Each pod is RunPodSandbox (one hostPort) +
// StopPodSandbox + RemovePodSandbox over containerd's CRI socket, one at a time; containerd runs in a network
// namespace of the benchmark's (e2e/containerd/harness.ts, shared with the e2e test).
//
//   node tools/bench/cni/containerd.mjs [--pods 15] [--runs 3] [--json FILE]
//
// Reports per variant the medians over runs of: RunPodSandbox p50, Stop p50, Remove p50, and containerd's own
// measure of the network part (its sandbox_create_network / sandbox_delete_network timers: the CNI ADD and DEL
// of the whole chain, loopback network included), with the ratio to the reference. Variants are interleaved
// within each run; each run starts a fresh containerd per variant, and two warm-up pods are not counted.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureBuilt, kemuBinDir, median, ms, pluginBin, repo } from './common.mjs';

const self = fileURLToPath(import.meta.url);
// The harness is TypeScript (and loads @kemu/proto from source): run under tsx with the source condition.
if (!process.env.KEMU_BENCH_UNDER_TSX) {
  const r = spawnSync(process.execPath, ['--conditions=@kemu/source', '--import', 'tsx', self, ...process.argv.slice(2)], {
    stdio: 'inherit',
    cwd: repo,
    env: { ...process.env, KEMU_BENCH_UNDER_TSX: '1' },
  });
  process.exit(r.status ?? 1);
}

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '15' },
    runs: { type: 'string', default: '3' },
    json: { type: 'string', default: path.join(repo, '.bench-out', 'cni-containerd.json') },
  },
});
const PODS = Number(values.pods);
const RUNS = Number(values.runs);
const { buildPauseImage, cleanupDir, startContainerd } = await import(path.join(repo, 'e2e/containerd/harness.ts'));
const { cri } = await import('@kemu/proto');

ensureBuilt();
const tmp = mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-ctd-'));
const ns = `kemu-bench-ctd-${process.pid}`;
const kemuBin = kemuBinDir(path.join(tmp, 'kemu-bin'));
// containerd's CRI plugin adds a loopback network of "type": "loopback" from the same bin dir: kemu's here.
symlinkSync(pluginBin('loopback'), path.join(kemuBin, 'loopback'));
const pause = buildPauseImage(tmp);
spawnSync('ip', ['netns', 'add', ns]);
spawnSync('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);

const daemonSock = path.join(tmp, 'run', 'cni.sock');
const daemon = spawn(process.execPath, [path.join(repo, 'packages/cni/dist/install.js'), 'daemon', '--socket', daemonSock], {
  stdio: ['ignore', 'ignore', 'pipe'],
});
await new Promise((resolve, reject) => {
  let err = '';
  daemon.stderr.on('data', (b) => {
    err += b;
    if (err.includes('serving')) resolve();
  });
  daemon.once('exit', (code) => reject(new Error(`kemu-cni daemon exited with ${code}: ${err}`)));
});

const kemuTypes = { bridge: 'kemu-bridge', ipam: 'kemu-host-local', portmap: 'kemu-portmap' };
const variants = {
  reference: { bin: '/usr/lib/cni', types: { bridge: 'bridge', ipam: 'host-local', portmap: 'portmap' }, env: {} },
  'kemu exec': { bin: kemuBin, types: kemuTypes, env: { KEMU_CNI_DAEMON: 'off' } },
  'kemu + daemon': { bin: kemuBin, types: kemuTypes, env: { KEMU_CNI_DAEMON: daemonSock } },
};

/** Sum and count of a Prometheus histogram (all label sets) from containerd's metrics text. */
function histogram(text, name) {
  let sum = 0;
  let count = 0;
  for (const line of text.split('\n')) {
    const m = /^(\S+?)(?:\{[^}]*\})? (\S+)$/.exec(line);
    if (!m) continue;
    if (m[1] === `${name}_sum`) sum += Number(m[2]);
    if (m[1] === `${name}_count`) count += Number(m[2]);
  }
  return { sum, count };
}
const netMean = (before, after, name) => {
  const a = histogram(after, name);
  const b = histogram(before, name);
  return a.count > b.count ? ((a.sum - b.sum) / (a.count - b.count)) * 1000 : Number.NaN;
};

let podSeq = 0;
async function measure(name, v, run) {
  const dir = path.join(tmp, `r${run}-${name.replace(/\W+/g, '-')}`);
  const confDir = path.join(dir, 'net.d');
  mkdirSync(confDir, { recursive: true });
  writeFileSync(
    path.join(confDir, '10-bench.conflist'),
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'bench',
      plugins: [
        {
          type: v.types.bridge,
          bridge: 'kbench0',
          isGateway: true,
          isDefaultGateway: true,
          ipMasq: true,
          ipam: { type: v.types.ipam, ranges: [[{ subnet: '10.64.0.0/16' }]], dataDir: path.join(dir, 'ipam') },
        },
        { type: v.types.portmap, capabilities: { portMappings: true } },
      ],
    }),
  );
  const ctd = await startContainerd({
    dir: path.join(dir, 'containerd'),
    netns: ns,
    cniConfDir: confDir,
    cniBinDir: v.bin,
    env: v.env,
    sandboxImageArchive: pause,
    metricsPort: 19_000 + (podSeq % 1000),
  });
  const lat = { run: [], stop: [], remove: [] };
  let before = '';
  try {
    for (let i = 0; i < PODS + 2; i++) {
      if (i === 2) before = ctd.metrics();
      const n = podSeq++;
      const t0 = performance.now();
      const r = await ctd.runtime.RunPodSandbox(
        {
          config: {
            metadata: { name: `p${n}`, uid: `u${n}`, namespace: 'bench', attempt: 0 },
            hostname: `p${n}`,
            logDirectory: path.join(dir, 'logs'),
            portMappings: [{ protocol: cri.Protocol.TCP, containerPort: 80, hostPort: 20_000 + (n % 10_000) }],
            linux: {},
          },
        },
        { timeoutMs: 120_000 },
      );
      const t1 = performance.now();
      await ctd.runtime.StopPodSandbox({ podSandboxId: r.podSandboxId }, { timeoutMs: 120_000 });
      const t2 = performance.now();
      await ctd.runtime.RemovePodSandbox({ podSandboxId: r.podSandboxId }, { timeoutMs: 120_000 });
      const t3 = performance.now();
      if (i >= 2) {
        lat.run.push(t1 - t0);
        lat.stop.push(t2 - t1);
        lat.remove.push(t3 - t2);
      }
    }
    const after = ctd.metrics();
    return {
      run: median(lat.run),
      stop: median(lat.stop),
      remove: median(lat.remove),
      netAdd: netMean(before, after, 'containerd_cri_sandbox_create_network_seconds'),
      netDel: netMean(before, after, 'containerd_cri_sandbox_delete_network_seconds'),
    };
  } finally {
    await ctd.stop();
    spawnSync('ip', ['-n', ns, 'link', 'del', 'kbench0']);
    spawnSync('nsenter', [`--net=/var/run/netns/${ns}`, 'iptables', '-w', '-t', 'nat', '-F']);
  }
}

const results = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
try {
  for (let run = 0; run < RUNS; run++) {
    const names = Object.keys(variants);
    // Rotate the order each run so no variant always runs first after a cold start.
    const order = names.map((_, i) => names[(i + run) % names.length]);
    for (const name of order) {
      const r = await measure(name, variants[name], run);
      results[name].push(r);
      console.error(
        `run ${run + 1}/${RUNS} ${name}: RunPodSandbox ${ms(r.run)} ms, network ADD ${ms(r.netAdd)} ms, DEL ${ms(r.netDel)} ms`,
      );
    }
  }
} finally {
  daemon.kill('SIGTERM');
  spawnSync('ip', ['netns', 'del', ns]);
  cleanupDir(tmp);
}

const summary = {};
for (const [name, rs] of Object.entries(results)) {
  summary[name] = Object.fromEntries(['run', 'stop', 'remove', 'netAdd', 'netDel'].map((k) => [k, median(rs.map((r) => r[k]))]));
}
const ref = summary.reference;
console.log(`containerd ${spawnSync('containerd', ['--version'], { encoding: 'utf8' }).stdout.trim().split(' ')[2]}, ${PODS} pods x ${RUNS} runs, medians`);
console.log('variant          RunPodSandbox  Stop    Remove  | network ADD (x ref)   network DEL (x ref)');
for (const [name, s] of Object.entries(summary)) {
  console.log(
    `${name.padEnd(16)} ${ms(s.run).padStart(9)} ms ${ms(s.stop).padStart(7)} ${ms(s.remove).padStart(7)} | ` +
      `${ms(s.netAdd).padStart(8)} ms (${(s.netAdd / ref.netAdd).toFixed(2)}x)   ${ms(s.netDel).padStart(8)} ms (${(s.netDel / ref.netDel).toFixed(2)}x)`,
  );
}
mkdirSync(path.dirname(values.json), { recursive: true });
writeFileSync(values.json, JSON.stringify({ pods: PODS, runs: RUNS, results, summary }, null, 2));
