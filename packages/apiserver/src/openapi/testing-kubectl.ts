// Test helper: real kubectl against a small HTTP server on loopback that serves legacy discovery for the
// served kinds, the OpenAPI documents, and whatever else a test's handler answers.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { openApiV2, openApiV3, openApiV3Index } from './documents.js';
import { servedKinds } from './served-kinds.js';
import { OPENAPI_V2_PROTOBUF_CONTENT_TYPE } from './v2-protobuf.js';

export type Handler = (req: http.IncomingMessage, body: Buffer, res: http.ServerResponse) => boolean | Promise<boolean>;

export interface KubectlServer {
  kubeconfig: string;
  /** Requests seen, as `METHOD path?query content-type`. */
  requests: string[];
  kubectl(args: string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }>;
  close(): Promise<void>;
}

function discovery(pathname: string): unknown {
  const gvs = servedKinds();
  if (pathname === '/api') return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] };
  if (pathname === '/apis') {
    const groups = new Map<string, string[]>();
    for (const kinds of gvs.values()) {
      const { group, version } = kinds[0].info;
      if (group) groups.set(group, [...(groups.get(group) ?? []), version]);
    }
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [...groups].map(([name, versions]) => ({
        name,
        versions: versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v })),
        preferredVersion: { groupVersion: `${name}/${versions[0]}`, version: versions[0] },
      })),
    };
  }
  const kinds = gvs.get(pathname.slice(1));
  if (!kinds) return undefined;
  const verbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: kinds[0].info.apiVersion,
    resources: kinds.flatMap(({ info }) => [
      { name: info.resource, singularName: info.kind.toLowerCase(), namespaced: info.namespaced, kind: info.kind, verbs, shortNames: (info as { shortNames?: string[] }).shortNames ?? [] },
      ...(info.hasStatus ? [{ name: `${info.resource}/status`, singularName: '', namespaced: info.namespaced, kind: info.kind, verbs: ['get', 'patch', 'update'] }] : []),
    ]),
  };
}

/** `kubectl` is the program to run (default: kubectl on PATH). */
export async function startKubectlServer(handler?: Handler, kubectl = 'kubectl'): Promise<KubectlServer> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      requests.push(`${req.method} ${url.pathname}${url.search} ${req.headers['content-type'] ?? ''}`.trim());
      try {
        if (handler && (await handler(req, Buffer.concat(chunks), res))) return;
        const json = (code: number, body: unknown) => {
          res.writeHead(code, { 'Content-Type': 'application/json' });
          res.end(typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body));
        };
        if (url.pathname === '/openapi/v2') {
          if (!req.headers.accept?.includes('protobuf')) return json(200, openApiV2().json);
          res.writeHead(200, { 'Content-Type': OPENAPI_V2_PROTOBUF_CONTENT_TYPE });
          return res.end(openApiV2().protobuf!());
        }
        if (url.pathname === '/openapi/v3') return json(200, openApiV3Index());
        if (url.pathname.startsWith('/openapi/v3/')) {
          const doc = openApiV3(url.pathname.slice('/openapi/v3/'.length));
          if (doc) return json(200, doc.json);
        }
        const d = discovery(url.pathname);
        if (d) return json(200, d);
        json(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' });
      } catch (e) {
        res.writeHead(500);
        res.end(String(e));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-kubectl-'));
  const kubeconfig = path.join(dir, 'config');
  fs.writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 't', cluster: { server: `http://127.0.0.1:${port}` } }],
      users: [{ name: 't', user: {} }],
      contexts: [{ name: 't', context: { cluster: 't', user: 't', namespace: 'default' } }],
      'current-context': 't',
    }),
    { mode: 0o600 },
  );
  return {
    kubeconfig,
    requests,
    kubectl: (args, stdin) =>
      new Promise((resolve, reject) => {
        const child = spawn(kubectl, ['--kubeconfig', kubeconfig, '--cache-dir', path.join(dir, 'cache'), ...args], {
          env: { PATH: process.env.PATH, HOME: dir },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c) => (stdout += c));
        child.stderr.on('data', (c) => (stderr += c));
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        child.on('error', reject);
        child.on('close', (code) => {
          clearTimeout(timer);
          resolve({ code: code ?? -1, stdout, stderr });
        });
        child.stdin.end(stdin ?? '');
      }),
    close: async () => {
      // Idle keep-alive connections would hold close() open; the directory goes even if it fails.
      try {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
