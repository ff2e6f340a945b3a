#!/usr/bin/env node
// API server benchmark over HTTP (server and clients in separate processes), against a same-run reference.
//
//   node tools/bench/apiserver/apiserver.mjs [--runs 3] [--creates 20000] [--clients 16]
//                                            [--list-pods 150000] [--watchers 5000] [--updates 20]
//                                            [--parts creates,list,watch] [--json FILE]
//
// Per run, each part in fresh server processes:
//   creates: `clients` concurrent requests on one HTTP/2 connection (as client-go multiplexes) POST `creates`
//            ConfigMaps; creates/s and per-request p50/p99. Reference: the bare node:http2 echo server
//            (server-child.mjs `bare`) on the
//            same TLS material, same clients: the ratio says what the API machinery costs over Node's HTTP.
//   list:    a server seeded in process with `list-pods` pods; one LIST of them all as JSON, and one as a
//            meta.k8s.io Table (what kubectl get asks for): time to the last byte, and bytes.
//   watch:   `watchers` watches on pods (HTTP/2, many streams per connection, as client-go multiplexes), each
//            with fieldSelector metadata.name=<target>; `updates` patches of the target pod, one at a time;
//            per delivery, time from issuing the patch to the watcher reading the event: p50/p99 over all.
// Reported as medians over the runs.
import { spawn } from 'node:child_process';
import http2 from 'node:http2';
import https from 'node:https';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const { values: opts } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    creates: { type: 'string', default: '20000' },
    clients: { type: 'string', default: '16' },
    'list-pods': { type: 'string', default: '150000' },
    watchers: { type: 'string', default: '5000' },
    updates: { type: 'string', default: '20' },
    parts: { type: 'string', default: 'creates,list,watch' },
    json: { type: 'string' },
    // Extra node flags for the server processes (e.g. --cpu-prof).
    'server-flags': { type: 'string', default: '' },
  },
});
const parts = new Set(opts.parts.split(','));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : Number.NaN;
};
const pct = (xs, p) => {
  const s = Float64Array.from(xs).sort();
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : Number.NaN;
};

function startServer(kind, seed = 0) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...opts['server-flags'].split(' ').filter(Boolean), '--conditions=@kemu/source', '--import', 'tsx', '--max-old-space-size=8192', path.join(here, 'server-child.mjs'), kind, String(seed)], {
      cwd: path.join(root, 'packages/apiserver'),
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('READY '));
      if (line) resolve({ proc: p, ...JSON.parse(line.slice(6)) });
    });
    p.on('exit', (code) => reject(new Error(`${kind} server exited (${code}) before it was ready`)));
  });
}
/** The server process's CPU time so far (user + system, microseconds), asked over IPC. */
function serverCpuUs(s) {
  return new Promise((resolve) => {
    s.proc.once('message', (m) => resolve(m.user + m.system));
    s.proc.send('cpu');
  });
}
function stop(s) {
  s.proc.kill('SIGTERM');
  return new Promise((r) => s.proc.once('exit', r));
}

function request(agent, s, method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request(
      { host: '127.0.0.1', port: s.port, path, method, agent, ca: s.ca, cert: s.cert, key: s.key, headers: { 'content-type': 'application/json', ...(payload ? { 'content-length': Buffer.byteLength(payload) } : {}), ...headers } },
      (res) => {
        let bytes = 0;
        res.on('data', (c) => (bytes += c.length));
        res.on('end', () => (res.statusCode >= 400 ? reject(new Error(`${method} ${path}: HTTP ${res.statusCode}`)) : resolve(bytes)));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * An HTTP/2 connection with client-go's flow-control windows (Go's transport grants the server 4 MiB per
 * stream and 1 GiB per connection, not the protocol's 64 KiB defaults, which would make the server wait for
 * WINDOW_UPDATEs on a busy connection of watches).
 */
function h2connect(s) {
  const session = http2.connect(`https://127.0.0.1:${s.port}`, { ca: s.ca, cert: s.cert, key: s.key, settings: { initialWindowSize: 4 << 20 } });
  session.once('connect', () => session.setLocalWindowSize(1 << 30));
  return session;
}

/** One HTTP/2 request on a session (client-go speaks HTTP/2 to kube-apiserver, many streams per connection). */
function h2request(session, method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const st = session.request({ ':method': method, ':path': path, 'content-type': 'application/json', ...headers });
    let status = 0;
    st.on('response', (h) => (status = h[':status']));
    st.on('data', () => {});
    st.on('end', () => (status >= 400 ? reject(new Error(`${method} ${path}: HTTP ${status}`)) : resolve()));
    st.on('error', reject);
    st.end(payload);
  });
}

async function creates(kind) {
  const s = await startServer(kind);
  const clients = Number(opts.clients);
  const total = Number(opts.creates);
  const session = h2connect(s);
  const agent = { request: (_a, _s, method, path, body) => h2request(session, method, path, body) };
  const lat = [];
  let next = 0;
  const cm = (i) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, labels: { bench: 'yes' } }, data: { key: `value-${i}` } });
  // Warm up the connections and the server's code paths.
  await Promise.all(Array.from({ length: clients }, (_, c) => agent.request(agent, s, 'POST', '/api/v1/namespaces/default/configmaps', cm(`warm-${c}`))));
  const cpu0 = await serverCpuUs(s);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < total) {
        const i = next++;
        const t = performance.now();
        await agent.request(agent, s, 'POST', '/api/v1/namespaces/default/configmaps', cm(i));
        lat.push(performance.now() - t);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  // The server's own CPU per request: unlike the rate, it hardly moves with what else the machine runs.
  const cpuUs = ((await serverCpuUs(s)) - cpu0) / total;
  session.close();
  await stop(s);
  return { perSec: total / secs, p50Ms: pct(lat, 50), p99Ms: pct(lat, 99), cpuUs };
}

async function list() {
  const n = Number(opts['list-pods']);
  const s = await startServer('kemu', n);
  const agent = new https.Agent({ keepAlive: true });
  await request(agent, s, 'GET', '/api/v1/namespaces/default/pods?limit=1');
  const timed = async (accept) => {
    const t = performance.now();
    const bytes = await request(agent, s, 'GET', '/api/v1/pods', undefined, accept ? { accept } : {});
    return { ms: performance.now() - t, bytes };
  };
  const json = await timed();
  const table = await timed('application/json;as=Table;v=v1;g=meta.k8s.io,application/json');
  agent.destroy();
  await stop(s);
  return { pods: n, jsonMs: json.ms, jsonBytes: json.bytes, tableMs: table.ms, tableBytes: table.bytes };
}

async function watch() {
  const s = await startServer('kemu');
  const agent = new https.Agent({ keepAlive: true });
  const target = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'target', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] } };
  await request(agent, s, 'POST', '/api/v1/namespaces/default/pods', target);
  const watchers = Number(opts.watchers);
  const perSession = 900;
  const sessions = Array.from({ length: Math.ceil(watchers / perSession) }, () => h2connect(s));
  const sent = new Map();
  const lat = [];
  let established = 0;
  const t0 = performance.now();
  const streams = [];
  await Promise.all(
    Array.from({ length: watchers }, (_, i) =>
      new Promise((resolve, reject) => {
        const st = sessions[Math.floor(i / perSession)].request({
          ':path': '/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name%3Dtarget&resourceVersion=0',
        });
        streams.push(st);
        let buf = '';
        st.setEncoding('utf8');
        st.on('response', (h) => {
          if (h[':status'] !== 200) reject(new Error(`watch HTTP ${h[':status']}`));
          established++;
          resolve();
        });
        st.on('data', (d) => {
          const now = performance.now();
          buf += d;
          for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
            const ev = JSON.parse(buf.slice(0, nl));
            buf = buf.slice(nl + 1);
            const mark = ev.object?.metadata?.labels?.mark;
            if (ev.type === 'MODIFIED' && sent.has(mark)) lat.push(now - sent.get(mark));
          }
        });
        st.on('error', reject);
      }),
    ),
  );
  const watchStartMs = performance.now() - t0;
  const cpu0 = await serverCpuUs(s);
  for (let u = 0; u < Number(opts.updates); u++) {
    const mark = `m${u}`;
    const before = lat.length;
    sent.set(mark, performance.now());
    await request(agent, s, 'PATCH', '/api/v1/namespaces/default/pods/target', { metadata: { labels: { mark } } }, { 'content-type': 'application/merge-patch+json' });
    const end = Date.now() + 30_000;
    while (lat.length < before + watchers && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  }
  const delivered = lat.length;
  const cpuUs = ((await serverCpuUs(s)) - cpu0) / Math.max(1, delivered);
  for (const st of streams) st.close();
  for (const ss of sessions) ss.close();
  agent.destroy();
  await stop(s);
  return { watchers: established, watchStartMs, deliveries: delivered, expected: watchers * Number(opts.updates), p50Ms: pct(lat, 50), p99Ms: pct(lat, 99), cpuUs };
}

const results = [];
for (let r = 0; r < Number(opts.runs); r++) {
  const res = {};
  if (parts.has('creates')) {
    res.kemu = await creates('kemu');
    res.bare = await creates('bare');
    console.error(
      `run ${r + 1}: creates kemu ${res.kemu.perSec.toFixed(0)}/s p99 ${res.kemu.p99Ms.toFixed(1)} ms (server CPU ${res.kemu.cpuUs.toFixed(1)} us/create); bare ${res.bare.perSec.toFixed(0)}/s p99 ${res.bare.p99Ms.toFixed(1)} ms (${res.bare.cpuUs.toFixed(1)} us)`,
    );
  }
  if (parts.has('list')) {
    res.list = await list();
    console.error(`run ${r + 1}: LIST ${res.list.pods} pods JSON ${res.list.jsonMs.toFixed(0)} ms (${(res.list.jsonBytes / 2 ** 20).toFixed(0)} MiB), Table ${res.list.tableMs.toFixed(0)} ms (${(res.list.tableBytes / 2 ** 20).toFixed(0)} MiB)`);
  }
  if (parts.has('watch')) {
    res.watch = await watch();
    console.error(`run ${r + 1}: ${res.watch.watchers} watchers (started in ${res.watch.watchStartMs.toFixed(0)} ms), ${res.watch.deliveries}/${res.watch.expected} deliveries, p50 ${res.watch.p50Ms.toFixed(1)} ms p99 ${res.watch.p99Ms.toFixed(1)} ms (server CPU ${res.watch.cpuUs.toFixed(1)} us/delivery)`);
  }
  results.push(res);
}
const m = (f) => median(results.map(f).filter((x) => x !== undefined));
const summary = {
  runs: results.length,
  ...(parts.has('creates')
    ? {
        creates: {
          clients: Number(opts.clients),
          count: Number(opts.creates),
          kemuPerSec: m((r) => r.kemu.perSec),
          kemuP99Ms: m((r) => r.kemu.p99Ms),
          barePerSec: m((r) => r.bare.perSec),
          bareP99Ms: m((r) => r.bare.p99Ms),
          kemuServerCpuUs: m((r) => r.kemu.cpuUs),
          bareServerCpuUs: m((r) => r.bare.cpuUs),
          ratio: m((r) => r.kemu.perSec / r.bare.perSec),
        },
      }
    : {}),
  ...(parts.has('list') ? { list: { pods: Number(opts['list-pods']), jsonMs: m((r) => r.list.jsonMs), tableMs: m((r) => r.list.tableMs) } } : {}),
  ...(parts.has('watch')
    ? { watch: { watchers: Number(opts.watchers), updates: Number(opts.updates), p50Ms: m((r) => r.watch.p50Ms), p99Ms: m((r) => r.watch.p99Ms), serverCpuUsPerDelivery: m((r) => r.watch.cpuUs), lost: Math.max(...results.map((r) => r.watch.expected - r.watch.deliveries)) } }
    : {}),
};
console.log(JSON.stringify(summary, null, 2));
if (opts.json) writeFileSync(opts.json, JSON.stringify({ summary, results }, null, 2));
