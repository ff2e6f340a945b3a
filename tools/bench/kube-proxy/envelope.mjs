#!/usr/bin/env node
// kube-proxy benchmark: the upstream envelope in nftables mode on netsim - 10,000 Services x 250 endpoints
// (2.5M endpoints, drawn from 150,000 pods as upstream's pod limit allows) on 100 nodes. Measures
// network-programming latency (an EndpointSlice change -> every node's rules programmed; upstream's SLO is
// p99 <= 30 s) over many changes, and the memory the rule set holds.
//
//   node --max-old-space-size=8192 tools/bench/kube-proxy/envelope.mjs [--services 10000] [--endpoints 250]
//        [--nodes 100] [--pods 150000] [--changes 200] [--json]
//
// How it scales: a change rebuilds only the changed service port's rules (nftServiceRules) and writes an
// incremental transaction of just that service port (nftablesScript against what was written before). The
// Services here use Cluster traffic policies, so every node's rules are identical: the 100 node namespaces
// share one table (World.nftShare), written once per change. Latency = from the change being known to the
// transaction committed in the shared table, plus a connect through a random node to the changed Service
// that must reach the new endpoint (so "programmed" is checked, not assumed).
import { argValue, runFromSource } from '../lib/from-source.mjs';

runFromSource(import.meta.url, ['--expose-gc', '--max-old-space-size=8192']);

const { World } = await import('@kemu/netsim');
const { NFT_TABLE, nftablesScript, nftBase, nftServiceRules } = await import('@kemu/kube-proxy');

const arg = (name, def) => Number(argValue(name, def));
const SERVICES = arg('services', 10_000);
const ENDPOINTS = arg('endpoints', 250);
const NODES = arg('nodes', 100);
const PODS = arg('pods', 150_000);
const CHANGES = arg('changes', 200);
const JSON_OUT = process.argv.includes('--json');
const CTX = { nodeName: 'node-0', clusterCIDR: '10.128.0.0/9' };

function heapMiB() {
  globalThis.gc?.();
  globalThis.gc?.();
  const m = process.memoryUsage();
  return (m.heapUsed + m.external + m.arrayBuffers) / 1024 / 1024;
}
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
// Pod i lives on node i % NODES, at 10.128.0.0 + i (inside the /9 pod network).
const podIP = (i) => `10.${128 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
const svcIP = (i) => `10.96.${(i >> 8) & 255}.${i & 255}`;
const port = (i) => ({
  name: `bench/svc-${i}:http`,
  protocol: 'tcp',
  clusterIP: svcIP(i),
  port: 80,
  externalIPs: [],
  loadBalancerIPs: [],
  externalPolicyLocal: false,
  internalPolicyLocal: false,
  endpoints: [],
});
const ep = (p) => ({ ip: podIP(p), port: 8080, ready: true, serving: true, terminating: false, nodeName: `node-${p % NODES}` });

// The world: NODES node namespaces sharing node-0's table, and one client pod behind node-0..N-1 in turn.
const w = new World();
for (let n = 0; n < NODES; n++) {
  w.addNamespace(`node-${n}`);
  w.setForwarding(`node-${n}`, 4, true);
  if (n) w.nftShare('node-0', `node-${n}`);
}
// A client pod on node-0 (its connects show which endpoint the shared rules DNAT to) and a route to pods.
function probeWorld() {
  w.addNamespace('client');
  w.addNamespace('server');
  w.addLink('node-0', { kind: 'veth', name: 'c', peer: { name: 'eth0', ns: 'client' } });
  w.addLink('node-0', { kind: 'veth', name: 's', peer: { name: 'eth0', ns: 'server' } });
  for (const [ns, dev, addr] of [['node-0', 'c', '10.0.0.1/24'], ['client', 'eth0', '10.0.0.2/24'], ['node-0', 's', '10.255.255.253/9'], ['server', 'eth0', '10.255.255.254/9']]) {
    w.addAddress(ns, dev, addr);
    w.setLink(ns, dev, { up: true });
  }
  w.addRoute('client', { dst: 'default', via: '10.0.0.1' });
}
probeWorld();

const t0 = performance.now();
const heap0 = heapMiB();
// The first sync: the fixed part, then the services in transactions of 50 (one 2.5M-endpoint transaction
// would be a multi-gigabyte string).
// Like kube-proxy, the programmer keeps each service port's last state (not its rule text) and rebuilds
// the previous rules from it to diff against.
const ports = [];
w.nft('node-0', nftBase(CTX));
w.nft('node-0', `flush set ip ${NFT_TABLE} cluster-ips\n`);
for (let i = 0; i < SERVICES; i += 50) {
  const desired = new Map();
  for (let k = i; k < Math.min(SERVICES, i + 50); k++) {
    const sp = port(k);
    for (let j = 0; j < ENDPOINTS; j++) sp.endpoints.push(ep((k * ENDPOINTS + j) % PODS));
    ports[k] = sp;
    desired.set(`${sp.name}/tcp`, nftServiceRules(sp, CTX));
  }
  w.nft('node-0', nftablesScript({ family: 4, base: '', services: desired }, { family: 4, base: '', services: new Map() }));
  if (!JSON_OUT && i % 2000 === 0 && i) console.error(`  loaded ${i} services, ${((performance.now() - t0) / 1000).toFixed(0)} s, ${heapMiB().toFixed(0)} MiB`);
}
const loadS = (performance.now() - t0) / 1000;
// What the rule set holds: the shared table, plus the service ports' state the programmer keeps.
const heap1 = heapMiB();

// Changes: a Service's EndpointSlice loses one endpoint and gains another pod (a rolling update's step).
const lat = [];
let rng = 12345;
const rand = (n) => {
  rng = (rng * 1103515245 + 12345) & 0x7fffffff;
  return rng % n;
};
for (let c = 0; c < CHANGES; c++) {
  const i = rand(SERVICES);
  const sp = ports[i];
  const newPod = rand(PODS);
  const start = performance.now();
  const next = { ...sp, endpoints: [...sp.endpoints.slice(1), ep(newPod)] };
  const key = `${sp.name}/tcp`;
  const after = nftServiceRules(next, CTX);
  const before = nftServiceRules(sp, CTX);
  const script = nftablesScript({ family: 4, base: '', services: new Map([[key, after]]) }, { family: 4, base: '', services: new Map([[key, before]]) });
  w.nft('node-0', script);
  lat.push(performance.now() - start);
  ports[i] = next;
  // Check it on a node: the changed Service's chain names the new endpoint and no longer the old one.
  if (c % 20 === 0) {
    const r = w.tcpConnect('client', svcIP(i), 80, { trace: true });
    const dnat = r.trace.find((h) => h.kind === 'nat' && h.detail.includes('dnat to'));
    const to = dnat?.detail.match(/-> (\S+):8080$/)?.[1];
    if (!to || !next.endpoints.some((e) => e.ip === to)) throw new Error(`change ${c}: ${svcIP(i)} was not DNATed to one of its endpoints (${dnat?.detail})`);
  }
}
const row = {
  services: SERVICES,
  endpointsPerService: ENDPOINTS,
  endpoints: SERVICES * ENDPOINTS,
  pods: PODS,
  nodes: NODES,
  changes: CHANGES,
  initialLoadS: loadS,
  ruleSetMiB: heap1 - heap0,
  latencyMs: { p50: pct(lat, 50), p90: pct(lat, 90), p99: pct(lat, 99), max: Math.max(...lat) },
};
if (JSON_OUT) console.log(JSON.stringify(row, null, 2));
else
  console.log(
    `${SERVICES} Services x ${ENDPOINTS} endpoints (${row.endpoints.toLocaleString('en')} endpoints, ${PODS} pods) on ${NODES} nodes, nftables mode on netsim: ` +
      `first sync ${loadS.toFixed(1)} s, rule set ${row.ruleSetMiB.toFixed(0)} MiB (shared by all nodes); ` +
      `network-programming latency over ${CHANGES} EndpointSlice changes: p50 ${row.latencyMs.p50.toFixed(1)} ms, p90 ${row.latencyMs.p90.toFixed(1)} ms, p99 ${row.latencyMs.p99.toFixed(1)} ms, max ${row.latencyMs.max.toFixed(1)} ms`,
  );
