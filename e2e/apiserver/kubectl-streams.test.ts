// kubectl v1.32 against a composed cluster's API server (the kubeconfig `kemu up` writes): pod logs (tail,
// timestamps, follow) and exec over WebSocket v5 and over SPDY (stdin, exit codes), relayed by the API server
// to the node's CRI streaming server as kube-apiserver does through a kubelet.
import { spawn } from 'node:child_process';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../cluster/util.js';
import { type HttpsCluster, startHttpsCluster } from './https-cluster.js';

const ok = requirePeers('kubectl streaming through a composed cluster', [peers.kubectl]);

describe.runIf(ok)('kubectl logs and exec through the API server', () => {
  let h: HttpsCluster;
  const kubectl: HttpsCluster['kubectl'] = (args, opts) => h.kubectl(args, opts);
  const env = () => h.env();

  beforeAll(async () => {
    h = await startHttpsCluster('streams');
    const run = await kubectl(['run', 'web', '--image=busybox:1.36', '--restart=Never', '--', 'sh', '-c', 'echo one; echo two; echo three; sleep 1000']);
    expect(run.code, run.stderr).toBe(0);
    const ready = await kubectl(['wait', 'pod/web', '--for=condition=Ready', '--timeout=60s']);
    expect(ready.code, ready.stderr).toBe(0);
  }, 120_000);

  afterAll(async () => {
    await h?.stop();
  });

  it('logs: all, --tail, --timestamps, and -f streaming while the container runs', async () => {
    await until('the log lines', async () => (await kubectl(['logs', 'web'])).stdout === 'one\ntwo\nthree\n');
    expect((await kubectl(['logs', 'web', '--tail=1'])).stdout).toBe('three\n');
    expect((await kubectl(['logs', 'web', '--timestamps'])).stdout).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d) one\n/);
    const follow = spawn('kubectl', ['logs', '-f', 'web'], { env: env() });
    let out = '';
    follow.stdout.on('data', (d) => (out += d));
    try {
      await until('the followed lines', async () => out === 'one\ntwo\nthree\n');
      // Still streaming: the command has not ended.
      expect(follow.exitCode).toBeNull();
    } finally {
      follow.kill();
    }
  });

  it('exec over WebSocket (v5) and over SPDY: output, stdin and exit codes', async () => {
    const ws = await kubectl(['exec', 'web', '--', 'echo', 'hello']);
    expect(ws).toMatchObject({ code: 0, stdout: 'hello\n' });
    const spdy = await kubectl(['exec', 'web', '--', 'echo', 'spdy'], { env: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' } });
    expect(spdy).toMatchObject({ code: 0, stdout: 'spdy\n' });
    const stdin = await kubectl(['exec', '-i', 'web', '--', 'cat'], { stdin: 'piped\n' });
    expect(stdin).toMatchObject({ code: 0, stdout: 'piped\n' });
    const fail = await kubectl(['exec', 'web', '--', 'sh', '-c', 'exit 3']);
    expect(fail.code).toBe(3);
    expect(fail.stderr).toContain('command terminated with exit code 3');
    const missing = await kubectl(['exec', 'nope', '--', 'true']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('pods "nope" not found');
  });
});
