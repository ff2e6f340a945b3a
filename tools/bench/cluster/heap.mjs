#!/usr/bin/env node
// Heap per pod of the composed cluster: bare pods on simulated nodes (routed underlay, as at 5,000 nodes),
// the old generation measured after a forced full collection before and after they all run. At 5,000
// nodes a full collection marks every live object, so this is the size the collector's pauses follow.
//
//   node --expose-gc --conditions=@kemu/source --import tsx tools/bench/cluster/heap.mjs --nodes 200 --pods-per-node 30
//   ... --snapshot FILE        also write a heap snapshot (Chrome DevTools' Memory tab reads it)
//   node --expose-gc --single-threaded-gc --trace-gc-nvp ...   adds the marking time of each forced
//                              collection (`mark=` on stdout), without helper threads to blur it
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import { Cluster } from '../../../packages/kemu/src/index.ts';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '200' },
    'pods-per-node': { type: 'string', default: '30' },
    snapshot: { type: 'string' },
  },
});
if (typeof globalThis.gc !== 'function') {
  console.error('error: run node with --expose-gc (see the usage at the top of this file)');
  process.exit(2);
}
const nodes = Number(values.nodes);
const total = nodes * Number(values['pods-per-node']);
const stateDir = fs.mkdtempSync(path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : '/tmp', 'kemu-heap-'));
const cluster = await Cluster.start({ stateDir, nodes, fast: false, routedUnderlay: true, onError: () => {} });
try {
  const store = cluster.store;
  await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } });
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  const watch = await store.watch('Pod', { namespace: 'bench' });
  let running = 0;
  const allRunning = (async () => {
    for await (const ev of watch) if (ev.type === 'MODIFIED' && ev.object.status?.phase === 'Running' && ++running >= total) return;
  })();
  const spec = { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '10m', memory: '10M' } } }] };
  for (let i = 0; i < total; i += 250) {
    const batch = Array.from({ length: Math.min(250, total - i) }, (_, j) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `p${i + j}`, namespace: 'bench', labels: { app: `x${(i + j) % 50}` } },
      spec,
    }));
    await Promise.all(batch.map((p) => store.create(p)));
  }
  await allRunning;
  watch.stop();
  // Let the last status writes and events land before measuring.
  await new Promise((r) => setTimeout(r, 3000));
  globalThis.gc();
  const after = process.memoryUsage().heapUsed;
  console.log(JSON.stringify({ nodes, pods: total, heapMiB: Math.round(after / 2 ** 20), heapPerPodKiB: Number(((after - before) / total / 1024).toFixed(1)) }));
  if (values.snapshot) console.log(`snapshot: ${v8.writeHeapSnapshot(values.snapshot)}`);
} finally {
  await cluster.stop();
  fs.rmSync(stateDir, { recursive: true, force: true });
}
