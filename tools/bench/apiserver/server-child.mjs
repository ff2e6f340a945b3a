// The measured server, in a process of its own: `kemu` (@kemu/apiserver over a memory store, HTTPS with a
// fresh CA) or `bare` (a plain node:http2 secure server, HTTP/1.1 allowed, on the same TLS material that parses each JSON body and
// echoes it back with 201: the floor for any API server on Node's HTTP stack). Prints one READY line with
// the port, the CA and an admin client certificate, then serves until killed.
import { createMemoryStore } from '@kemu/core';
import { CertificateAuthority, startApiServer } from '@kemu/apiserver';
import fs from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';

const [kind, seedPods = '0'] = process.argv.slice(2);
const ca = await CertificateAuthority.create('bench-ca');
const serving = await ca.issueServing();
const admin = await ca.issueClient({ user: 'bench', groups: ['system:masters'] });
const pod = (i) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: `seed-${i}`, namespace: 'default', labels: { app: 'seed', shard: String(i % 10) } },
  spec: { nodeName: `node-${i % 100}`, containers: [{ name: 'c', image: 'busybox:1.36', resources: { requests: { cpu: '10m', memory: '16Mi' } } }] },
});

let port;
if (kind === 'kemu') {
  const store = await createMemoryStore();
  for (let i = 0; i < Number(seedPods); i++) await store.create(pod(i));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-api-'));
  const api = await startApiServer(store, path.join(dir, 'api.sock'), {}, { tcp: { host: '127.0.0.1', port: 0, tls: { ...serving, clientCA: ca.certPem } } });
  port = api.port;
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
} else {
  let n = 0;
  const server = http2.createSecureServer({ ...serving, ca: ca.certPem, requestCert: true, rejectUnauthorized: false, allowHTTP1: true }, (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const obj = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
      obj.metadata = { ...(obj.metadata ?? {}), resourceVersion: String(++n), uid: `u-${n}` };
      const text = JSON.stringify(obj);
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  port = server.address().port;
}
process.stdout.write(`READY ${JSON.stringify({ port, ca: ca.certPem, cert: admin.cert, key: admin.key })}\n`);
process.on('SIGTERM', () => process.exit(0));
// The bench asks for this process's CPU time around a measured part.
process.on('message', (m) => {
  if (m === 'cpu') process.send(process.cpuUsage());
});
