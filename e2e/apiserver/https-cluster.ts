// A one-node composed cluster whose API server serves HTTPS with the cluster's CA, and real kubectl pointed at
// it through the kubeconfig `kemu up` would write (in a HOME of its own, so no user's ~/.kube is read).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clusterCredentials } from '@kemu/apiserver';
import { Cluster } from 'kemu';

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface HttpsCluster {
  cluster: Cluster;
  /** kubectl's environment: PATH, its own HOME and the cluster's KUBECONFIG. */
  env(): Record<string, string>;
  kubectl(args: string[], opts?: { stdin?: string; env?: Record<string, string> }): Promise<KubectlResult>;
  /** Stops the cluster and removes its state and kubectl's HOME. */
  stop(): Promise<void>;
}

export async function startHttpsCluster(name: string): Promise<HttpsCluster> {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), `kemu-e2e-${name}-`));
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-home-'));
  const creds = await clusterCredentials(stateDir, { name });
  const cluster = await Cluster.start({
    stateDir,
    nodes: 1,
    fast: true,
    apiSocket: path.join(stateDir, 'kemu.sock'),
    apiServer: { tcp: { host: '127.0.0.1', port: 0, tls: creds.serving } },
  });
  const kubeconfig = creds.writeKubeconfig(cluster.api!.url!).path;
  const env = () => ({ PATH: process.env.PATH ?? '', HOME: home, KUBECONFIG: kubeconfig });
  return {
    cluster,
    env,
    kubectl: (args, opts = {}) =>
      new Promise((resolve) => {
        const child = spawn('kubectl', args, { env: { ...env(), ...(opts.env ?? {}) } });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
        child.stdin.end(opts.stdin ?? '');
      }),
    async stop() {
      await cluster.stop();
      fs.rmSync(stateDir, { recursive: true, force: true });
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}
