#!/usr/bin/env node
// netsim benchmark: N pod namespaces on one bridge, then pings between random pairs.
// Reports simulated packet hops per second (a hop = one frame handled at one device, tx or rx), pings/s,
// and memory for the pods. Medians over several runs; the traced run is reported as a ratio to the
// untraced one measured in the same process.
//
//   node tools/bench/netsim/ping.mjs [--pods 1000] [--pings 10000] [--runs 5] [--json]
//
// Runs from source (no build needed): it re-executes itself under tsx with the @kemu/source condition.
import { argValue, runFromSource } from '../lib/from-source.mjs';

runFromSource(import.meta.url, ['--expose-gc']);

const { World } = await import('@kemu/netsim');

const arg = (name, def) => Number(argValue(name, def));
const PODS = arg('pods', 1000);
const PINGS = arg('pings', 10000);
const RUNS = arg('runs', 5);
const JSON_OUT = process.argv.includes('--json');

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const mib = (b) => b / 1024 / 1024;

function heap() {
  globalThis.gc?.();
  globalThis.gc?.();
  const m = process.memoryUsage();
  return m.heapUsed + m.external + m.arrayBuffers;
}

function build(captureLimit) {
  const w = new World({ captureLimit });
  w.addNamespace('host');
  w.setLink('host', 'lo', { up: true });
  w.addLink('host', { kind: 'bridge', name: 'cni0' });
  w.setLink('host', 'cni0', { up: true });
  w.addAddress('host', 'cni0', '10.0.0.1/16');
  const ips = [];
  for (let i = 0; i < PODS; i++) {
    const ns = `pod${i}`;
    const ip = `10.0.${(i + 2) >> 8}.${(i + 2) & 255}`;
    w.addNamespace(ns);
    w.addLink('host', { kind: 'veth', name: `veth${i}`, peer: { name: 'eth0', ns } });
    w.setLink('host', `veth${i}`, { master: 'cni0', up: true });
    w.setLink(ns, 'lo', { up: true });
    w.setLink(ns, 'eth0', { up: true });
    w.addAddress(ns, 'eth0', `${ip}/16`);
    w.addRoute(ns, { dst: 'default', via: '10.0.0.1' });
    ips.push(ip);
  }
  return { w, ips };
}

// Deterministic pairs (xorshift), the same for every run.
function pairs(n, seed = 12345) {
  let x = seed;
  const rnd = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
  const out = [];
  while (out.length < n) {
    const a = Math.floor(rnd() * PODS);
    const b = Math.floor(rnd() * PODS);
    if (a !== b) out.push([a, b]);
  }
  return out;
}

function pingRun(w, ips, ps, trace) {
  const h0 = w.stats.hops;
  const f0 = w.stats.frames;
  let ok = 0;
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  for (const [a, b] of ps) if (w.ping(`pod${a}`, ips[b], { trace }).reachable) ok++;
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  const cu = process.cpuUsage(c0);
  const cpuS = (cu.user + cu.system) / 1e6;
  const hops = w.stats.hops - h0;
  const frames = w.stats.frames - f0;
  if (ok !== ps.length) throw new Error(`only ${ok}/${ps.length} pings answered`);
  return {
    s,
    hops,
    hopsPerSec: hops / s,
    hopsPerCpuSec: hops / cpuS,
    packetsPerSec: frames / s,
    pingsPerSec: ps.length / s,
  };
}

const base = heap();
const tb0 = process.hrtime.bigint();
const { w, ips } = build(0);
const buildS = Number(process.hrtime.bigint() - tb0) / 1e9;
const podsBytes = heap() - base;

const ps = pairs(PINGS);
const cold = pingRun(w, ips, ps, false); // first pass resolves ARP and fills the FDB
const untraced = [];
const traced = [];
for (let r = 0; r < RUNS; r++) {
  untraced.push(pingRun(w, ips, ps, false));
  traced.push(pingRun(w, ips, ps.slice(0, Math.ceil(PINGS / 10)), true));
}
const afterBytes = heap() - base;

// Capture on (default ring) costs memory for the frames kept; measured on a fresh world.
const before2 = heap();
const cap = build(65536);
pingRun(cap.w, cap.ips, ps, false);
const captureBytes = heap() - before2;

const res = {
  pods: PODS,
  pings: PINGS,
  runs: RUNS,
  buildSeconds: buildS,
  coldHopsPerSec: cold.hopsPerSec,
  hopsPerPing: untraced[0].hops / PINGS,
  hopsPerSec: median(untraced.map((x) => x.hopsPerSec)),
  pingsPerSec: median(untraced.map((x) => x.pingsPerSec)),
  packetsPerSec: median(untraced.map((x) => x.packetsPerSec)),
  hopsPerCpuSec: median(untraced.map((x) => x.hopsPerCpuSec)),
  loadAverage: (await import('node:os')).loadavg()[0],
  tracedHopsPerSec: median(traced.map((x) => x.hopsPerSec)),
  memPodsMiB: mib(podsBytes),
  memAfterPingsMiB: mib(afterBytes),
  memWithCaptureMiB: mib(captureBytes),
};
res.traceSlowdown = res.hopsPerSec / res.tracedHopsPerSec;

if (JSON_OUT) console.log(JSON.stringify(res));
else {
  console.log(
    `netsim ping benchmark: ${PODS} pods on one bridge, ${PINGS} pings between random pairs, ${RUNS} runs (median)`,
  );
  console.log(`  build ${PODS} pods            ${buildS.toFixed(2)} s`);
  console.log(`  cold pass (ARP + FDB)        ${Math.round(res.coldHopsPerSec).toLocaleString()} hops/s`);
  console.log(
    `  warm, no trace               ${Math.round(res.hopsPerSec).toLocaleString()} hops/s  (${Math.round(res.pingsPerSec).toLocaleString()} pings/s, ${res.hopsPerPing.toFixed(1)} hops/ping)   target >= 100,000`,
  );
  console.log(
    `  warm, per CPU-second         ${Math.round(res.hopsPerCpuSec).toLocaleString()} hops/s of this process's CPU time (unaffected by other load; 1-min load average ${res.loadAverage.toFixed(1)})`,
  );
  console.log(`  warm, frames transmitted     ${Math.round(res.packetsPerSec).toLocaleString()} packets/s`);
  console.log(
    `  warm, with trace             ${Math.round(res.tracedHopsPerSec).toLocaleString()} hops/s  (${res.traceSlowdown.toFixed(2)}x slower than untraced)`,
  );
  console.log(`  memory: ${PODS} pods             ${res.memPodsMiB.toFixed(1)} MiB   target <= 200`);
  console.log(
    `  memory: after all pings      ${res.memAfterPingsMiB.toFixed(1)} MiB (neighbour + FDB state)`,
  );
  console.log(`  memory: with 65536-frame capture ring ${res.memWithCaptureMiB.toFixed(1)} MiB`);
}
