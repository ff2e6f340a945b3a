// kubectl v1.32 debug against a composed cluster's API server (the kubeconfig `kemu up` writes): the ephemeral
// container goes into the pod through pods/ephemeralcontainers, the node's kubelet starts it, and kubectl
// attaches to it through the API server as it would upstream.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clusterCredentials } from '@kemu/apiserver';
import { peers, requirePeers } from '@kemu/test-peers';
import { Cluster } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../cluster/util.js';

const ok = requirePeers('kubectl debug through a composed cluster', [peers.kubectl]);

describe.runIf(ok)('kubectl debug through the API server', () => {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-debug-'));
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-home-'));
  let cluster: Cluster;
  let kubeconfig: string;
  const kubectl = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = spawn('kubectl', args, { env: { PATH: process.env.PATH ?? '', HOME: home, KUBECONFIG: kubeconfig } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
      child.stdin.end();
    });

  beforeAll(async () => {
    const creds = await clusterCredentials(stateDir, { name: 'debug' });
    cluster = await Cluster.start({
      stateDir,
      nodes: 1,
      fast: true,
      apiSocket: path.join(stateDir, 'kemu.sock'),
      apiServer: { tcp: { host: '127.0.0.1', port: 0, tls: creds.serving } },
    });
    kubeconfig = creds.writeKubeconfig(cluster.api!.url!).path;
    const run = await kubectl(['run', 'web', '--image=busybox:1.36', '--restart=Never', '--', 'sleep', '1000']);
    expect(run.code, run.stderr).toBe(0);
    const ready = await kubectl(['wait', 'pod/web', '--for=condition=Ready', '--timeout=60s']);
    expect(ready.code, ready.stderr).toBe(0);
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('debug -i adds an ephemeral container targeting the pod\'s container, runs it and shows its output', async () => {
    const r = await kubectl(['debug', '-i', 'web', '--image=busybox:1.36', '--target=web', '--container=dbg', '--profile=general', '--', 'sh', '-c', 'echo from-debugger']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('from-debugger');
    const pod = JSON.parse((await kubectl(['get', 'pod', 'web', '-o', 'json'])).stdout);
    expect(pod.spec.ephemeralContainers).toMatchObject([{ name: 'dbg', image: 'busybox:1.36', targetContainerName: 'web' }]);
    await until('the debugger ran', async () => {
      const p = JSON.parse((await kubectl(['get', 'pod', 'web', '-o', 'json'])).stdout);
      return p.status?.ephemeralContainerStatuses?.some((s: { name: string; state?: { terminated?: unknown; running?: unknown } }) => s.name === 'dbg' && (s.state?.terminated || s.state?.running));
    });
  }, 60_000);
});
