import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createCsiDriver } from '@kemu/csi';
import { createCri, type CriInstance } from '@kemu/cri';
import { createMemoryStore, type Node, type Pod, type Store } from '@kemu/core';
import { cri, csi, inProcessApi } from '@kemu/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { Kubelet } from './kubelet.js';
import { NodeLifecycleController, UNREACHABLE_TAINT } from './node-lifecycle-controller.js';
import { StaticPluginRegistry } from './plugin-registry.js';
import type { KubeletOptions } from './types.js';
import { attachmentName } from './volume-manager.js';

const SIM = 'kemu.io/sim-';

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 8000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

interface Env {
  store: Store;
  cri: CriInstance;
  kubelet: Kubelet;
  opts: KubeletOptions;
}

const envs: Env[] = [];
const others: Array<{ stop(): Promise<void> }> = [];

async function setup(
  more: Partial<KubeletOptions> | ((cri: CriInstance) => Partial<KubeletOptions>) = {},
  criCfg: Partial<Parameters<typeof createCri>[0]> = {},
): Promise<Env> {
  const store = await createMemoryStore();
  const instance = await createCri({ backend: 'sim', syntheticImages: true, streaming: false, podCidr: '10.244.1.0/24', ...criCfg });
  const extra = typeof more === 'function' ? more(instance) : more;
  const opts: KubeletOptions = {
    store,
    nodeName: 'node-a',
    nodeIP: '192.0.2.10',
    podCIDR: '10.244.1.0/24',
    runtime: inProcessApi(cri.RuntimeServiceService, instance.runtimeService),
    images: inProcessApi(cri.ImageServiceService, instance.imageService),
    relistPeriodMs: 100,
    leaseRenewMs: 100,
    statusUpdateMs: 100,
    backoff: { initialMs: 300, maxMs: 1200, resetAfterMs: 60_000 },
    labels: { 'topology.kubernetes.io/zone': 'z1' },
    // the runtime creates container logs at start: they go to a temporary directory, not the host's /var/log/pods
    podLogsDir: fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-kubelet-logs-')),
    ...extra,
  };
  const kubelet = new Kubelet(opts);
  await kubelet.start();
  const env = { store, cri: instance, kubelet, opts };
  envs.push(env);
  return env;
}

afterEach(async () => {
  for (const o of others.splice(0)) await o.stop();
  for (const e of envs.splice(0)) {
    await e.kubelet.stop();
    await e.cri.close();
    await e.store.close();
    if (e.opts.podLogsDir) fs.rmSync(e.opts.podLogsDir, { recursive: true, force: true });
  }
});

function pod(name: string, spec: Partial<Pod['spec']> = {}, annotations: Record<string, string> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', annotations },
    spec: { nodeName: 'node-a', containers: [{ name: 'app', image: 'registry.example/app:1' }], ...spec },
  };
}

const getPod = (store: Store, name: string) => store.get('Pod', 'default', name);

describe('node registration and heartbeats', () => {
  it('registers the node with labels, capacity, allocatable, podCIDR and a Ready condition', async () => {
    const { store } = await setup({ reserved: { cpu: '500m' } });
    const node = (await store.get('Node', '', 'node-a')) as Node;
    expect(node.metadata.labels).toMatchObject({
      'kubernetes.io/hostname': 'node-a',
      'kubernetes.io/os': 'linux',
      'topology.kubernetes.io/zone': 'z1',
    });
    expect(node.spec?.podCIDRs).toEqual(['10.244.1.0/24']);
    expect(node.metadata.annotations?.['volumes.kubernetes.io/controller-managed-attach-detach']).toBe('true');
    expect(node.status?.capacity).toMatchObject({ cpu: '8', pods: '110' });
    expect(node.status?.allocatable?.cpu).toBe('7500m');
    expect(node.status?.addresses).toContainEqual({ type: 'InternalIP', address: '192.0.2.10' });
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'True', reason: 'KubeletReady' });
    expect(node.status?.nodeInfo?.containerRuntimeVersion).toMatch(/:\/\//);
  });

  it('makes its pods directory at start, as upstream\'s data directories are made', async () => {
    const rootDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-kubelet-root-'));
    others.push({ stop: async () => fs.rmSync(rootDir, { recursive: true, force: true }) });
    await setup({ rootDir });
    expect(fs.statSync(path.join(rootDir, 'pods')).isDirectory()).toBe(true);
    expect(fs.statSync(path.join(rootDir, 'pods')).mode & 0o777).toBe(0o750 & ~process.umask());
  });

  it('renews its Lease in kube-node-lease', async () => {
    const { store } = await setup();
    const first = await store.get('Lease', 'kube-node-lease', 'node-a');
    expect(first.spec?.holderIdentity).toBe('node-a');
    expect(first.spec?.leaseDurationSeconds).toBe(40);
    await until('lease renewal', async () => {
      const l = await store.get('Lease', 'kube-node-lease', 'node-a');
      return l.spec?.renewTime !== first.spec?.renewTime;
    });
  });

  it('a node that stops heartbeating becomes NotReady (Unknown) and tainted, and recovers', async () => {
    const { store, kubelet } = await setup();
    const nlc = new NodeLifecycleController({ store, gracePeriodMs: 300, monitorPeriodMs: 50 });
    nlc.start();
    others.push(nlc);
    kubelet.pauseHeartbeats();
    const node = await until('node Unknown', async () => {
      const n = await store.get('Node', '', 'node-a');
      return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'Unknown' && n;
    });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.message).toBe('Kubelet stopped posting node status.');
    await until('unreachable taint', async () => {
      const n = await store.get('Node', '', 'node-a');
      return n.spec?.taints?.some((t) => t.key === UNREACHABLE_TAINT && t.effect === 'NoSchedule');
    });
    kubelet.pauseHeartbeats(false);
    await until('Ready again without the taint', async () => {
      const n = await store.get('Node', '', 'node-a');
      return (
        n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' && !n.spec?.taints?.some((t) => t.key === UNREACHABLE_TAINT)
      );
    });
  });
});

describe('pod lifecycle', () => {
  it('runs a pod: sandbox with the pod IP, containers running, Ready, with kubelet labels on CRI objects', async () => {
    const { store, cri: c } = await setup();
    await store.create(pod('web', { containers: [{ name: 'app', image: 'nginx', ports: [{ containerPort: 80, hostPort: 8080 }] }] }));
    const p = await until('Running', async () => {
      const x = await getPod(store, 'web');
      return x.status?.phase === 'Running' && x.status.conditions?.find((k) => k.type === 'Ready')?.status === 'True' && x;
    });
    expect(p.status?.podIP).toMatch(/^10\.244\.1\.\d+$/);
    expect(p.status?.hostIP).toBe('192.0.2.10');
    expect(p.status?.containerStatuses?.[0]).toMatchObject({ name: 'app', ready: true, restartCount: 0, started: true });
    expect(p.status?.containerStatuses?.[0].state?.running?.startedAt).toBeTruthy();
    expect(p.status?.qosClass).toBe('BestEffort');
    const sandboxes = await c.runtimeService.ListPodSandbox!({ filter: { labelSelector: { 'io.kubernetes.pod.uid': p.metadata.uid! } } } as never, {} as never);
    expect(sandboxes.items).toHaveLength(1);
    expect(sandboxes.items?.[0].labels).toMatchObject({ 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.namespace': 'default' });
  });

  it('runs init containers one at a time, in order, before app containers', async () => {
    const { store, cri: c } = await setup();
    const exitQuick = { [`${SIM}exit-after.init-1`]: '0.2', [`${SIM}exit-after.init-2`]: '0.2' };
    await store.create(
      pod(
        'inits',
        {
          initContainers: [
            { name: 'init-1', image: 'busybox' },
            { name: 'init-2', image: 'busybox' },
          ],
          containers: [{ name: 'app', image: 'nginx' }],
        },
        exitQuick,
      ),
    );
    const p = await until('Running after inits', async () => {
      const x = await getPod(store, 'inits');
      return x.status?.phase === 'Running' && x;
    });
    expect(p.status?.initContainerStatuses?.map((s) => [s.name, s.state?.terminated?.reason])).toEqual([
      ['init-1', 'Completed'],
      ['init-2', 'Completed'],
    ]);
    const list = await c.runtimeService.ListContainers!({} as never, {} as never);
    const started = new Map<string, number>();
    for (const ct of list.containers ?? []) {
      const st = await c.runtimeService.ContainerStatus!({ containerId: ct.id } as never, {} as never);
      started.set(ct.metadata!.name!, st.status!.startedAt!);
    }
    const fin = async (name: string) => {
      const ct = list.containers!.find((x) => x.metadata?.name === name)!;
      return (await c.runtimeService.ContainerStatus!({ containerId: ct.id } as never, {} as never)).status!.finishedAt!;
    };
    expect(started.get('init-2')!).toBeGreaterThanOrEqual(await fin('init-1'));
    expect(started.get('app')!).toBeGreaterThanOrEqual(await fin('init-2'));
  });

  it('a container that exits 1 goes to CrashLoopBackOff with a growing back-off', async () => {
    const { store } = await setup();
    await store.create(pod('crash', {}, { [`${SIM}exit-after`]: '0.05', [`${SIM}exit-code`]: '1' }));
    const seen: string[] = [];
    const p = await until(
      'restartCount >= 3',
      async () => {
        const x = await getPod(store, 'crash');
        const s = x.status?.containerStatuses?.[0];
        if (s?.state?.waiting?.reason === 'CrashLoopBackOff') seen.push(s.state.waiting.message ?? '');
        return (s?.restartCount ?? 0) >= 3 && x;
      },
      15_000,
    );
    expect(p.status?.phase).toBe('Running');
    expect(p.status?.containerStatuses?.[0].lastState?.terminated).toMatchObject({ exitCode: 1, reason: 'Error' });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[0]).toMatch(/^back-off [\d.]+m?s restarting failed container=app pod=crash_default\(/);
    // The delays grow: 300ms, then 600ms, then 1.2s (capped at 1.2s by this test's settings).
    const delays = [...new Set(seen.map((m) => m.split(' ')[1]))];
    expect(delays.slice(0, 2)).toEqual(['300ms', '600ms']);
    const events = (await store.list('Event', { namespace: 'default' })).items.filter((e) => e.reason === 'BackOff');
    expect(events[0]?.count).toBeGreaterThanOrEqual(1);
  });

  it('restartPolicy Never: exit 0 is Succeeded, exit 1 is Failed, and nothing restarts', async () => {
    const { store } = await setup();
    await store.create(pod('ok', { restartPolicy: 'Never' }, { [`${SIM}exit-after`]: '0.05' }));
    await store.create(pod('bad', { restartPolicy: 'Never' }, { [`${SIM}exit-after`]: '0.05', [`${SIM}exit-code`]: '3' }));
    await until('Succeeded', async () => (await getPod(store, 'ok')).status?.phase === 'Succeeded');
    const bad = await until('Failed', async () => {
      const x = await getPod(store, 'bad');
      return x.status?.phase === 'Failed' && x;
    });
    expect(bad.status?.containerStatuses?.[0].state?.terminated?.exitCode).toBe(3);
    await new Promise((r) => setTimeout(r, 400));
    expect((await getPod(store, 'bad')).status?.containerStatuses?.[0].restartCount).toBe(0);
  });

  it('a failing readiness probe keeps the pod not Ready; a failing liveness probe restarts the container', async () => {
    const { store } = await setup();
    const probe = (cmd: string) => ({ exec: { command: [cmd] }, periodSeconds: 0.05, failureThreshold: 1 });
    await store.create(pod('unready', { containers: [{ name: 'app', image: 'nginx', readinessProbe: probe('false') }] }));
    await store.create(pod('ready', { containers: [{ name: 'app', image: 'nginx', readinessProbe: probe('true') }] }));
    await store.create(pod('dead', { containers: [{ name: 'app', image: 'nginx', livenessProbe: probe('false') }] }));
    await until('ready pod Ready', async () => (await getPod(store, 'ready')).status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True');
    const u = await until('unready pod Running', async () => {
      const x = await getPod(store, 'unready');
      return x.status?.phase === 'Running' && x;
    });
    expect(u.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'ContainersNotReady' });
    await until('liveness restart', async () => ((await getPod(store, 'dead')).status?.containerStatuses?.[0].restartCount ?? 0) >= 1);
    const unhealthy = (await store.list('Event', { namespace: 'default' })).items.filter((e) => e.reason === 'Unhealthy');
    expect(unhealthy.some((e) => e.message?.startsWith('Liveness probe failed'))).toBe(true);
  });

  it('an image that cannot be pulled leaves the container waiting with ErrImagePull or ImagePullBackOff', async () => {
    const { store } = await setup({}, { failImages: ['registry.example/missing:1'] });
    await store.create(pod('nopull', { containers: [{ name: 'app', image: 'registry.example/missing:1' }] }));
    const p = await until('pull failure', async () => {
      const x = await getPod(store, 'nopull');
      const r = x.status?.containerStatuses?.[0].state?.waiting?.reason;
      return (r === 'ErrImagePull' || r === 'ImagePullBackOff') && x;
    });
    expect(p.status?.phase).toBe('Pending');
  });

  it('a subPath that a symbolic link in the volume leads outside leaves the container waiting with CreateContainerConfigError', async () => {
    const { store, cri: c } = await setup();
    const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-kubelet-subpath-')));
    try {
      fs.mkdirSync(path.join(base, 'vol', 'ok'), { recursive: true });
      fs.mkdirSync(path.join(base, 'outside'));
      fs.symlinkSync(path.join(base, 'outside'), path.join(base, 'vol', 'link'));
      const withSubPath = (name: string, subPath: string) =>
        pod(name, {
          volumes: [{ name: 'data', hostPath: { path: path.join(base, 'vol') } }],
          containers: [{ name: 'app', image: 'registry.example/app:1', volumeMounts: [{ name: 'data', mountPath: '/data', subPath }] }],
        });
      await store.create(withSubPath('escapes', 'link/x'));
      await store.create(withSubPath('stays', 'ok'));
      const p = await until('config error', async () => {
        const x = await getPod(store, 'escapes');
        return x.status?.containerStatuses?.[0].state?.waiting?.reason === 'CreateContainerConfigError' && x;
      });
      expect(p.status?.containerStatuses?.[0].state?.waiting?.message).toContain('outside the allowed root');
      await until('the other pod runs', async () => (await getPod(store, 'stays')).status?.phase === 'Running');
      const list = await c.runtimeService.ListContainers!({} as never, {} as never);
      const pods = (list.containers ?? []).map((x) => x.labels?.['io.kubernetes.pod.name']);
      expect(pods).not.toContain('escapes');
      expect(pods).toContain('stays');
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  it('graceful deletion stops containers and sandbox, removes them, and deletes the pod', async () => {
    const { store, cri: c } = await setup();
    const created = await store.create(pod('bye'));
    await until('Running', async () => (await getPod(store, 'bye')).status?.phase === 'Running');
    await store.delete('Pod', 'default', 'bye');
    await until('pod gone', async () => {
      try {
        await getPod(store, 'bye');
        return false;
      } catch {
        return true;
      }
    });
    const left = await c.runtimeService.ListPodSandbox!({ filter: { labelSelector: { 'io.kubernetes.pod.uid': created.metadata.uid! } } } as never, {} as never);
    expect(left.items).toEqual([]);
  });

  it('a change to a running pod\'s status alone (its own write coming back, or anyone\'s) does not sync it; a label change does', async () => {
    const { store, kubelet } = await setup();
    await store.create(pod('quiet'));
    const running = await until('Ready', async () => {
      const x = await getPod(store, 'quiet');
      return x.status?.conditions?.find((k) => k.type === 'Ready')?.status === 'True' && x;
    });
    // Let the kubelet's own status write and the runtime's events settle, then count.
    await new Promise((r) => setTimeout(r, 300));
    const settled = kubelet.stats.syncs;
    const conditions = [...(running.status?.conditions ?? []), { type: 'example.com/other', status: 'True' as const, lastTransitionTime: new Date().toISOString() }];
    await store.updateStatus({ ...(await getPod(store, 'quiet')), status: { ...running.status, conditions } });
    await new Promise((r) => setTimeout(r, 300));
    expect(kubelet.stats.syncs).toBe(settled);
    const cur = await getPod(store, 'quiet');
    await store.update({ ...cur, metadata: { ...cur.metadata, labels: { tier: 'web' } } });
    await until('a sync for the label change', async () => kubelet.stats.syncs > settled);
  });

  it('after a kubelet restart it adopts running pods instead of recreating them', async () => {
    const env = await setup();
    await env.store.create(pod('survivor'));
    const before = await until('Running', async () => {
      const x = await getPod(env.store, 'survivor');
      return x.status?.phase === 'Running' && x;
    });
    await env.kubelet.stop();
    const again = new Kubelet(env.opts);
    await again.start();
    env.kubelet = again;
    await new Promise((r) => setTimeout(r, 400));
    const after = await getPod(env.store, 'survivor');
    expect(after.status?.phase).toBe('Running');
    expect(after.status?.podIP).toBe(before.status?.podIP);
    expect(after.status?.containerStatuses?.[0].containerID).toBe(before.status?.containerStatuses?.[0].containerID);
  });
});

describe('evented PLEG', () => {
  // Relisting only once a minute: what happens within the test comes from the runtime's event stream.
  const evented = (c: CriInstance): Partial<KubeletOptions> => ({
    relistPeriodMs: 60_000,
    containerEvents: () => c.runtimeService.GetContainerEvents!({}, undefined as never) as AsyncIterable<cri.ContainerEventResponse>,
  });

  it("a pod's own container creates and starts, coming back as runtime events, do not sync it again", async () => {
    const { store, kubelet } = await setup(evented);
    await store.create(pod('once'));
    await until('Ready', async () => (await getPod(store, 'once')).status?.conditions?.find((k) => k.type === 'Ready')?.status === 'True');
    await new Promise((r) => setTimeout(r, 300));
    expect(kubelet.stats.syncs).toBe(1);
  });

  it('a container that exits wakes its worker through its event, well before the next relist', async () => {
    const { store } = await setup(evented);
    await store.create(pod('short', { restartPolicy: 'Never' }, { [`${SIM}exit-after`]: '0.2' }));
    const done = await until('Succeeded', async () => {
      const x = await getPod(store, 'short');
      return x.status?.phase === 'Succeeded' && x;
    }, 5000);
    expect(done.status?.containerStatuses?.[0].state?.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
  });

  it('relists only as a slow safety net while events flow, as upstream evented PLEG does', async () => {
    // relistPeriodMs is the generic period: without the stream this kubelet would relist ten times a second.
    const { store, kubelet } = await setup((c) => ({ ...evented(c), relistPeriodMs: 100 }));
    await store.create(pod('quiet'));
    await until('Running', async () => (await getPod(store, 'quiet')).status?.phase === 'Running');
    await new Promise((r) => setTimeout(r, 700));
    expect(kubelet.stats.relists).toBe(0);
  });

  it('resyncs each pod on its own, syncFrequency to 1.5x syncFrequency after its last sync', async () => {
    const { store, kubelet } = await setup((c) => ({ ...evented(c), syncFrequencyMs: 1000 }));
    // Created well into the kubelet's first second: a node-wide resync tick would come within 0.6 s of its start.
    await new Promise((r) => setTimeout(r, 400));
    await store.create(pod('resynced'));
    await until('Running', async () => (await getPod(store, 'resynced')).status?.phase === 'Running');
    const at = kubelet.stats.syncs;
    await new Promise((r) => setTimeout(r, 900));
    expect(kubelet.stats.syncs).toBe(at);
    // ...and it does come, by 1.5 s after the sync (allowing for a loaded machine).
    await until('resync', async () => kubelet.stats.syncs > at, 3000);
  });

  it("a periodic resync of a running pod whose runtime did not change works from the cache: no CRI list, no status write", async () => {
    const calls: string[] = [];
    // The runtime the kubelet is given, recording which RPCs it is asked for.
    const recording = (c: CriInstance): Partial<KubeletOptions> => {
      const api = inProcessApi(cri.RuntimeServiceService, c.runtimeService) as unknown as Record<string, unknown>;
      const runtime = new Proxy(api, {
        get: (t, k) => {
          const v = t[k as string];
          return typeof v === 'function' ? (...args: unknown[]) => (calls.push(String(k)), (v as (...a: unknown[]) => unknown).apply(t, args)) : v;
        },
      });
      return { ...evented(c), syncFrequencyMs: 1000, runtime: runtime as unknown as KubeletOptions['runtime'] };
    };
    const { store, kubelet } = await setup(recording);
    await store.create(pod('steady'));
    await until('Ready', async () => (await getPod(store, 'steady')).status?.conditions?.find((k) => k.type === 'Ready')?.status === 'True');
    await new Promise((r) => setTimeout(r, 200));
    const rv = (await getPod(store, 'steady')).metadata.resourceVersion;
    const at = kubelet.stats.syncs;
    calls.length = 0;
    await until('resync', async () => kubelet.stats.syncs > at, 3000);
    await new Promise((r) => setTimeout(r, 100));
    expect(calls.filter((k) => k.startsWith('List'))).toEqual([]);
    expect((await getPod(store, 'steady')).metadata.resourceVersion).toBe(rv);
  });

  it('a container stopped behind the kubelet\'s back is seen through its event and restarted, long before the next relist', async () => {
    const { store, cri: c } = await setup((x) => ({ ...evented(x), syncFrequencyMs: 60_000 }));
    await store.create(pod('stopped'));
    const running = await until('Running', async () => {
      const x = await getPod(store, 'stopped');
      return x.status?.containerStatuses?.[0].state?.running && x;
    });
    const id = running.status!.containerStatuses![0].containerID!.replace(/^.*:\/\//, '');
    await c.runtimeService.StopContainer!({ containerId: id, timeout: 0 } as never, {} as never);
    const again = await until('restarted', async () => {
      const x = await getPod(store, 'stopped');
      const cs = x.status?.containerStatuses?.[0];
      return cs?.restartCount === 1 && cs.state?.running && x;
    }, 5000);
    expect(again.status?.containerStatuses?.[0].containerID).not.toContain(id);
    expect(again.status?.containerStatuses?.[0].lastState?.terminated).toBeTruthy();
  });

  it('falls back to relisting every relistPeriodMs after five stream attempts that bring no event', async () => {
    let attempts = 0;
    const { store, kubelet } = await setup({
      relistPeriodMs: 100,
      // A runtime whose event stream ends at once, every time.
      containerEvents: () => ({
        [Symbol.asyncIterator]: () => {
          attempts++;
          return { next: async () => ({ done: true as const, value: undefined }) };
        },
      }),
    });
    await until('fallback', async () => attempts >= 5 && kubelet.stats.relists >= 8, 10_000);
    const at = kubelet.stats.relists;
    await new Promise((r) => setTimeout(r, 1500));
    // No sixth attempt, and relisting every 100 ms from now on (allowing for a loaded machine).
    expect(attempts).toBe(5);
    expect(kubelet.stats.relists - at).toBeGreaterThanOrEqual(5);
    // Pods still start and are followed through the relist.
    await store.create(pod('after-fallback'));
    await until('Running', async () => (await getPod(store, 'after-fallback')).status?.phase === 'Running');
  }, 20_000);
});

describe('volumes through CSI', () => {
  const roots: string[] = [];
  afterEach(() => {
    for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
  });

  async function withDriver(attachRequired: boolean) {
    // The driver creates target paths for real: kubelet's root is a temporary directory, not the host's.
    const rootDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-kubelet-root-'));
    roots.push(rootDir);
    const driver = await createCsiDriver({ backend: 'sim', nodeId: 'node-a', pathRoots: [rootDir] });
    const node = inProcessApi(csi.NodeService, driver.node as never);
    const env = await setup({ csi: new StaticPluginRegistry(new Map([['kemu.csi.k8s.io', node]])), rootDir });
    const { store } = env;
    await store.create({ apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: 'kemu.csi.k8s.io' }, spec: { attachRequired } });
    const vol = await driver.controller.CreateVolume({
      name: 'pvc-1',
      capacityRange: { requiredBytes: 1 << 30 },
      volumeCapabilities: [{ mount: {}, accessMode: { mode: csi.VolumeCapability_AccessMode_Mode.SINGLE_NODE_WRITER } }],
    });
    const handle = vol.volume!.volumeId!;
    await store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pv-1' },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        csi: { driver: 'kemu.csi.k8s.io', volumeHandle: handle, fsType: 'ext4' },
        claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'data' },
      },
    });
    const pvc = await store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: 'pv-1' },
    });
    await store.updateStatus({ ...pvc, status: { phase: 'Bound' } });
    return { ...env, driver, handle, rootDir };
  }

  const withClaim = (name: string) =>
    pod(name, {
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
      containers: [{ name: 'app', image: 'nginx', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
    });

  it('stages and publishes the volume, then unpublishes and unstages it when the pod goes', async () => {
    const { store, driver, handle, rootDir } = await withDriver(false);
    await store.create(withClaim('db'));
    const p = await until('Running with volume', async () => {
      const x = await getPod(store, 'db');
      return x.status?.phase === 'Running' && x;
    });
    const stats = await driver.node.NodeGetVolumeStats({
      volumeId: handle,
      volumePath: `${rootDir}/pods/${p.metadata.uid}/volumes/kubernetes.io~csi/pv-1/mount`,
    });
    expect(stats.usage?.length).toBeGreaterThan(0);
    const node = await until('volumesInUse', async () => {
      const n = await store.get('Node', '', 'node-a');
      return (n.status?.volumesInUse?.length ?? 0) > 0 && n;
    });
    expect(node.status?.volumesInUse).toEqual([`kubernetes.io/csi/kemu.csi.k8s.io^${handle}`]);
    const csiNode = await store.get('CSINode', '', 'node-a');
    expect(csiNode.spec.drivers).toEqual([
      expect.objectContaining({ name: 'kemu.csi.k8s.io', nodeID: 'node-a', topologyKeys: [expect.any(String)] }),
    ]);
    const topologyKey = csiNode.spec.drivers[0].topologyKeys![0];
    expect((await store.get('Node', '', 'node-a')).metadata.labels?.[topologyKey]).toBe('node-a');
    await store.delete('Pod', 'default', 'db');
    await until('pod gone', async () => !(await store.list('Pod', { namespace: 'default' })).items.length);
    await expect(driver.node.NodeGetVolumeStats({ volumeId: handle, volumePath: `${rootDir}/pods/${p.metadata.uid}/volumes/kubernetes.io~csi/pv-1/mount` })).rejects.toMatchObject({ code: 5 });
  });

  it('waits for the VolumeAttachment when the driver requires attach', async () => {
    const { store, handle } = await withDriver(true);
    await store.create(withClaim('db'));
    await until('FailedAttachVolume event', async () =>
      (await store.list('Event', { namespace: 'default' })).items.some((e) => e.reason === 'FailedAttachVolume'),
    );
    expect((await getPod(store, 'db')).status?.phase ?? 'Pending').toBe('Pending');
    const name = attachmentName(handle, 'kemu.csi.k8s.io', 'node-a');
    const va = await store.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name },
      spec: { attacher: 'kemu.csi.k8s.io', nodeName: 'node-a', source: { persistentVolumeName: 'pv-1' } },
    });
    await store.updateStatus({ ...va, status: { attached: true, attachmentMetadata: { device: '/dev/sim0' } } });
    await until('Running once attached', async () => (await getPod(store, 'db')).status?.phase === 'Running');
  });

  it('reports an unbound claim as a mount failure and keeps the pod Pending', async () => {
    const { store } = await setup();
    await store.create(pod('lonely', { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'nope' } }] }));
    const ev = await until('FailedMount event', async () =>
      (await store.list('Event', { namespace: 'default' })).items.find((e) => e.reason === 'FailedMount'),
    );
    expect(ev.message).toContain('persistentvolumeclaim "nope" not found');
    expect(ev.type).toBe('Warning');
  });
});
