#!/usr/bin/env node
// Cost of one link lookup by name on the sim datapath (what the CNI bridge plugin does several times per
// ADD: "is cni0 there?", "does the host-side veth name exist?") in a namespace holding N links: a node's host
// namespace with N pod veths, or the underlay namespace with one uplink per node. A lookup should not grow
// with N. Medians over several runs.
//
//   node tools/bench/netsim/link-lookup.mjs [--sizes 100,5000] [--ops 5000] [--runs 5] [--json]
import { argValue, runFromSource } from '../lib/from-source.mjs';

runFromSource(import.meta.url);

const { createSimDatapath } = await import('../../../packages/cni/src/datapath-sim.ts');

const SIZES = String(argValue('sizes', '100,5000')).split(',').map(Number);
const OPS = Number(argValue('ops', 5000));
const RUNS = Number(argValue('runs', 5));
const JSON_OUT = process.argv.includes('--json');
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const rows = [];
for (const n of SIZES) {
  const dp = createSimDatapath({ captureLimit: 0 });
  await dp.addLink('host', { kind: 'bridge', name: 'cni0', up: true });
  await dp.withWorld(
    (w) => {
      for (let i = 0; i < n; i++) w.addLink('host', { kind: 'dummy', name: `d${i}` });
    },
    { write: true },
  );
  const us = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < OPS; i++) {
      await dp.getLink('host', 'cni0');
      await dp.getLink('host', 'absent0');
    }
    us.push(Number(process.hrtime.bigint() - t0) / 1e3 / (2 * OPS));
  }
  rows.push({ links: n, getLinkUs: median(us) });
}
if (JSON_OUT) console.log(JSON.stringify(rows));
else for (const r of rows) console.log(`links in namespace ${r.links}: getLink ${r.getLinkUs.toFixed(2)} us (median of ${RUNS})`);
