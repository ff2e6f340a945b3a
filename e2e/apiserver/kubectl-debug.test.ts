// kubectl v1.32 debug against a composed cluster's API server (the kubeconfig `kemu up` writes): the ephemeral
// container goes into the pod through pods/ephemeralcontainers, the node's kubelet starts it, and kubectl
// attaches to it through the API server as it would upstream.
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../cluster/util.js';
import { type HttpsCluster, startHttpsCluster } from './https-cluster.js';

const ok = requirePeers('kubectl debug through a composed cluster', [peers.kubectl]);

describe.runIf(ok)('kubectl debug through the API server', () => {
  let h: HttpsCluster;
  const kubectl: HttpsCluster['kubectl'] = (args, opts) => h.kubectl(args, opts);

  beforeAll(async () => {
    h = await startHttpsCluster('debug');
    const run = await kubectl(['run', 'web', '--image=busybox:1.36', '--restart=Never', '--', 'sleep', '1000']);
    expect(run.code, run.stderr).toBe(0);
    const ready = await kubectl(['wait', 'pod/web', '--for=condition=Ready', '--timeout=60s']);
    expect(ready.code, ready.stderr).toBe(0);
  }, 120_000);

  afterAll(async () => {
    await h?.stop();
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
