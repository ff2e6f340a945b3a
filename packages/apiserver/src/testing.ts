// Test support: an API server over a memory store on a temp unix socket and an HTTPS port, with a fresh CA
// and an admin kubeconfig that kubectl and the official clients read unchanged.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMemoryStore, type Store } from '@kemu/core';
import { CertificateAuthority } from './ca.js';
import { buildKubeconfig, kubeconfigYaml } from './kubeconfig.js';
import { type ApiExtensions, type ApiServer, type ApiServerOptions, startApiServer } from './server.js';

export interface TestApiServer {
  api: ApiServer;
  store: Store;
  ca: CertificateAuthority;
  dir: string;
  /** Path of an admin kubeconfig (client certificate CN=kemu-admin, O=system:masters). */
  kubeconfig: string;
  close(): Promise<void>;
}

export async function startTestApiServer(
  opts: { store?: Store; ext?: ApiExtensions; options?: Omit<ApiServerOptions, 'tcp'> } = {},
): Promise<TestApiServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-apiserver-'));
  const store = opts.store ?? (await createMemoryStore());
  const ca = await CertificateAuthority.create('kemu-test-ca');
  const serving = await ca.issueServing();
  const api = await startApiServer(store, path.join(dir, 'api.sock'), opts.ext ?? {}, {
    ...(opts.options ?? {}),
    tcp: { host: '127.0.0.1', port: 0, tls: { ...serving, clientCA: ca.certPem } },
  });
  const admin = await ca.issueClient({ user: 'kemu-admin', groups: ['system:masters'] });
  const kubeconfig = path.join(dir, 'kubeconfig');
  const cfg = buildKubeconfig({ name: 'test', server: api.url!, caPem: ca.certPem, clientCertPem: admin.cert, clientKeyPem: admin.key });
  fs.writeFileSync(kubeconfig, kubeconfigYaml(cfg), { mode: 0o600 });
  return {
    api,
    store,
    ca,
    dir,
    kubeconfig,
    async close() {
      await api.close();
      if (!opts.store) await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface ProcessResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a client program (kubectl, python3) with a private HOME and the given kubeconfig; never a shell. */
export function runClient(bin: string, args: string[], opts: { kubeconfig: string; stdin?: string; timeoutMs?: number; env?: Record<string, string> }): Promise<ProcessResult> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-client-home-'));
  return new Promise((resolve) => {
    const child = execFile(
      bin,
      args,
      {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, KUBECONFIG: opts.kubeconfig, ...(opts.env ?? {}) },
        timeout: opts.timeoutMs ?? 60_000,
        maxBuffer: 64 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        fs.rmSync(home, { recursive: true, force: true });
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) || 1 : 0, stdout, stderr });
      },
    );
    child.stdin?.end(opts.stdin ?? '');
  });
}
