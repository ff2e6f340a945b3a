#!/usr/bin/env node
// Cluster DNS benchmark: queries per second the kemu DNS server answers against ISC BIND's named serving the
// same records from a zone file, in the same run, both driven by dnsperf over UDP on loopback.
//
//   node tools/bench/dns/qps.mjs [--services 1000] [--seconds 5] [--runs 3] [--clients 4] [--json]
//
// Per run and server: dnsperf for --seconds with a query file of A lookups of every Service (one in ten a
// name that does not exist, for NXDOMAIN). Reports medians of --runs and kemu/named as a ratio.
// Needs dnsperf and named (Debian dnsperf, bind9). Runs from source under tsx, like the other benchmarks.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { argValue, runFromSource } from '../lib/from-source.mjs';

runFromSource(import.meta.url);

const { createMemoryStore } = await import('@kemu/core');
const { DnsServer } = await import('@kemu/dns');

const arg = argValue;
const N = Number(arg('services', '1000'));
const SECONDS = Number(arg('seconds', '5'));
const RUNS = Number(arg('runs', '3'));
const CLIENTS = Number(arg('clients', '4'));
const JSON_OUT = process.argv.includes('--json');
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
for (const p of ['dnsperf', 'named']) {
  if (spawnSync('sh', ['-c', `command -v ${p} || test -x /usr/sbin/${p}`]).status !== 0) {
    console.error(`${p} is missing: apt-get install -y dnsperf bind9`);
    process.exit(2);
  }
}

const svcIP = (i) => `10.96.${(i >> 8) & 255}.${i & 255}`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-dns-'));
const freePort = async () => {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
};

// The same records for both servers.
const store = await createMemoryStore();
await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } });
let zone = `$TTL 5\n@ IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5\n@ IN NS ns.dns.cluster.local.\nns.dns IN A 10.96.0.10\n`;
for (let i = 0; i < N; i++) {
  await store.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: `svc-${i}`, namespace: 'bench' }, spec: { clusterIP: svcIP(i + 20), ports: [{ port: 80 }] } });
  zone += `svc-${i}.bench.svc IN A ${svcIP(i + 20)}\n`;
}
fs.writeFileSync(path.join(dir, 'cluster.local.zone'), zone);
const queries = [];
for (let i = 0; i < N; i++) queries.push(i % 10 === 9 ? `nope-${i}.bench.svc.cluster.local A` : `svc-${i}.bench.svc.cluster.local A`);
fs.writeFileSync(path.join(dir, 'queries.txt'), `${queries.join('\n')}\n`);

const kemuServer = new DnsServer({ store, host: '127.0.0.1', port: 0 });
await kemuServer.start();
const kemuPort = kemuServer.address().port;

const namedPort = await freePort();
fs.writeFileSync(
  path.join(dir, 'named.conf'),
  `options { directory "${dir}"; listen-on port ${namedPort} { 127.0.0.1; }; listen-on-v6 { none; }; recursion no; pid-file "${dir}/named.pid"; };\n` +
    `zone "cluster.local" { type primary; file "${dir}/cluster.local.zone"; };\n`,
);
const named = spawn('named', ['-g', '-n', '1', '-c', path.join(dir, 'named.conf'), '-u', 'root'], { stdio: ['ignore', 'ignore', 'pipe'] });
let namedLog = '';
named.stderr.on('data', (d) => (namedLog += d));
const namedReady = Date.now() + 20_000;
while (!/running/.test(namedLog)) {
  if (Date.now() > namedReady || named.exitCode !== null) {
    console.error(`named did not start:\n${namedLog.slice(-2000)}`);
    process.exit(1);
  }
  await new Promise((r) => setTimeout(r, 100));
}

function dnsperf(port) {
  return new Promise((resolve, reject) => {
    const p = spawn('dnsperf', ['-s', '127.0.0.1', '-p', String(port), '-d', path.join(dir, 'queries.txt'), '-l', String(SECONDS), '-c', String(CLIENTS), '-q', '200', '-t', '2'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    const killer = setTimeout(() => p.kill('SIGKILL'), (SECONDS + 30) * 1000);
    p.on('close', () => {
      clearTimeout(killer);
      const qps = Number(/Queries per second:\s+([\d.]+)/.exec(out)?.[1]);
      const lost = Number(/Queries lost:\s+(\d+)/.exec(out)?.[1] ?? 0);
      const nx = Number(/NXDOMAIN (\d+)/.exec(out)?.[1] ?? 0);
      if (!qps) reject(new Error(`dnsperf gave no rate:\n${out}`));
      else resolve({ qps, lost, nx });
    });
  });
}

// dnsperf is a child process; the kemu server answers in this process's event loop meanwhile.
const results = { kemu: [], named: [] };
try {
  for (let r = 0; r < RUNS; r++) {
    results.kemu.push(await dnsperf(kemuPort));
    results.named.push(await dnsperf(namedPort));
  }
} finally {
  named.kill('SIGTERM');
  await kemuServer.stop();
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
const kemuQps = median(results.kemu.map((x) => x.qps));
const namedQps = median(results.named.map((x) => x.qps));
const summary = { services: N, seconds: SECONDS, runs: RUNS, clients: CLIENTS, kemuQps, namedQps, ratio: kemuQps / namedQps, runsDetail: results };
if (JSON_OUT) console.log(JSON.stringify(summary, null, 2));
else {
  console.log(`services ${N}, ${RUNS} runs of ${SECONDS} s, dnsperf -c ${CLIENTS} -q 200, UDP on loopback`);
  console.log(`kemu-dns  median ${kemuQps.toFixed(0)} q/s  (runs ${results.kemu.map((x) => x.qps.toFixed(0)).join(', ')}; lost ${results.kemu.map((x) => x.lost).join(', ')})`);
  console.log(`named     median ${namedQps.toFixed(0)} q/s  (runs ${results.named.map((x) => x.qps.toFixed(0)).join(', ')}; lost ${results.named.map((x) => x.lost).join(', ')})`);
  console.log(`kemu/named ratio ${(kemuQps / namedQps).toFixed(2)}`);
}
