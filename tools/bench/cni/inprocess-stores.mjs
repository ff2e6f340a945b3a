#!/usr/bin/env node
// In-process CNI ADD+DEL throughput with host-local's on-disk store + libcni's result-cache files versus
// the in-memory IPAM store + in-memory result cache. The chain is the composed cluster's
// (bridge + host-local, portmap) driven through CniRuntime and the in-process invoker, on
//   sim     the simulated datapath (what the composed cluster uses)
//   memory  the bare in-memory test datapath, which leaves almost only plugin, store and cache work
// Runs alternate between the two stores so machine load hits both alike.
//
//   node tools/bench/cni/inprocess-stores.mjs [--pods 300] [--concurrency 16] [--runs 5] [--json FILE]
//
// Reports ADD+DEL pairs per second (median over runs) per datapath and store, and memory/disk.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { median, repo } from './common.mjs';
import { runFromSource } from '../lib/from-source.mjs';

runFromSource(import.meta.url);

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '16' },
    runs: { type: 'string', default: '5' },
    json: { type: 'string', default: path.join(repo, '.bench-out', 'cni-inprocess-stores.json') },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log('usage: node tools/bench/cni/inprocess-stores.mjs [--pods 300] [--concurrency 16] [--runs 5] [--json FILE]');
  process.exit(0);
}
const PODS = Number(values.pods);
const CONC = Number(values.concurrency);
const RUNS = Number(values.runs);

const { CniRuntime, InProcessInvoker, MemoryDatapath } = await import('@kemu/cni');
const { createSimDatapath } = await import('@kemu/cni/datapath-sim');
const { bridge } = await import('@kemu/cni-bridge');
const { createHostLocal } = await import('@kemu/cni-host-local');
const { portmap } = await import('@kemu/cni-portmap');

const tmp = mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-inproc-'));

/** One node's runtime as the composed cluster builds it, with the chosen stores. */
function node(store, dpKind, dir) {
  mkdirSync(path.join(dir, 'conf'), { recursive: true });
  writeFileSync(
    path.join(dir, 'conf', '10-kemu.conflist'),
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'kemu',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: { type: 'host-local', ranges: [[{ subnet: '10.250.0.0/16' }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: path.join(dir, 'ipam') },
        },
        { type: 'portmap', capabilities: { portMappings: true }, snat: true },
      ],
    }),
  );
  const datapath = dpKind === 'sim' ? createSimDatapath({ captureLimit: 0, seed: 3 }) : new MemoryDatapath();
  const invoker = new InProcessInvoker({
    plugins: { bridge, 'host-local': createHostLocal({ store }), portmap },
    datapath,
    ...(store === 'memory' ? { resultCache: 'memory' } : {}),
  });
  const rt = new CniRuntime({ confDir: path.join(dir, 'conf'), cacheDir: path.join(dir, 'cache'), binDirs: [path.join(dir, 'bin')], invoker });
  return { rt, datapath };
}

async function run(store, dpKind, runNo) {
  const dir = path.join(tmp, `${dpKind}-${store}-${runNo}`);
  const { rt, datapath } = node(store, dpKind, dir);
  const list = await rt.loadConfList();
  const netns = (i) => `/run/kemu-bench/pod-${i}`;
  for (let i = 0; i < PODS; i++) await datapath.addNetns(netns(i));
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONC }, async () => {
      for (let i = next++; i < PODS; i = next++) {
        const att = { containerId: `pod${i}`, netns: netns(i), ifname: 'eth0' };
        await rt.addNetworkList(list, att);
        await rt.delNetworkList(list, att);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  // Nothing may be left behind by either store.
  if ((await rt.cachedAttachments(list)).length !== 0) throw new Error(`${store}: result cache not empty after DEL`);
  rmSync(dir, { recursive: true, force: true });
  return PODS / secs;
}

const out = { pods: PODS, concurrency: CONC, runs: RUNS, datapaths: {} };
console.log(`in-process ADD+DEL (bridge + host-local, portmap) through CniRuntime, ${PODS} pods, ${CONC} in flight, ${RUNS} runs`);
console.log('\ndatapath  store    ADD+DEL/s (median)   runs');
for (const dpKind of ['sim', 'memory']) {
  const rates = { disk: [], memory: [] };
  await run('disk', dpKind, 'warm');
  await run('memory', dpKind, 'warm');
  for (let r = 0; r < RUNS; r++) {
    for (const store of r % 2 ? ['memory', 'disk'] : ['disk', 'memory']) rates[store].push(await run(store, dpKind, r));
  }
  const res = {};
  for (const store of ['disk', 'memory']) {
    res[store] = { perSecond: median(rates[store]), runs: rates[store] };
    console.log(
      `${dpKind.padEnd(9)} ${store.padEnd(8)} ${median(rates[store]).toFixed(0).padStart(10)}           ${rates[store].map((x) => x.toFixed(0)).join(' ')}`,
    );
  }
  res.memoryOverDisk = res.memory.perSecond / res.disk.perSecond;
  console.log(`${dpKind.padEnd(9)} memory/disk ${res.memoryOverDisk.toFixed(2)}x`);
  out.datapaths[dpKind] = res;
}
mkdirSync(path.dirname(values.json), { recursive: true });
writeFileSync(values.json, JSON.stringify(out, null, 2));
rmSync(tmp, { recursive: true, force: true });
