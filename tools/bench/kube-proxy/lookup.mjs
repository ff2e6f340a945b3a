#!/usr/bin/env node
// kube-proxy benchmark: what a new connection pays to find its Service, iptables mode (KUBE-SERVICES is
// scanned rule by rule) vs nftables mode (one service-ips verdict-map lookup), as Services grow; on netsim
// and on the real kernel (the peer) in the same run.
//
//   node tools/bench/kube-proxy/lookup.mjs [--services 100,1000,10000] [--endpoints 5] [--runs 5] [--connects 300]
//        [--real-connects 1000] [--real-iptables-max 1000] [--json]
//
// Per size and mode, medians of --runs: the time of a TCP connect from a client pod to the last Service's
// ClusterIP (the end of KUBE-SERVICES) and, as the baseline without any Service lookup, to an endpoint's pod
// IP directly. netsim: a connect is one simulated handshake through three namespaces. Real kernel (root
// only): the same topology in scratch network namespaces, rules loaded with iptables-restore or nft -f, and
// a Node client making --real-connects sequential connects; iptables mode only up to --real-iptables-max
// Services (loading 170,000 iptables rules takes many minutes here). The ratio iptables/nftables of the
// connect time is a same-run figure; the direct connect shows what a connect costs without a Service.
import { spawnSync } from 'node:child_process';
import { argValue, runFromSource } from '../lib/from-source.mjs';

runFromSource(import.meta.url, ['--expose-gc']);

const { World } = await import('@kemu/netsim');
const { buildNftables, buildRules, nftablesScript, restoreInput, servicePorts } = await import('@kemu/kube-proxy');

const arg = argValue;
const SIZES = arg('services', '100,1000,10000').split(',').map(Number);
const ENDPOINTS = Number(arg('endpoints', '5'));
const RUNS = Number(arg('runs', '5'));
const CONNECTS = Number(arg('connects', '300'));
const REAL_CONNECTS = Number(arg('real-connects', '1000'));
const REAL_IPT_MAX = Number(arg('real-iptables-max', '1000'));
const JSON_OUT = process.argv.includes('--json');
const CTX = { nodeName: 'node', clusterCIDR: '10.244.0.0/16' };
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const svcIP = (i) => `10.96.${(i >> 8) & 255}.${i & 255}`;
const epIP = (j) => `10.32.${(j + 2) >> 8}.${(j + 2) & 255}`;

function objects(n) {
  const services = [];
  const slices = [];
  for (let i = 0; i < n; i++) {
    const name = `svc-${i}`;
    services.push({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'bench' }, spec: { type: 'ClusterIP', clusterIP: svcIP(i), clusterIPs: [svcIP(i)], ports: [{ name: 'http', protocol: 'TCP', port: 80 }] } });
    slices.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${name}-x`, namespace: 'bench', labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4',
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
      endpoints: Array.from({ length: ENDPOINTS }, (_, j) => ({ addresses: [epIP(j)], conditions: { ready: true } })),
    });
  }
  return servicePorts(services, slices);
}

/** client -- node -- server; the server holds every endpoint address. */
function simWorld() {
  const w = new World();
  for (const ns of ['client', 'node', 'server']) {
    w.addNamespace(ns);
    w.setLink(ns, 'lo', { up: true });
  }
  w.addLink('node', { kind: 'veth', name: 'c', peer: { name: 'eth0', ns: 'client' } });
  w.addLink('node', { kind: 'veth', name: 's', peer: { name: 'eth0', ns: 'server' } });
  for (const [ns, dev, addr] of [['node', 'c', '10.244.1.1/24'], ['client', 'eth0', '10.244.1.2/24'], ['node', 's', '10.32.0.1/11'], ['server', 'eth0', '10.32.0.2/11']]) {
    w.addAddress(ns, dev, addr);
    w.setLink(ns, dev, { up: true });
  }
  w.setForwarding('node', 4, true);
  w.addRoute('client', { dst: 'default', via: '10.244.1.1' });
  w.addRoute('server', { dst: 'default', via: '10.32.0.1' });
  for (let j = 1; j < ENDPOINTS; j++) w.addAddress('server', 'eth0', `${epIP(j)}/11`);
  w.listen('server', { proto: 'tcp', port: 8080 });
  w.listen('server', { proto: 'tcp', port: 80 });
  return w;
}

function simConnectUs(w, ip) {
  for (let i = 0; i < 100; i++) w.tcpConnect('client', ip, 80, { trace: false });
  w.flushConntrack('node');
  const t0 = performance.now();
  for (let i = 0; i < CONNECTS; i++) {
    const r = w.tcpConnect('client', ip, 80, { trace: false });
    if (r.state !== 'established') throw new Error(`connect to ${ip}: ${r.state}`);
  }
  const us = ((performance.now() - t0) * 1000) / CONNECTS;
  w.flushConntrack('node');
  return us;
}

// --- the real kernel -------------------------------------------------------------------------------
const isRoot = process.getuid?.() === 0;
const tag = `kemu-bench-${process.pid}`;
const made = [];
function sh(cmd, args, input) {
  const r = spawnSync(cmd, args, { input, encoding: 'utf8', maxBuffer: 1 << 30, timeout: 600_000, killSignal: 'SIGKILL' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.slice(0, 6).join(' ')}: ${r.stderr || r.error}`);
  return r.stdout;
}
function realTopology() {
  for (const n of ['client', 'node', 'server']) {
    sh('ip', ['netns', 'add', `${tag}-${n}`]);
    made.push(`${tag}-${n}`);
  }
  const [C, N, S] = ['client', 'node', 'server'].map((n) => `${tag}-${n}`);
  sh('ip', ['link', 'add', 'c', 'netns', N, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', C]);
  sh('ip', ['link', 'add', 's', 'netns', N, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', S]);
  for (const [ns, dev, addr] of [[N, 'c', '10.244.1.1/24'], [C, 'eth0', '10.244.1.2/24'], [N, 's', '10.32.0.1/11'], [S, 'eth0', '10.32.0.2/11']]) {
    sh('ip', ['-n', ns, 'addr', 'add', addr, 'dev', dev]);
    sh('ip', ['-n', ns, 'link', 'set', dev, 'up']);
    sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  }
  for (let j = 1; j < ENDPOINTS; j++) sh('ip', ['-n', S, 'addr', 'add', `${epIP(j)}/11`, 'dev', 'eth0']);
  sh('ip', ['-n', C, 'route', 'add', 'default', 'via', '10.244.1.1']);
  sh('ip', ['-n', S, 'route', 'add', 'default', 'via', '10.32.0.1']);
  sh('nsenter', [`--net=/var/run/netns/${N}`, '--', 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
  return { C, N, S };
}
function cleanup() {
  for (const n of made.splice(0)) spawnSync('ip', ['netns', 'del', n]);
}
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));

/** Sequential TCP connects from the client netns (after a warm-up), as Node code; prints us per connect. */
function clientScript(ip) {
  return `const net = require('net'); const N = ${REAL_CONNECTS};
    const one = () => new Promise((res, rej) => { const s = net.connect({ host: '${ip}', port: 80 }); s.on('connect', () => { s.destroy(); res(); }); s.on('error', rej); });
    (async () => { for (let i = 0; i < 100; i++) await one(); const t0 = process.hrtime.bigint(); for (let i = 0; i < N; i++) await one(); console.log(Number(process.hrtime.bigint() - t0) / 1000 / N); })().catch((e) => { console.error(e.message); process.exit(1); });`;
}

const results = [];
let real = null;
if (isRoot) {
  try {
    real = realTopology();
  } catch (e) {
    console.error(`real kernel skipped: ${e.message}`);
    cleanup();
    real = null;
  }
}
let serverProc = null;
if (real) {
  const { spawn } = await import('node:child_process');
  serverProc = spawn('nsenter', [`--net=/var/run/netns/${real.S}`, '--', process.execPath, '-e', `const net = require('net'); for (const p of [80, 8080]) net.createServer((c) => c.end()).listen(p, () => p === 8080 && console.log('up'));`], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((r) => serverProc.stdout.once('data', r));
  process.on('exit', () => serverProc.kill());
}
function realRun(ip) {
  return Number(sh('nsenter', [`--net=/var/run/netns/${real.C}`, '--', process.execPath, '-e', clientScript(ip)]).trim());
}
function realLoad(mode, ports) {
  const ns = `--net=/var/run/netns/${real.N}`;
  // Start from an empty node: no table of the other mode left.
  spawnSync('nsenter', [ns, '--', 'nft', 'flush', 'ruleset']);
  const t0 = performance.now();
  if (mode === 'iptables') sh('nsenter', [ns, '--', 'iptables-restore', '-w', '30'], restoreInput(buildRules(ports, CTX), ''));
  else sh('nsenter', [ns, '--', 'nft', '-f', '-'], nftablesScript(buildNftables(ports, CTX), null));
  return performance.now() - t0;
}

for (const n of SIZES) {
  const ports = objects(n);
  const last = svcIP(n - 1);
  const ipt = simWorld();
  ipt.iptablesRestore('node', restoreInput(buildRules(ports, CTX), ''), { noflush: true });
  const nft = simWorld();
  nft.nft('node', nftablesScript(buildNftables(ports, CTX), null));
  const m = { ipt: [], nft: [], base: [] };
  for (let run = 0; run < RUNS; run++) {
    // Alternate the order so neither mode always pays for the other's garbage.
    const order = run % 2 ? ['nft', 'ipt', 'base'] : ['ipt', 'nft', 'base'];
    for (const k of order) m[k].push(k === 'ipt' ? simConnectUs(ipt, last) : k === 'nft' ? simConnectUs(nft, last) : simConnectUs(nft, epIP(0)));
  }
  const row = { services: n, endpoints: ENDPOINTS, sim: { iptablesUs: median(m.ipt), nftablesUs: median(m.nft), directUs: median(m.base) } };
  row.sim.ratio = row.sim.iptablesUs / row.sim.nftablesUs;
  if (real) {
    const r = { ipt: [], nft: [], base: [] };
    const load = {};
    for (const mode of ['nftables', 'iptables']) {
      if (mode === 'iptables' && n > REAL_IPT_MAX) continue;
      load[mode] = realLoad(mode, ports);
      for (let run = 0; run < RUNS; run++) {
        r[mode === 'iptables' ? 'ipt' : 'nft'].push(realRun(last));
        if (mode === 'nftables') r.base.push(realRun(epIP(0)));
      }
    }
    row.real = {
      loadMs: load,
      iptablesUs: r.ipt.length ? median(r.ipt) : null,
      nftablesUs: median(r.nft),
      directUs: median(r.base),
    };
    row.real.ratio = row.real.iptablesUs === null ? null : row.real.iptablesUs / row.real.nftablesUs;
  }
  results.push(row);
  if (!JSON_OUT) {
    const f = (x) => (x === null || x === undefined ? 'n/a' : `${x.toFixed(1)} us`);
    console.log(
      `${String(n).padStart(6)} Services: netsim connect to the last one: iptables ${f(row.sim.iptablesUs)}, nftables ${f(row.sim.nftablesUs)}, direct to a pod ${f(row.sim.directUs)} (iptables/nftables ${row.sim.ratio.toFixed(2)}x)` +
        (row.real ? `; real kernel: iptables ${f(row.real.iptablesUs)}, nftables ${f(row.real.nftablesUs)}, direct ${f(row.real.directUs)}${row.real.ratio === null ? '' : ` (iptables/nftables ${row.real.ratio.toFixed(2)}x)`}; load ${Object.entries(row.real.loadMs).map(([k, v]) => `${k} ${v.toFixed(0)} ms`).join(', ')}` : ''),
    );
  }
}
if (JSON_OUT) console.log(JSON.stringify({ runs: RUNS, results }, null, 2));
// The server's pipe would keep this process alive; the exit handler removes the namespaces.
serverProc?.kill();
process.exit(0);
