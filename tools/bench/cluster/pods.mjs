#!/usr/bin/env node
// Pod startup on the composed cluster, everything simulated: N pods on M nodes; reports pods/s to Running
// and the SLO-style startup latency (creation to all containers started, seen through a watch), median
// over --runs fresh clusters. Needs a build: npx nx build kemu
//   node tools/bench/cluster/pods.mjs --nodes 100 --pods 10000 --runs 3            (all created at once)
//   node tools/bench/cluster/pods.mjs --nodes 100 --pods 10000 --qps 400 --runs 3  (paced creation)
//   --network bridge|vxlan|bgp as `kemu up --network` (bgp: the nodes' speakers converge before pods start)
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '100' },
    pods: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '3' },
    qps: { type: 'string', default: '0' },
    fast: { type: 'boolean', default: false },
    network: { type: 'string', default: 'bridge' },
  },
});
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const { benchPods } = await import(path.join(repo, 'packages/kemu/dist/index.js'));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = [];
for (let i = 0; i < Number(values.runs); i++) {
  // Progress on stderr, a line per tenth, so long runs (the 5,000-node envelope) show where they are.
  const tenth = (label) => {
    let last = -1;
    return (done, total) => {
      const t = Math.floor((done * 10) / total);
      if (t !== last) console.error(`  ${label} ${done}/${total} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
      last = t;
    };
  };
  const t0 = performance.now();
  const r = await benchPods(
    {
      nodes: Number(values.nodes),
      pods: Number(values.pods),
      qps: Number(values.qps),
      fast: values.fast,
      network: values.network,
      onNodes: tenth('nodes'),
    },
    ((f) => (n) => f(n, Number(values.pods)))(tenth('pods running')),
  );
  console.error(`run ${i + 1}: ${JSON.stringify(r)}`);
  results.push(r);
}
const keys = ['clusterStartSeconds', 'allRunningSeconds', 'podsPerSecond', 'startupP50Ms', 'startupP99Ms', 'peakRssMiB', 'cpuMsPerPod'];
console.log(
  JSON.stringify(
    { nodes: Number(values.nodes), pods: Number(values.pods), qps: Number(values.qps), network: values.network, runs: results.length, median: Object.fromEntries(keys.map((k) => [k, median(results.map((r) => r[k]))])) },
    null,
    2,
  ),
);
