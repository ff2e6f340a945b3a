#!/usr/bin/env node
// Cost of the sim datapath's exec path: every mutating operation of a plugin process locks the node's
// state file, applies the change to the (cached) world and atomically rewrites the file. Measures the
// median cost of one operation (add an address, delete it) on nodes of several sizes, as a ratio to the
// same operation on the in-memory sim datapath measured in the same run.
//
//   node tools/bench/netsim/state-file.mjs [--sizes 10,110,1000] [--ops 40] [--runs 5] [--json]
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { argValue, runFromSource } from '../lib/from-source.mjs';

runFromSource(import.meta.url);

const { createSimDatapath } = await import('../../../packages/cni/src/datapath-sim.ts');

const arg = argValue;
const SIZES = String(arg('sizes', '10,110,1000')).split(',').map(Number);
const OPS = Number(arg('ops', 40));
const RUNS = Number(arg('runs', 5));
const JSON_OUT = process.argv.includes('--json');
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function populate(dp, pods) {
  await dp.addLink('host', { kind: 'bridge', name: 'cni0', up: true });
  await dp.addAddr('host', 'cni0', '10.0.0.1/16');
  await dp.withWorld(
    (w) => {
      for (let i = 0; i < pods; i++) {
        const ns = `/var/run/netns/pod${i}`;
        w.addNamespace(ns);
        w.addLink('host', { kind: 'veth', name: `veth${i}`, peer: { name: 'eth0', ns } });
        w.setLink('host', `veth${i}`, { master: 'cni0', up: true });
        w.setLink(ns, 'eth0', { up: true });
        w.addAddress(ns, 'eth0', `10.0.${(i + 2) >> 8}.${(i + 2) & 255}/16`);
        w.addRoute(ns, { dst: 'default', via: '10.0.0.1' });
      }
    },
    { write: true },
  );
}

async function perOp(dp) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < OPS; i++) {
    await dp.addAddr('/var/run/netns/pod0', 'eth0', '192.168.9.9/32');
    await dp.delAddr('/var/run/netns/pod0', 'eth0', '192.168.9.9/32');
  }
  return Number(process.hrtime.bigint() - t0) / 1e6 / (2 * OPS);
}

const dir = mkdtempSync(join(tmpdir(), 'kemu-bench-state-'));
const rows = [];
try {
  for (const pods of SIZES) {
    const file = createSimDatapath({ statePath: join(dir, `node-${pods}.json`), captureLimit: 0 });
    const mem = createSimDatapath({ captureLimit: 0 });
    await populate(file, pods);
    await populate(mem, pods);
    const fileMs = [];
    const memMs = [];
    for (let r = 0; r < RUNS; r++) {
      fileMs.push(await perOp(file));
      memMs.push(await perOp(mem));
    }
    const f = median(fileMs);
    const m = median(memMs);
    rows.push({
      pods,
      stateBytes: statSync(join(dir, `node-${pods}.json`)).size,
      fileMsPerOp: f,
      memoryMsPerOp: m,
      ratio: f / m,
    });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (JSON_OUT) console.log(JSON.stringify(rows));
else {
  console.log(
    `sim datapath, state-file (exec path) vs in-memory, one mutating op, median of ${RUNS} runs x ${2 * OPS} ops`,
  );
  for (const r of rows) {
    console.log(
      `  ${String(r.pods).padStart(5)} pods  state ${(r.stateBytes / 1024).toFixed(0).padStart(6)} KiB   file ${r.fileMsPerOp.toFixed(2).padStart(7)} ms/op   memory ${r.memoryMsPerOp.toFixed(3)} ms/op   ratio ${r.ratio.toFixed(0)}x`,
    );
  }
}
