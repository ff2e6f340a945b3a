// Ephemeral (debug) containers added through pods/ephemeralcontainers, and readiness gates, through the
// kubelet on the sim runtime.
import type { Pod } from '@kemu/core';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestKubelet, type TestKubelet, testPod, until } from './testing.js';

const running: TestKubelet[] = [];
afterEach(async () => {
  for (const k of running.splice(0)) await k.stop();
});

async function start() {
  const k = await startTestKubelet();
  running.push(k);
  return k;
}
const get = (k: TestKubelet, name: string) => k.store.get('Pod', 'default', name) as Promise<Pod>;

describe('ephemeral containers', () => {
  it('starts a debug container added to a running pod, reports it, and never restarts it', async () => {
    const k = await start();
    await k.store.create(testPod('web'));
    const pod = await until('running', async () => {
      const p = await get(k, 'web');
      return p.status?.phase === 'Running' && p;
    });
    await k.store.update(
      { ...pod, spec: { ...pod.spec, ephemeralContainers: [{ name: 'debugger', image: 'busybox:1.36', command: ['sh', '-c', 'echo debugging; exit 4'], targetContainerName: 'app' }] } },
      { subresource: 'ephemeralcontainers' },
    );
    const st = await until('ephemeral container terminated', async () => {
      const s = (await get(k, 'web')).status?.ephemeralContainerStatuses?.[0];
      return s?.state?.terminated && s;
    });
    expect(st).toMatchObject({ name: 'debugger', restartCount: 0, state: { terminated: { exitCode: 4, reason: 'Error' } } });
    const after = await get(k, 'web');
    expect(after.status?.phase).toBe('Running');
    expect(after.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    // Several more syncs: still one container for it, not restarted.
    await new Promise((r) => setTimeout(r, 400));
    const list = await k.cri.runtimeService.ListContainers!({ filter: { labelSelector: { 'io.kubernetes.container.name': 'debugger' } } }, undefined as never);
    expect(list.containers).toHaveLength(1);
  });
});

describe('readiness gates', () => {
  it('keeps the pod unready until the gate condition is True, and keeps conditions it does not own', async () => {
    const k = await start();
    await k.store.create(testPod('gated', { readinessGates: [{ conditionType: 'example.com/lb-ready' }] }));
    const unready = await until('containers ready, pod not', async () => {
      const p = await get(k, 'gated');
      const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
      return p.status?.conditions?.find((c) => c.type === 'ContainersReady')?.status === 'True' && ready?.status === 'False' && ready;
    });
    expect(unready).toMatchObject({ reason: 'ReadinessGatesNotReady', message: 'corresponding condition of pod readiness gate "example.com/lb-ready" does not exist.' });
    const p = await get(k, 'gated');
    const conditions = [...(p.status?.conditions ?? []), { type: 'example.com/lb-ready', status: 'True' as const, lastTransitionTime: new Date().toISOString() }];
    await k.store.updateStatus({ ...p, status: { ...p.status, conditions } });
    const ready = await until('pod ready', async () => {
      const q = await get(k, 'gated');
      return q.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' && q;
    });
    expect(ready.status?.conditions?.find((c) => c.type === 'example.com/lb-ready')?.status).toBe('True');
  });
});
