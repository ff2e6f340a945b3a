// postStart and preStop hooks through the kubelet and the sim runtime.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestKubelet, type TestKubelet, testPod, until } from './testing.js';

const running: TestKubelet[] = [];
const servers: http.Server[] = [];
afterEach(async () => {
  for (const k of running.splice(0)) await k.stop();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

async function start() {
  const k = await startTestKubelet();
  running.push(k);
  return k;
}

/** A local HTTP server that records each request and, at that moment, the state of the pod's containers. */
async function hookServer(k: TestKubelet) {
  const hits: { path: string; header?: string; containerStates: number[] }[] = [];
  const server = http.createServer(async (req, res) => {
    const list = await k.cri.runtimeService.ListContainers!({}, undefined as never);
    hits.push({ path: req.url ?? '', header: req.headers['x-hook'] as string | undefined, containerStates: (list.containers ?? []).map((c) => c.state ?? -1) });
    res.writeHead(500); // a status code does not fail a hook; only a transport error does
    res.end();
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { hits, port: (server.address() as AddressInfo).port };
}

const events = async (k: TestKubelet, reason: string) =>
  (await k.store.list('Event', { namespace: 'default' })).items.filter((e) => e.reason === reason);

describe('lifecycle hooks', () => {
  it('runs an httpGet postStart hook once the container started, and the pod runs', async () => {
    const k = await start();
    const { hits, port } = await hookServer(k);
    await k.store.create(
      testPod('poststart', {
        containers: [{ name: 'app', image: 'busybox', lifecycle: { postStart: { httpGet: { host: '127.0.0.1', port, path: '/started', httpHeaders: [{ name: 'X-Hook', value: 'yes' }] } } } }],
      }),
    );
    await until('running', async () => (await k.store.get('Pod', 'default', 'poststart')).status?.phase === 'Running');
    expect(hits).toEqual([{ path: '/started', header: 'yes', containerStates: [1] }]);
  });

  it('kills a container whose postStart hook fails, with FailedPostStartHook and no hook output in the event', async () => {
    const k = await start();
    await k.store.create(
      testPod('badhook', { restartPolicy: 'Never', containers: [{ name: 'app', image: 'busybox', lifecycle: { postStart: { exec: { command: ['sh', '-c', 'exit 3'] } } } }] }),
    );
    const ev = await until('FailedPostStartHook', async () => (await events(k, 'FailedPostStartHook'))[0]);
    expect(ev.message).toBe('PostStartHook failed');
    expect(ev.type).toBe('Warning');
    await until('container terminated', async () => {
      const p = await k.store.get('Pod', 'default', 'badhook');
      return p.status?.containerStatuses?.[0]?.state?.terminated;
    });
  });

  it('runs preStop before stopping the container and takes its time off the grace period', async () => {
    const k = await start();
    const { hits, port } = await hookServer(k);
    const timeouts: number[] = [];
    const stop = k.opts.runtime.StopContainer.bind(k.opts.runtime);
    k.opts.runtime.StopContainer = (req) => {
      timeouts.push(Number(req.timeout));
      return stop(req);
    };
    await k.store.create(
      testPod('prestop', {
        terminationGracePeriodSeconds: 5,
        containers: [
          { name: 'web', image: 'busybox', lifecycle: { preStop: { httpGet: { host: '127.0.0.1', port, path: '/stopping' } } } },
          { name: 'worker', image: 'busybox', lifecycle: { preStop: { sleep: { seconds: 1 } } } },
        ],
      }),
    );
    await until('running', async () => (await k.store.get('Pod', 'default', 'prestop')).status?.phase === 'Running');
    await k.store.delete('Pod', 'default', 'prestop');
    await until('pod gone', async () => !(await k.store.list('Pod', { namespace: 'default' })).items.length, 15_000);
    // The hook saw both containers still running: SIGTERM came after it.
    expect(hits).toEqual([{ path: '/stopping', containerStates: [1, 1] }]);
    // The sleep hook used one of the five seconds; the http hook none.
    expect(timeouts.sort()).toEqual([4, 5]);
    expect((await events(k, 'Killing')).map((e) => e.message).sort()).toEqual(['Stopping container web', 'Stopping container worker']);
  });

  it('reports a preStop hook that fails and stops the container anyway', async () => {
    const k = await start();
    await k.store.create(
      testPod('prestopfail', {
        terminationGracePeriodSeconds: 3,
        containers: [{ name: 'app', image: 'busybox', lifecycle: { preStop: { exec: { command: ['false'] } } } }],
      }),
    );
    await until('running', async () => (await k.store.get('Pod', 'default', 'prestopfail')).status?.phase === 'Running');
    await k.store.delete('Pod', 'default', 'prestopfail');
    const ev = await until('FailedPreStopHook', async () => (await events(k, 'FailedPreStopHook'))[0]);
    expect(ev.message).toMatch(/^Exec lifecycle hook \(\[false\]\) for Container "app" in Pod "prestopfail_default\(.+\)" failed - error: command 'false' exited with 1: , message: ""$/);
    await until('pod gone', async () => !(await k.store.list('Pod', { namespace: 'default' })).items.length, 15_000);
  });
});

describe('pod lifetime', () => {
  it('fails a pod past its activeDeadlineSeconds with DeadlineExceeded and stops its containers', async () => {
    const k = await start();
    await k.store.create(testPod('deadline', { activeDeadlineSeconds: 1, terminationGracePeriodSeconds: 0 }));
    const p = await until(
      'DeadlineExceeded',
      async () => {
        const got = await k.store.get('Pod', 'default', 'deadline');
        return got.status?.phase === 'Failed' && got;
      },
      10_000,
    );
    expect(p.status).toMatchObject({ reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline' });
    expect((await events(k, 'DeadlineExceeded')).length).toBeGreaterThanOrEqual(1);
    const list = await k.cri.runtimeService.ListContainers!({ filter: { labelSelector: { 'io.kubernetes.pod.name': 'deadline' } } }, undefined as never);
    expect(list.containers?.every((c) => c.state === 2)).toBe(true);
  });

  it('puts the tail of the log into the message of a failed FallbackToLogsOnError container', async () => {
    const k = await start();
    await k.store.create(
      testPod('fallback', {
        restartPolicy: 'Never',
        containers: [
          { name: 'app', image: 'busybox', command: ['sh', '-c', 'echo starting; echo "config missing" ; exit 2'], terminationMessagePolicy: 'FallbackToLogsOnError' },
          { name: 'plain', image: 'busybox', command: ['sh', '-c', 'echo not me; exit 2'] },
        ],
      }),
    );
    const p = await until('failed', async () => {
      const got = await k.store.get('Pod', 'default', 'fallback');
      return got.status?.phase === 'Failed' && got;
    });
    const byName = Object.fromEntries((p.status?.containerStatuses ?? []).map((s) => [s.name, s.state?.terminated]));
    expect(byName.app).toMatchObject({ exitCode: 2, message: 'starting\nconfig missing\n' });
    expect(byName.plain?.message).toBeUndefined();
  });
});

describe('sidecar shutdown', () => {
  it('stops the main containers first, then the sidecars in reverse order', async () => {
    const k = await start();
    const order: string[] = [];
    const names = new Map<string, string>();
    const stop = k.opts.runtime.StopContainer.bind(k.opts.runtime);
    k.opts.runtime.StopContainer = async (req) => {
      const r = await stop(req);
      order.push(names.get(req.containerId ?? '') ?? '?');
      return r;
    };
    await k.store.create(
      testPod('sidecars', {
        terminationGracePeriodSeconds: 5,
        initContainers: [
          { name: 'proxy', image: 'busybox', restartPolicy: 'Always' },
          { name: 'logger', image: 'busybox', restartPolicy: 'Always' },
        ],
        containers: [{ name: 'app', image: 'busybox' }],
      }),
    );
    await until('running', async () => (await k.store.get('Pod', 'default', 'sidecars')).status?.phase === 'Running');
    const list = await k.cri.runtimeService.ListContainers!({}, undefined as never);
    for (const c of list.containers ?? []) names.set(c.id ?? '', c.metadata?.name ?? '');
    await k.store.delete('Pod', 'default', 'sidecars');
    await until('pod gone', async () => !(await k.store.list('Pod', { namespace: 'default' })).items.length, 15_000);
    expect(order.slice(0, 3)).toEqual(['app', 'logger', 'proxy']);
  });
});
