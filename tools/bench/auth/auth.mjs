#!/usr/bin/env node
// Authentication, RBAC and admission cost, as same-run ratios (the issue's target: creates/s with auth on
// at least 0.7x of off).
//
//   node tools/bench/auth/auth.mjs [--runs 5] [--creates 5000] [--clients 16] [--bindings 1000]
//                                  [--authz-bindings 10,1000,10000] [--authz-checks 200000] [--json FILE]
//
// Per run:
//   creates: fresh server processes (server-child.mjs) `open` (allow-all seams), `rbac` (authentication and
//            RBAC only) and `auth` (the stack of
//            `kemu up` with `bindings` extra RoleBindings/ClusterRoleBindings for other users); `clients`
//            concurrent POSTs of Pods on one HTTP/2 connection as user `bench` (client certificate, RBAC
//            through a RoleBinding to `edit`, and every admission plugin: NamespaceLifecycle, LimitRanger,
//            ServiceAccount, PodSecurity, Priority, DefaultTolerationSeconds, VAP, webhooks, ResourceQuota).
//            Reported: creates/s and p99 of each, auth/open and rbac/open, and the server process's CPU time
//            per create (from /proc, so a shared machine's load bends it less than the wall-clock rates).
//   authz:   the RBAC authorizer in process, over informer caches holding N bindings for other subjects:
//            decisions/s for an allowed and a denied request, for each N, and the ratio to the smallest N.
// Medians over the runs.
import { spawn } from 'node:child_process';
import http2 from 'node:http2';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const { values: opts } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    creates: { type: 'string', default: '5000' },
    clients: { type: 'string', default: '16' },
    bindings: { type: 'string', default: '1000' },
    'authz-bindings': { type: 'string', default: '10,1000,10000' },
    'authz-checks': { type: 'string', default: '200000' },
    parts: { type: 'string', default: 'creates,authz' },
    json: { type: 'string' },
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

function startServer(mode) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--conditions=@kemu/source', '--import', 'tsx', path.join(here, 'server-child.mjs'), mode, opts.bindings], {
      cwd: path.join(root, 'packages/apiserver'),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('READY '));
      if (line) resolve({ proc: p, ...JSON.parse(line.slice(6)) });
    });
    p.on('exit', (code) => reject(new Error(`${mode} server exited (${code}) before it was ready`)));
  });
}
/** CPU time (user + system) a process has used, in microseconds (Linux; clock ticks of 10 ms). */
function cpuMicros(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

const stop = (s) => {
  s.proc.kill('SIGTERM');
  return new Promise((r) => s.proc.once('exit', r));
};

function post(session, p, body) {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const st = session.request({ ':method': 'POST', ':path': p, 'content-type': 'application/json' });
    let status = 0;
    let text = '';
    st.setEncoding('utf8');
    st.on('response', (h) => (status = h[':status']));
    st.on('data', (d) => (text += d));
    st.on('end', () => (status >= 400 ? reject(new Error(`POST ${p}: HTTP ${status}: ${text.slice(0, 300)}`)) : resolve()));
    st.on('error', reject);
    st.end(payload);
  });
}

const pod = (i) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: `p-${i}`, namespace: 'bench', labels: { app: 'bench' } },
  spec: { containers: [{ name: 'c', image: 'busybox:1.36', resources: { requests: { cpu: '10m', memory: '16Mi' } } }] },
});

async function creates(mode) {
  const s = await startServer(mode);
  const session = http2.connect(`https://127.0.0.1:${s.port}`, { ca: s.ca, cert: s.cert, key: s.key });
  const clients = Number(opts.clients);
  const total = Number(opts.creates);
  const lat = [];
  let next = 0;
  await Promise.all(Array.from({ length: clients }, (_, c) => post(session, '/api/v1/namespaces/bench/pods', pod(`warm-${c}`))));
  const t0 = performance.now();
  const cpu0 = cpuMicros(s.proc.pid);
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < total) {
        const i = next++;
        const t = performance.now();
        await post(session, '/api/v1/namespaces/bench/pods', pod(i));
        lat.push(performance.now() - t);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const cpuUs = (cpuMicros(s.proc.pid) - cpu0) / total;
  session.close();
  await stop(s);
  return { perSec: total / secs, p99Ms: pct(lat, 99), cpuUs };
}

/** The authorizer in a child process too (tsx loads the TypeScript sources). */
function authz() {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--conditions=@kemu/source', '--import', 'tsx', path.join(here, 'authz-child.mjs'), opts['authz-bindings'], opts['authz-checks']], {
      cwd: path.join(root, 'packages/apiserver'),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`authz child exited ${code}`))));
  });
}

const results = [];
for (let r = 0; r < Number(opts.runs); r++) {
  const res = {};
  if (parts.has('creates')) {
    res.open = await creates('open');
    res.rbac = await creates('rbac');
    res.auth = await creates('auth');
    console.error(
      `run ${r + 1}: pod creates open ${res.open.perSec.toFixed(0)}/s p99 ${res.open.p99Ms.toFixed(1)} ms; authn+RBAC ${res.rbac.perSec.toFixed(0)}/s; ` +
        `auth ${res.auth.perSec.toFixed(0)}/s p99 ${res.auth.p99Ms.toFixed(1)} ms; ratio ${(res.auth.perSec / res.open.perSec).toFixed(2)}; ` +
        `server CPU per create open ${res.open.cpuUs.toFixed(0)} us, rbac ${res.rbac.cpuUs.toFixed(0)} us, auth ${res.auth.cpuUs.toFixed(0)} us`,
    );
  }
  if (parts.has('authz')) {
    res.authz = await authz();
    console.error(`run ${r + 1}: authorizer ${res.authz.map((a) => `${a.bindings} bindings: allow ${(a.allowPerSec / 1000).toFixed(0)}k/s deny ${(a.denyPerSec / 1000).toFixed(0)}k/s`).join('; ')}`);
  }
  results.push(res);
}
const m = (f) => median(results.map(f));
const summary = { runs: results.length };
if (parts.has('creates')) {
  summary.creates = {
    count: Number(opts.creates),
    clients: Number(opts.clients),
    extraBindings: Number(opts.bindings),
    openPerSec: m((r) => r.open.perSec),
    openP99Ms: m((r) => r.open.p99Ms),
    rbacOnlyPerSec: m((r) => r.rbac.perSec),
    rbacOnlyRatio: m((r) => r.rbac.perSec / r.open.perSec),
    authPerSec: m((r) => r.auth.perSec),
    authP99Ms: m((r) => r.auth.p99Ms),
    ratio: m((r) => r.auth.perSec / r.open.perSec),
    serverCpuUsPerCreate: { open: m((r) => r.open.cpuUs), rbac: m((r) => r.rbac.cpuUs), auth: m((r) => r.auth.cpuUs) },
    /** open's server CPU per create over auth's: the throughput ratio a server with a core to itself would see. */
    cpuRatio: m((r) => r.open.cpuUs / r.auth.cpuUs),
  };
}
if (parts.has('authz')) {
  summary.authz = results[0].authz.map((a, i) => ({
    bindings: a.bindings,
    allowPerSec: m((r) => r.authz[i].allowPerSec),
    denyPerSec: m((r) => r.authz[i].denyPerSec),
    allowRatioToSmallest: m((r) => r.authz[i].allowPerSec / r.authz[0].allowPerSec),
    denyRatioToSmallest: m((r) => r.authz[i].denyPerSec / r.authz[0].denyPerSec),
  }));
}
console.log(JSON.stringify(summary, null, 2));
if (opts.json) writeFileSync(opts.json, JSON.stringify({ summary, results }, null, 2));
