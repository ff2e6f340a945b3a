#!/usr/bin/env node
// kube-proxy benchmark: what it costs to program a node's rules as Services grow, on netsim and on real
// Linux (iptables-restore in a scratch network namespace) in the same run, and what a packet pays to find
// its Service: iptables mode (KUBE-SERVICES scanned rule by rule) vs an nftables-style verdict map.
//
//   node tools/bench/kube-proxy/rules.mjs [--services 100,1000,10000] [--endpoints 5] [--runs 3] [--real-max 2000] [--json]
//
// Per size, medians of --runs: generate (Services -> iptables-restore text), sim restore (netsim parses and
// installs it), real restore (iptables-restore --noflush, root only, up to --real-max Services; skipped
// otherwise), heap held by the
// sim rule set, and per-packet time of a TCP connect to the last Service in both modes (connects/s).
// Runs from source (no build needed): it re-executes itself under tsx with the @kemu/source condition.
import { spawnSync } from 'node:child_process';
import { argValue, runFromSource } from '../lib/from-source.mjs';

runFromSource(import.meta.url, ['--expose-gc']);

const { World } = await import('@kemu/netsim');
const { buildRules, restoreInput, servicePorts } = await import('@kemu/kube-proxy');

const arg = argValue;
const SIZES = arg('services', '100,1000,10000').split(',').map(Number);
const ENDPOINTS = Number(arg('endpoints', '5'));
const RUNS = Number(arg('runs', '3'));
// Real iptables-restore of ~170,000 rules (10,000 Services) takes many minutes here: bounded by size and time.
const REAL_MAX = Number(arg('real-max', '2000'));
const REAL_TIMEOUT_MS = 120_000;
const JSON_OUT = process.argv.includes('--json');
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
function heap() {
  globalThis.gc?.();
  globalThis.gc?.();
  const m = process.memoryUsage();
  return m.heapUsed + m.external + m.arrayBuffers;
}

const svcIP = (i) => `10.96.${(i >> 8) & 255}.${i & 255}`;
// Every Service's endpoints are the same few addresses of one server pod (rules differ per Service anyway).
const epIP = (_i, j) => `10.32.${(j + 2) >> 8}.${(j + 2) & 255}`;

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
      endpoints: Array.from({ length: ENDPOINTS }, (_, j) => ({ addresses: [epIP(i, j)], conditions: { ready: true } })),
    });
  }
  return { services, slices };
}

/** A client pod, a node with the rules, and one endpoint pod answering for every Service's endpoints. */
function world() {
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
  for (let j = 1; j < ENDPOINTS; j++) w.addAddress('server', 'eth0', `${epIP(0, j)}/11`);
  w.listen('server', { proto: 'tcp', port: 8080 });
  return w;
}

function realRestore(text, n) {
  if (process.getuid?.() !== 0 || n > REAL_MAX) return null;
  const ns = `kemu-bench-${process.pid}`;
  if (spawnSync('ip', ['netns', 'add', ns]).status !== 0) return null;
  try {
    const t0 = performance.now();
    const r = spawnSync('ip', ['netns', 'exec', ns, 'iptables-restore', '--noflush', '-w', '30'], { input: text, maxBuffer: 1 << 30, timeout: REAL_TIMEOUT_MS, killSignal: 'SIGKILL' });
    const ms = performance.now() - t0;
    if (r.status !== 0) throw new Error(`iptables-restore: ${r.stderr}`);
    return ms;
  } finally {
    spawnSync('ip', ['netns', 'del', ns]);
  }
}

function perPacket(w, n) {
  // Warm up, then connects to the last Service (the end of KUBE-SERVICES).
  const ip = svcIP(n - 1);
  for (let i = 0; i < 200; i++) w.tcpConnect('client', ip, 80, { trace: false });
  w.flushConntrack('node');
  const count = 300;
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const r = w.tcpConnect('client', ip, 80, { trace: false });
    if (r.state !== 'established') throw new Error(`connect to ${ip}: ${r.state}`);
  }
  const ms = performance.now() - t0;
  w.flushConntrack('node');
  return (ms * 1000) / count;
}

/** The same Services as an nftables-style map: one VMAP rule, one element per Service. */
function vmapWorld(ports) {
  const w = world();
  const lines = ['*nat', ':PREROUTING ACCEPT [0:0]', '-A PREROUTING -j VMAP --map service-ips --key daddr.l4proto.dport'];
  const elements = {};
  for (const [i, p] of ports.entries()) {
    const chain = `svc-${i}`;
    lines.splice(1, 0, `:${chain} - [0:0]`);
    p.endpoints.forEach((e, j) => {
      const stat = j < p.endpoints.length - 1 ? ` -m statistic --mode random --probability ${(1 / (p.endpoints.length - j)).toFixed(10)}` : '';
      lines.push(`-A ${chain} -p tcp${stat} -j DNAT --to-destination ${e.ip}:${e.port}`);
    });
    elements[`${p.clusterIP} . tcp . ${p.port}`] = `goto ${chain}`;
  }
  lines.push('COMMIT');
  w.nftSetMap('node', 'service-ips', elements);
  w.iptablesRestore('node', `${lines.join('\n')}\n`);
  return w;
}

const results = [];
for (const n of SIZES) {
  const { services, slices } = objects(n);
  const gen = [];
  const sim = [];
  const real = [];
  const mem = [];
  const ipt = [];
  const nft = [];
  let rules = 0;
  for (let run = 0; run < RUNS; run++) {
    let t0 = performance.now();
    const ports = servicePorts(services, slices);
    const rs = buildRules(ports, { nodeName: 'node', clusterCIDR: '10.244.0.0/16' });
    const text = restoreInput(rs, '');
    gen.push(performance.now() - t0);
    rules = rs.filter.length + rs.nat.length;
    const w = world();
    const before = heap();
    t0 = performance.now();
    w.iptablesRestore('node', text, { noflush: true });
    sim.push(performance.now() - t0);
    mem.push(heap() - before);
    const r = realRestore(text, n);
    if (r !== null) real.push(r);
    // Alternate which mode goes first, so neither always pays for the other's garbage or a cold JIT.
    const vw = vmapWorld(ports);
    if (run % 2) {
      nft.push(perPacket(vw, n));
      ipt.push(perPacket(w, n));
    } else {
      ipt.push(perPacket(w, n));
      nft.push(perPacket(vw, n));
    }
  }
  const row = {
    services: n,
    endpoints: ENDPOINTS,
    rules,
    generateMs: median(gen),
    simRestoreMs: median(sim),
    realRestoreMs: real.length ? median(real) : null,
    simOverReal: real.length ? median(sim) / median(real) : null,
    simRuleSetMiB: median(mem) / 1024 / 1024,
    connectUsIptables: median(ipt),
    connectUsVmap: median(nft),
  };
  results.push(row);
  if (!JSON_OUT)
    console.log(
      `${String(n).padStart(6)} services x ${ENDPOINTS} endpoints, ${rules} rules: generate ${row.generateMs.toFixed(1)} ms, ` +
        `netsim restore ${row.simRestoreMs.toFixed(1)} ms, iptables-restore ${row.realRestoreMs === null ? 'n/a' : `${row.realRestoreMs.toFixed(1)} ms`}` +
        `${row.simOverReal === null ? '' : ` (netsim/real ${row.simOverReal.toFixed(2)}x)`}, rule set ${row.simRuleSetMiB.toFixed(1)} MiB; ` +
        `connect to the last Service: iptables mode ${row.connectUsIptables.toFixed(1)} us, verdict map ${row.connectUsVmap.toFixed(1)} us`,
    );
}
if (JSON_OUT) console.log(JSON.stringify({ runs: RUNS, results }, null, 2));
