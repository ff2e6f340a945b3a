// One benchmark run in its own process (see store.mjs). Loaded under tsx: imports @kemu/core from source.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EtcdStore, FileStore, MemoryStore } from '../../../packages/core/src/index.ts';

const ETCD = process.env.KEMU_ETCD ?? '/usr/bin/etcd';

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startEtcd(dir) {
  const client = await freePort();
  const peer = await freePort();
  const endpoint = `http://127.0.0.1:${client}`;
  const proc = spawn(
    ETCD,
    [
      '--name', 'bench', '--data-dir', path.join(dir, 'etcd'),
      '--listen-client-urls', endpoint, '--advertise-client-urls', endpoint,
      '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
      '--initial-cluster', `bench=http://127.0.0.1:${peer}`, '--log-level', 'error', '--quota-backend-bytes', String(8 * 2 ** 30),
    ],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 200; i++) {
    try {
      const r = await fetch(`${endpoint}/health`);
      if (r.ok) return { endpoint, stop: () => new Promise((res) => { proc.once('exit', res); proc.kill('SIGTERM'); }) };
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill('SIGKILL');
  throw new Error('etcd did not start');
}

const node = (i) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: `node-${i}`,
    labels: { 'kubernetes.io/hostname': `node-${i}`, 'topology.kubernetes.io/zone': `zone-${i % 3}`, 'kubernetes.io/os': 'linux' },
  },
  spec: { podCIDR: `10.${(i >> 8) & 255}.${i & 255}.0/24` },
  status: {
    capacity: { cpu: '32', memory: '128Gi', pods: '110', 'ephemeral-storage': '500Gi' },
    allocatable: { cpu: '31500m', memory: '125Gi', pods: '110', 'ephemeral-storage': '480Gi' },
    conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: '2026-01-01T00:00:00Z', lastTransitionTime: '2026-01-01T00:00:00Z' }],
    addresses: [
      { type: 'InternalIP', address: `10.250.${(i >> 8) & 255}.${i & 255}` },
      { type: 'Hostname', address: `node-${i}` },
    ],
  },
});

const pod = (i, nodes) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: `pod-${i}`, namespace: 'default', labels: { app: `app-${i % 100}`, tier: 'web' } },
  spec: {
    nodeName: `node-${i % nodes}`,
    containers: [
      {
        name: 'app',
        image: 'registry.example/app:1.0',
        ports: [{ containerPort: 8080 }],
        resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
      },
    ],
  },
});

/** Run `n` async tasks with at most `width` in flight. */
async function pool(n, width, task) {
  let next = 0;
  const workers = [];
  for (let w = 0; w < Math.min(width, n); w++) {
    workers.push(
      (async () => {
        while (next < n) await task(next++);
      })(),
    );
  }
  await Promise.all(workers);
}

export async function runChild(backend, { nodes, pods, watchers, events, pct }) {
  const dir = mkdtempSync(path.join(tmpdir(), `kemu-bench-${backend}-`));
  let etcd;
  let store;
  const concurrency = backend === 'memory' ? 1 : 64;
  try {
    if (backend === 'memory') store = await MemoryStore.open({ bookmarkIntervalMs: 60_000 });
    else if (backend === 'file') store = await FileStore.open({ dir, snapshotEvery: 50_000 });
    else {
      etcd = await startEtcd(dir);
      store = await EtcdStore.open({ endpoints: etcd.endpoint });
    }

    // Reference for etcd first, after a warm-up, so both sides meet the same warmed-up etcd.
    let reference = null;
    if (backend === 'etcd') {
      const c = store.client;
      await pool(1000, concurrency, (i) => c.put(`/bench-warmup/${i}`).value('x').exec());
      const n = pods;
      const r0 = performance.now();
      await pool(n, concurrency, (i) => c.put(`/bench-ref/pods/default/pod-${i}`).value(JSON.stringify(pod(i, nodes))).exec());
      reference = { name: 'raw etcd3 puts', perSec: n / ((performance.now() - r0) / 1000) };
    }

    if (backend === 'file') {
      // The floor for a durable local store: the same JSON appended to a file, fdatasync'ed per batch of
      // `concurrency` records (what group commit achieves at best).
      const fh = await open(path.join(dir, 'reference.log'), 'a');
      const n = pods;
      const r0 = performance.now();
      for (let i = 0; i < n; i += concurrency) {
        const batch = [];
        for (let j = i; j < Math.min(n, i + concurrency); j++) batch.push(`${JSON.stringify(pod(j, nodes))}\n`);
        await fh.write(batch.join(''));
        await fh.datasync();
      }
      await fh.close();
      reference = { name: 'append + fdatasync per 64 records', perSec: n / ((performance.now() - r0) / 1000) };
    }

    // 1. creates
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    if (concurrency === 1) for (let i = 0; i < nodes; i++) await store.create(node(i));
    else await pool(nodes, concurrency, (i) => store.create(node(i)));
    const t1 = performance.now();
    if (concurrency === 1) for (let i = 0; i < pods; i++) await store.create(pod(i, nodes));
    else await pool(pods, concurrency, (i) => store.create(pod(i, nodes)));
    const t2 = performance.now();
    const cpu = process.cpuUsage(c0);

    // 2. watchers, one per node
    const rv = await store.resourceVersion();
    const sent = new Map();
    const lat = [];
    let received = 0;
    let misdelivered = 0;
    let lastReceive = 0;
    const ws = [];
    const tw0 = performance.now();
    for (let i = 0; i < watchers; i++) {
      const nodeName = `node-${i % nodes}`;
      const w = await store.watch('Pod', { fieldSelector: `spec.nodeName=${nodeName}`, resourceVersion: rv });
      ws.push(w);
      (async () => {
        for await (const ev of w) {
          if (ev.type !== 'MODIFIED') continue;
          const now = performance.now();
          const o = ev.object;
          if (o.spec.nodeName !== nodeName) misdelivered++;
          const s = sent.get(o.metadata.name);
          if (s !== undefined) lat.push(now - s);
          received++;
          lastReceive = now;
        }
      })();
    }
    const tw1 = performance.now();

    // 3. events: status patches round-robin over the nodes
    const te0 = performance.now();
    const fire = async (j) => {
      const name = `pod-${j % pods}`;
      sent.set(name, performance.now());
      await store.patch('Pod', 'default', name, { status: { phase: 'Running', podIP: `10.1.${(j >> 8) & 255}.${j & 255}` } }, 'merge', {
        subresource: 'status',
      });
    };
    // Events: one write at a time for memory; 8 in flight for file/etcd (enough to use group commit and
    // pipelining without measuring mostly queueing in front of a saturated disk).
    if (concurrency === 1) for (let j = 0; j < events; j++) await fire(j);
    else await pool(events, 8, fire);
    const deadline = performance.now() + 60_000;
    while (received < events && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const te1 = lastReceive || performance.now();
    const peakRssBytes = process.resourceUsage().maxRSS * 1024;
    for (const w of ws) w.stop();

    // In-process reference after the peak RSS was taken.
    if (backend === 'memory') {
      const m = new Map();
      const n = Math.min(pods, 50_000);
      const r0 = performance.now();
      const rc = process.cpuUsage();
      for (let i = 0; i < n; i++) {
        const p = JSON.parse(JSON.stringify(pod(i, nodes)));
        m.set(`default/${p.metadata.name}`, p);
      }
      const rcpu = process.cpuUsage(rc);
      reference = { name: 'Map.set of JSON copies', perSec: n / ((performance.now() - r0) / 1000), perCpuSec: n / ((rcpu.user + rcpu.system) / 1e6) };
    }

    return {
      backend,
      nodes,
      pods,
      watchers,
      events,
      concurrency,
      createsPerSec: (nodes + pods) / ((t2 - t0) / 1000),
      // Per CPU-second of this process (all its threads): independent of how busy the machine is.
      createsPerCpuSec: (nodes + pods) / ((cpu.user + cpu.system) / 1e6),
      nodeCreatesPerSec: nodes / ((t1 - t0) / 1000),
      podCreatesPerSec: pods / ((t2 - t1) / 1000),
      watchStartMs: tw1 - tw0,
      latencyP50Ms: pct(lat, 50),
      latencyP99Ms: pct(lat, 99),
      eventsPerSec: received / ((te1 - te0) / 1000),
      misdelivered: misdelivered + Math.max(0, events - received),
      peakRssBytes,
      reference,
    };
  } finally {
    await store?.close();
    await etcd?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
