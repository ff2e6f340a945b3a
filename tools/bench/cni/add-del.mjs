#!/usr/bin/env node
// CNI ADD/DEL latency of bridge + host-local, four ways in one run with the same config shape:
//   reference  /usr/lib/cni/bridge + host-local, exec'd (what containerd does with the Debian plugins)
//   exec       kemu-bridge + kemu-host-local, exec'd from CNI_PATH (the built dist, as installed), alone
//   exec+daemon the same executables while `kemu-cni daemon` runs: each hands its call to the daemon
//   in-process the same plugin objects called through the in-process invoker on the linux datapath
// plus the bare start-up cost of `node -e 0`. Everything runs inside a throwaway network namespace that
// plays the node, so the real host is untouched.
//
//   node tools/bench/cni/add-del.mjs [--iterations 40] [--runs 3] [--json FILE]
//
// Reports p50/p90 per variant (median over runs) and the ratios the issue sets as targets:
//   in-process ADD <= 0.5 x reference ADD;  exec ADD <= (node -e 0) + reference ADD.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureBuilt, kemuBinDir, median, ms, pct, repo } from './common.mjs';

const REF = '/usr/lib/cni';

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log('usage: node tools/bench/cni/add-del.mjs [--iterations 40] [--runs 3] [--json FILE]  (root: uses network namespaces)');
  process.exit(0);
}
if (!process.env.KEMU_BENCH_CHILD) {
  if (process.getuid?.() !== 0) {
    console.error('add-del benchmark needs root (network namespaces)');
    process.exit(1);
  }
  ensureBuilt();
  const hostNs = `kemu-bench-node-${process.pid}`;
  spawnSync('ip', ['netns', 'add', hostNs]);
  const child = spawn(
    'ip',
    [
      'netns',
      'exec',
      hostNs,
      process.execPath,
      '--conditions=@kemu/source',
      '--import',
      'tsx',
      fileURLToPath(import.meta.url),
      ...process.argv.slice(2),
    ],
    { stdio: 'inherit', cwd: repo, env: { ...process.env, KEMU_BENCH_CHILD: '1' } },
  );
  child.on('exit', (code) => {
    spawnSync('ip', ['netns', 'del', hostNs]);
    process.exit(code ?? 1);
  });
} else {
  await main();
}

async function main() {
  const { values } = parseArgs({
    options: {
      iterations: { type: 'string', default: '40' },
      runs: { type: 'string', default: '3' },
      json: { type: 'string', default: path.join(repo, '.bench-out', 'cni-add-del.json') },
    },
  });
  const N = Number(values.iterations);
  const RUNS = Number(values.runs);
  const { createLinuxDatapath, InProcessInvoker, execPlugin, interpretOutput } = await import('@kemu/cni');
  const { bridge } = await import('@kemu/cni-bridge');
  const { hostLocal } = await import('@kemu/cni-host-local');

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-cni-'));
  const bin = kemuBinDir(path.join(tmp, 'bin'));
  const dp = createLinuxDatapath();
  // The resident daemon, as a user would run it (its own process, the built kemu-cni command).
  const daemonSock = path.join(tmp, 'run', 'cni.sock');
  const daemon = spawn(process.execPath, [path.join(repo, 'packages/cni/dist/install.js'), 'daemon', '--socket', daemonSock], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { PATH: process.env.PATH },
  });
  await new Promise((resolve, reject) => {
    let err = '';
    daemon.stderr.on('data', (b) => {
      err += b;
      if (err.includes('serving')) resolve();
    });
    daemon.once('exit', (code) => reject(new Error(`kemu-cni daemon exited with ${code}: ${err}`)));
  });
  const daemonCpu = () => {
    const f = readFileSync(`/proc/${daemon.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) * 10; // utime + stime
  };
  const invoker = new InProcessInvoker({ plugins: [bridge, hostLocal], datapath: dp });
  spawnSync('ip', ['link', 'set', 'lo', 'up']);

  const conf = (type, ipam, br, subnet) =>
    JSON.stringify({
      cniVersion: '1.0.0',
      name: `bench-${br}`,
      type,
      bridge: br,
      isGateway: true,
      ipMasq: false,
      ipam: { type: ipam, subnet, dataDir: path.join(tmp, 'ipam') },
    });
  const variants = {
    reference: {
      stdin: conf('bridge', 'host-local', 'bref0', '10.201.0.0/16'),
      path: REF,
      run: (env, stdin) => execPlugin(path.join(REF, 'bridge'), env, stdin),
    },
    exec: {
      stdin: conf('kemu-bridge', 'kemu-host-local', 'bexec0', '10.202.0.0/16'),
      path: bin,
      run: (env, stdin) => execPlugin(path.join(bin, 'kemu-bridge'), { ...env, KEMU_CNI_DAEMON: 'off' }, stdin),
    },
    'exec+daemon': {
      stdin: conf('kemu-bridge', 'kemu-host-local', 'bdmn0', '10.204.0.0/16'),
      path: bin,
      run: (env, stdin) => execPlugin(path.join(bin, 'kemu-bridge'), { ...env, KEMU_CNI_DAEMON: daemonSock }, stdin),
      cpu: daemonCpu,
    },
    'in-process': {
      stdin: conf('kemu-bridge', 'kemu-host-local', 'binp0', '10.203.0.0/16'),
      path: bin,
      run: (env, stdin) => invoker.invoke('kemu-bridge', env, stdin),
    },
  };

  let podN = 0;
  async function once(name, v) {
    const ns = `kemu-bench-pod-${process.pid}-${podN++}`;
    spawnSync('ip', ['netns', 'add', ns]);
    const env = {
      PATH: process.env.PATH,
      CNI_CONTAINERID: `bench${podN}`,
      CNI_NETNS: `/var/run/netns/${ns}`,
      CNI_IFNAME: 'eth0',
      CNI_PATH: v.path,
    };
    const c0 = cpuNow() + (v.cpu?.() ?? 0);
    const t0 = performance.now();
    const a = await v.run({ ...env, CNI_COMMAND: 'ADD' }, v.stdin);
    const t1 = performance.now();
    cpuSum[name] = (cpuSum[name] ?? 0) + cpuNow() + (v.cpu?.() ?? 0) - c0;
    cpuN[name] = (cpuN[name] ?? 0) + 1;
    const d = await v.run({ ...env, CNI_COMMAND: 'DEL' }, v.stdin);
    const t2 = performance.now();
    spawnSync('ip', ['netns', 'del', ns]);
    interpretOutput(name, { ...a, stderr: a.stderr ?? '' }, true);
    interpretOutput(name, { ...d, stderr: d.stderr ?? '' }, false);
    return { add: t1 - t0, del: t2 - t1 };
  }

  // CPU of an ADD: this process's own (in-process) plus that of reaped children (the plugin processes
  // and whatever they ran), from /proc/self/stat in clock ticks; summed over many ADDs the tick
  // granularity washes out. Steadier than wall time on a loaded machine.
  const cpuSum = {};
  const cpuN = {};
  function cpuNow() {
    const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    const children = (Number(f[13]) + Number(f[14])) * 10; // cutime + cstime, 100 ticks/s
    const own = process.cpuUsage();
    return children + (own.user + own.system) / 1000;
  }

  function nodeStart() {
    return new Promise((resolve) => {
      const c0 = cpuNow();
      const t0 = performance.now();
      // The plugins' environment, not this process's: variables such as NODE_EXTRA_CA_CERTS (read at
      // every Node start) would make the baseline slower than the plugins it is compared with.
      spawn(process.execPath, ['-e', '0'], { env: { PATH: process.env.PATH } }).on('close', () => {
        cpuSum.node0 = (cpuSum.node0 ?? 0) + cpuNow() - c0;
        cpuN.node0 = (cpuN.node0 ?? 0) + 1;
        resolve(performance.now() - t0);
      });
    });
  }

  // Warm-up: page cache, JIT, netlink sockets, bridges created once.
  for (const [name, v] of Object.entries(variants)) for (let i = 0; i < 3; i++) await once(name, v);
  for (let i = 0; i < 3; i++) await nodeStart();

  const perRun = [];
  for (let r = 0; r < RUNS; r++) {
    const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, { add: [], del: [] }]));
    const node0 = [];
    for (let i = 0; i < N; i++) {
      // Interleaved so drift (page cache, CPU frequency) hits every variant alike.
      for (const [name, v] of Object.entries(variants)) {
        const s = await once(name, v);
        samples[name].add.push(s.add);
        samples[name].del.push(s.del);
      }
      node0.push(await nodeStart());
    }
    const stats = { node0: { p50: pct(node0, 50), p90: pct(node0, 90) } };
    for (const [name, s] of Object.entries(samples)) {
      stats[name] = { add: { p50: pct(s.add, 50), p90: pct(s.add, 90) }, del: { p50: pct(s.del, 50), p90: pct(s.del, 90) } };
    }
    perRun.push(stats);
  }
  await dp.close();
  daemon.kill('SIGTERM');

  const med = (f) => median(perRun.map(f));
  const out = { iterations: N, runs: RUNS, variants: {} };
  console.log(`\nCNI bridge + host-local, ${N} iterations x ${RUNS} runs (median of per-run percentiles, ms)\n`);
  console.log('variant       ADD p50   ADD p90   DEL p50   DEL p90   ADD/ref   DEL/ref');
  const refAdd = med((s) => s.reference.add.p50);
  const refDel = med((s) => s.reference.del.p50);
  for (const name of Object.keys(variants)) {
    const v = {
      add: { p50: med((s) => s[name].add.p50), p90: med((s) => s[name].add.p90) },
      del: { p50: med((s) => s[name].del.p50), p90: med((s) => s[name].del.p90) },
    };
    out.variants[name] = v;
    console.log(
      `${name.padEnd(12)} ${ms(v.add.p50).padStart(8)}  ${ms(v.add.p90).padStart(8)}  ${ms(v.del.p50).padStart(8)}  ${ms(v.del.p90).padStart(8)}  ${(v.add.p50 / refAdd).toFixed(2).padStart(8)}  ${(v.del.p50 / refDel).toFixed(2).padStart(8)}`,
    );
  }
  const node0 = med((s) => s.node0.p50);
  out.node0 = { p50: node0, p90: med((s) => s.node0.p90) };
  console.log(`node -e 0     ${ms(node0).padStart(8)}  ${ms(out.node0.p90).padStart(8)}`);
  const inprocRatio = out.variants['in-process'].add.p50 / refAdd;
  const execBudget = node0 + refAdd;
  out.targets = {
    inProcessAddOverReference: inprocRatio,
    inProcessTargetMet: inprocRatio <= 0.5,
    execAdd: out.variants.exec.add.p50,
    execBudget,
    execTargetMet: out.variants.exec.add.p50 <= execBudget,
    execDaemonAdd: out.variants['exec+daemon'].add.p50,
    execDaemonTargetMet: out.variants['exec+daemon'].add.p50 <= execBudget,
  };
  console.log(
    `\ntarget in-process ADD <= 0.5 x reference: ${inprocRatio.toFixed(2)}x -> ${out.targets.inProcessTargetMet ? 'met' : 'NOT met'}`,
  );
  console.log(
    `target exec ADD <= node -e 0 + reference ADD (${ms(execBudget)}): alone ${ms(out.variants.exec.add.p50)} -> ${out.targets.execTargetMet ? 'met' : 'NOT met'}; with kemu-cni daemon ${ms(out.targets.execDaemonAdd)} -> ${out.targets.execDaemonTargetMet ? 'met' : 'NOT met'}`,
  );
  // Mean CPU per ADD (warm-up included), and for exec the part above a bare node start.
  const cpu = Object.fromEntries(Object.keys(cpuN).map((k) => [k, cpuSum[k] / cpuN[k]]));
  out.cpuPerAdd = cpu;
  console.log(
    `\nCPU per ADD (mean, ms): reference ${ms(cpu.reference)}, exec ${ms(cpu.exec)} (${ms(cpu.exec - cpu.node0)} above node -e 0 at ${ms(cpu.node0)}), exec+daemon ${ms(cpu['exec+daemon'])} (plugin and daemon), in-process ${ms(cpu['in-process'])}`,
  );
  mkdirSync(path.dirname(values.json), { recursive: true });
  writeFileSync(values.json, JSON.stringify(out, null, 2));
  rmSync(tmp, { recursive: true, force: true });
}
