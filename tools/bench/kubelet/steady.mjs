// Steady-state cost of the kubelets: NODES nodes with PER running bare pods each on the composed Cluster
// (state under /dev/shm), then the process CPU per second over 60 s with nothing changing; PROF=1 also
// writes the CPU profile of that window to PROF_DIR; WINDOW_S shortens the window for a smoke run.
import fs from 'node:fs';
import inspector from 'node:inspector/promises';
// ROOT: the tree to measure (another checkout for old-vs-new runs).
const root = process.env.ROOT ?? new URL('../../..', import.meta.url).pathname.replace(/\/$/, '');
const { Cluster } = await import(`${root}/packages/kemu/src/index.ts`);
const nodes = Number(process.env.NODES ?? 1000), per = Number(process.env.PER ?? 30);
const stateDir = fs.mkdtempSync('/dev/shm/kemu-steady-');
const cluster = await Cluster.start({ stateDir, nodes, fast: false, onError: () => {} });
const store = cluster.store;
await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } });
const total = nodes * per;
const w = await store.watch('Pod', { namespace: 'bench' }); let running = 0; const seen = new Set();
const done = new Promise((resolve) => { (async () => { for await (const ev of w) { const p = ev.object; if (p.status?.phase === 'Running' && !seen.has(p.metadata.uid)) { seen.add(p.metadata.uid); if (++running >= total) resolve(); } } })(); });
const podSpec = { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '10m', memory: '10M' } } }] };
const tc = performance.now();
for (let i = 0; i < total; i += 250) await Promise.all(Array.from({ length: Math.min(250, total - i) }, (_, j) => store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `p${i + j}`, namespace: 'bench' }, spec: podSpec })));
await done; w.stop();
const startS = (performance.now() - tc) / 1000;
await new Promise((r) => setTimeout(r, 10000));
const s = new inspector.Session(); s.connect();
if (process.env.PROF === '1') { await s.post('Profiler.enable'); await s.post('Profiler.setSamplingInterval', { interval: 1000 }); await s.post('Profiler.start'); }
const c0 = process.cpuUsage(); const w0 = performance.now();
await new Promise((r) => setTimeout(r, Number(process.env.WINDOW_S ?? 60) * 1000));
const c = process.cpuUsage(c0); const el = (performance.now() - w0) / 1000;
console.log(JSON.stringify({ root, nodes, pods: total, allRunningS: startS.toFixed(1), idleCpuPerSec: ((c.user + c.system) / 1e6 / el).toFixed(3), rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20) }));
if (process.env.PROF === '1') { const { profile } = await s.post('Profiler.stop'); const dir = process.env.PROF_DIR ?? '/tmp/kemu-steady-prof'; fs.mkdirSync(dir, { recursive: true }); fs.writeFileSync(`${dir}/steady.cpuprofile`, JSON.stringify(profile)); }
await cluster.stop(); fs.rmSync(stateDir, { recursive: true, force: true }); process.exit(0);
