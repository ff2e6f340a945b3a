// RuntimeService over the socket with the sim backend: lifecycles, filters, idempotence, errors,
// scripted behaviours, stats, events, recovery.
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { collectStream, cri } from '@kemu/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCriLog } from './log-writer.js';
import { containerConfig, grpcError, podConfig, startTestShim, type TestShim, waitFor } from './test-util.js';

let shim: TestShim;

beforeAll(async () => {
  shim = await startTestShim({ runtimeHandlers: ['runc'] });
  await shim.icall('PullImage', { image: { image: 'busybox:1.36' } });
});

afterAll(async () => {
  await shim?.close();
});

async function runPod(over: Partial<cri.PodSandboxConfig> = {}) {
  const config = podConfig(shim.dir, over);
  const { podSandboxId } = await shim.call('RunPodSandbox', { config });
  return { id: podSandboxId!, config };
}

async function runContainer(pod: { id: string; config: cri.PodSandboxConfig }, over: Partial<cri.ContainerConfig> = {}, start = true) {
  const { containerId } = await shim.call('CreateContainer', {
    podSandboxId: pod.id,
    config: containerConfig(over),
    sandboxConfig: pod.config,
  });
  if (start) await shim.call('StartContainer', { containerId });
  return containerId!;
}

const status = async (id: string) => (await shim.call('ContainerStatus', { containerId: id })).status!;

describe('runtime info', () => {
  it('reports version, readiness, cgroup driver and a 0660 socket', async () => {
    const v = await shim.call('Version', { version: 'v1' });
    expect(v).toMatchObject({ runtimeName: 'kemu', runtimeApiVersion: 'v1', version: '0.1.0' });
    const s = await shim.call('Status', { verbose: true });
    expect(s.status!.conditions).toEqual([
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: true, reason: '', message: '' },
    ]);
    expect(s.runtimeHandlers!.map((h) => h.name)).toEqual(['', 'runc']);
    expect(JSON.parse(s.info!.config).backend.backend).toBe('sim');
    const rc = await shim.call('RuntimeConfig', {});
    expect(rc.linux!.cgroupDriver).toBe(cri.CgroupDriver.CGROUPFS);
    expect(fs.statSync(shim.socket).mode & 0o777).toBe(0o660);
  });

  it('answers UNIMPLEMENTED for RPCs it does not implement', async () => {
    const err = await grpcError(shim.call('CheckpointContainer', { containerId: 'a'.repeat(64) }));
    expect(err.code).toBe(grpc.status.UNIMPLEMENTED);
    const err2 = await grpcError(shim.call('UpdatePodSandboxResources', { podSandboxId: 'a'.repeat(64) }));
    expect(err2.code).toBe(grpc.status.UNIMPLEMENTED);
  });
});

describe('pod sandboxes', () => {
  it('runs, lists with filters, stops and removes a sandbox', async () => {
    const pod = await runPod({ labels: { app: 'web', tier: 'front' } });
    expect(pod.id).toMatch(/^[0-9a-f]{64}$/);
    const st = await shim.call('PodSandboxStatus', { podSandboxId: pod.id.slice(0, 12), verbose: true });
    expect(st.status).toMatchObject({ id: pod.id, state: cri.PodSandboxState.SANDBOX_READY, metadata: pod.config.metadata });
    expect(st.status!.network!.ip).toMatch(/^10\.88\.\d+\.\d+$/);
    expect(st.status!.createdAt).toBeGreaterThan(Date.now() * 1e6 - 60e9);
    expect(JSON.parse(st.info!.info).netNamespacePath).toContain(pod.id.slice(0, 12));

    const byLabel = await shim.call('ListPodSandbox', { filter: { labelSelector: { app: 'web' } } });
    expect(byLabel.items!.map((i) => i.id)).toEqual([pod.id]);
    const byPrefix = await shim.call('ListPodSandbox', { filter: { id: pod.id.slice(0, 8) } });
    expect(byPrefix.items!.map((i) => i.id)).toEqual([pod.id]);
    const wrongLabel = await shim.call('ListPodSandbox', { filter: { labelSelector: { app: 'web', tier: 'back' } } });
    expect(wrongLabel.items).toEqual([]);

    await shim.call('StopPodSandbox', { podSandboxId: pod.id });
    const stopped = await shim.call('PodSandboxStatus', { podSandboxId: pod.id });
    expect(stopped.status!.state).toBe(cri.PodSandboxState.SANDBOX_NOTREADY);
    expect(stopped.status!.network!.ip).toBe('');
    const notReady = await shim.call('ListPodSandbox', {
      filter: { state: { state: cri.PodSandboxState.SANDBOX_NOTREADY }, labelSelector: { app: 'web' } },
    });
    expect(notReady.items!.map((i) => i.id)).toEqual([pod.id]);
    const ready = await shim.call('ListPodSandbox', {
      filter: { state: { state: cri.PodSandboxState.SANDBOX_READY }, labelSelector: { app: 'web' } },
    });
    expect(ready.items).toEqual([]);

    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
    const err = await grpcError(shim.call('PodSandboxStatus', { podSandboxId: pod.id }));
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect(err.details).toContain(pod.id);
  });

  it('refuses a second sandbox with the same metadata until the first is removed', async () => {
    const pod = await runPod();
    const err = await grpcError(shim.call('RunPodSandbox', { config: pod.config }));
    expect(err.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(err.details).toContain(pod.id);
    // A new attempt number is a new name, as kubelet uses it.
    const again = await shim.call('RunPodSandbox', {
      config: { ...pod.config, metadata: { ...pod.config.metadata, attempt: 1 } },
    });
    expect(again.podSandboxId).not.toBe(pod.id);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
    const third = await shim.call('RunPodSandbox', { config: pod.config });
    expect(third.podSandboxId).toMatch(/^[0-9a-f]{64}$/);
    await shim.call('RemovePodSandbox', { podSandboxId: third.podSandboxId });
    await shim.call('RemovePodSandbox', { podSandboxId: again.podSandboxId });
  });

  it('is idempotent for stop and remove, including missing objects', async () => {
    const pod = await runPod();
    await shim.call('StopPodSandbox', { podSandboxId: pod.id });
    await shim.call('StopPodSandbox', { podSandboxId: pod.id });
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
    const missing = 'f'.repeat(64);
    await expect(shim.call('StopPodSandbox', { podSandboxId: missing })).resolves.toEqual({});
    await expect(shim.call('RemovePodSandbox', { podSandboxId: missing })).resolves.toEqual({});
    await expect(shim.call('StopContainer', { containerId: missing, timeout: 0 })).resolves.toEqual({});
    await expect(shim.call('RemoveContainer', { containerId: missing })).resolves.toEqual({});
  });

  it('removes a ready sandbox with running containers in one call', async () => {
    const pod = await runPod();
    const cid = await runContainer(pod);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
    expect((await grpcError(shim.call('ContainerStatus', { containerId: cid }))).code).toBe(grpc.status.NOT_FOUND);
    const list = await shim.call('ListContainers', { filter: { podSandboxId: pod.id } });
    expect(list.containers).toEqual([]);
  });

  it('hands out pod IPs from the CIDR set with UpdateRuntimeConfig and releases them on stop', async () => {
    await shim.call('UpdateRuntimeConfig', { runtimeConfig: { networkConfig: { podCidr: '10.244.7.0/24' } } });
    const a = await runPod();
    const b = await runPod();
    const ipA = (await shim.call('PodSandboxStatus', { podSandboxId: a.id })).status!.network!.ip!;
    const ipB = (await shim.call('PodSandboxStatus', { podSandboxId: b.id })).status!.network!.ip!;
    expect(ipA).toMatch(/^10\.244\.7\.\d+$/);
    expect(ipB).toMatch(/^10\.244\.7\.\d+$/);
    expect(ipA).not.toBe(ipB);
    const bad = await grpcError(shim.call('UpdateRuntimeConfig', { runtimeConfig: { networkConfig: { podCidr: 'not-a-cidr' } } }));
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
    await shim.call('RemovePodSandbox', { podSandboxId: a.id });
    await shim.call('RemovePodSandbox', { podSandboxId: b.id });
  });
});

describe('bad input', () => {
  async function noSandboxNamed(name: string) {
    const all = await shim.call('ListPodSandbox', {});
    expect(all.items!.filter((s) => s.metadata!.name === name)).toEqual([]);
  }

  it('rejects missing metadata, bad ids, unknown handlers and foreign log dirs, leaving nothing behind', async () => {
    const before = (await shim.call('ListPodSandbox', {})).items!.length;
    let err = await grpcError(shim.call('RunPodSandbox', { config: { hostname: 'x' } }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/metadata/);
    err = await grpcError(shim.call('RunPodSandbox', {}));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    err = await grpcError(shim.call('RunPodSandbox', { config: { metadata: { name: 'x', namespace: 'default' } } }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/uid/);

    const handlerPod = podConfig(shim.dir);
    err = await grpcError(shim.call('RunPodSandbox', { config: handlerPod, runtimeHandler: 'kata' }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toContain('no runtime for "kata" is configured');
    await noSandboxNamed(handlerPod.metadata!.name!);

    const logPod = podConfig(shim.dir, { logDirectory: '/etc/kemu-evil' });
    err = await grpcError(shim.call('RunPodSandbox', { config: logPod }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toContain('outside the allowed log roots');
    await noSandboxNamed(logPod.metadata!.name!);
    err = await grpcError(shim.call('RunPodSandbox', { config: podConfig(shim.dir, { logDirectory: `${shim.dir}/../../etc` }) }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);

    // The names of the failed attempts were not left reserved.
    const ok = await shim.call('RunPodSandbox', { config: handlerPod });
    await shim.call('RemovePodSandbox', { podSandboxId: ok.podSandboxId });

    for (const bad of ['../../etc/passwd', 'ABC', 'x'.repeat(65), '']) {
      err = await grpcError(shim.call('PodSandboxStatus', { podSandboxId: bad }));
      expect(err.code, bad).toBe(grpc.status.INVALID_ARGUMENT);
      err = await grpcError(shim.call('ContainerStatus', { containerId: bad }));
      expect(err.code, bad).toBe(grpc.status.INVALID_ARGUMENT);
    }
    err = await grpcError(shim.call('StopPodSandbox', { podSandboxId: '../x' }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    err = await grpcError(shim.call('ContainerStatus', { containerId: 'abc123' }));
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect(err.details).toContain('abc123');

    expect((await shim.call('ListPodSandbox', {})).items!.length).toBe(before);
    expect((await shim.call('Version', {})).runtimeName).toBe('kemu');
  });

  it('rejects bad container configs precisely, leaving no container behind', async () => {
    const pod = await runPod();
    const create = (config: cri.ContainerConfig) => shim.call('CreateContainer', { podSandboxId: pod.id, config, sandboxConfig: pod.config });
    let err = await grpcError(create({ image: { image: 'busybox:1.36' } }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    err = await grpcError(create(containerConfig({ logPath: '../../escape.log' })));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toContain('inside the sandbox log directory');
    err = await grpcError(create(containerConfig({ logPath: '/var/log/abs.log' })));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    err = await grpcError(create(containerConfig({ image: { image: 'docker.io/library/never-pulled:1' } })));
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect(err.details).toContain('never-pulled');
    err = await grpcError(create(containerConfig({ image: { image: 'UPPER/Case' } })));
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    err = await grpcError(create(containerConfig({ envs: [{ key: 'A=B', value: 'x' }] })));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    err = await grpcError(create(containerConfig({ mounts: [{ containerPath: 'rel', hostPath: '/tmp' }] })));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    err = await grpcError(shim.call('CreateContainer', { podSandboxId: 'e'.repeat(64), config: containerConfig() }));
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect((await shim.call('ListContainers', { filter: { podSandboxId: pod.id } })).containers).toEqual([]);
    // The name of a failed create is free again.
    const ok = await runContainer(pod, {}, false);
    expect(ok).toMatch(/^[0-9a-f]{64}$/);
    err = await grpcError(create(containerConfig()));
    expect(err.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(err.details).toContain(ok);
    await shim.call('StopPodSandbox', { podSandboxId: pod.id });
    err = await grpcError(create(containerConfig({ metadata: { name: 'late' } })));
    expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });
});

describe('containers', () => {
  it('creates, starts, lists, inspects, stops and removes a container', async () => {
    const pod = await runPod();
    const cid = await runContainer(pod, { command: ['sh', '-c', 'echo hello world; sleep infinity'], labels: { role: 'echo' } }, false);
    let st = await status(cid);
    expect(st).toMatchObject({ id: cid, state: cri.ContainerState.CONTAINER_CREATED, metadata: { name: 'c', attempt: 0 } });
    expect(st.imageRef).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(st.logPath).toBe(path.join(pod.config.logDirectory!, 'c/0.log'));
    await shim.call('StartContainer', { containerId: cid });
    st = await status(cid);
    expect(st.state).toBe(cri.ContainerState.CONTAINER_RUNNING);
    expect(st.startedAt).toBeGreaterThanOrEqual(st.createdAt!);
    const again = await grpcError(shim.call('StartContainer', { containerId: cid }));
    expect(again.code).toBe(grpc.status.FAILED_PRECONDITION);

    const records = parseCriLog(fs.readFileSync(st.logPath!, 'utf8'));
    expect(records).toEqual([{ timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/), stream: 'stdout', partial: false, text: 'hello world' }]);

    const list = await shim.call('ListContainers', { filter: { labelSelector: { role: 'echo' } } });
    expect(list.containers!.map((c) => c.id)).toEqual([cid]);
    expect(list.containers![0]).toMatchObject({ podSandboxId: pod.id, state: cri.ContainerState.CONTAINER_RUNNING });
    const byState = await shim.call('ListContainers', {
      filter: { podSandboxId: pod.id.slice(0, 10), state: { state: cri.ContainerState.CONTAINER_EXITED } },
    });
    expect(byState.containers).toEqual([]);
    const byPrefix = await shim.call('ListContainers', { filter: { id: cid.slice(0, 6) } });
    expect(byPrefix.containers!.map((c) => c.id)).toEqual([cid]);

    const podStatus = await shim.call('PodSandboxStatus', { podSandboxId: pod.id });
    expect(podStatus.containersStatuses!.map((c) => [c.id, c.state])).toEqual([[cid, cri.ContainerState.CONTAINER_RUNNING]]);
    const verbose = await shim.call('ContainerStatus', { containerId: cid, verbose: true });
    expect(JSON.parse(verbose.info!.info)).toMatchObject({ sandboxID: pod.id, backend: 'sim' });

    await shim.call('StopContainer', { containerId: cid, timeout: 10 });
    st = await status(cid);
    expect(st).toMatchObject({ state: cri.ContainerState.CONTAINER_EXITED, exitCode: 143, reason: 'Error' });
    expect(st.finishedAt).toBeGreaterThanOrEqual(st.startedAt!);
    await shim.call('StopContainer', { containerId: cid, timeout: 10 });
    await shim.call('RemoveContainer', { containerId: cid });
    await shim.call('RemoveContainer', { containerId: cid });
    expect((await grpcError(status(cid))).code).toBe(grpc.status.NOT_FOUND);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('follows scripted behaviours: exit after a delay, fail to start, OOM, ignore SIGTERM', async () => {
    const pod = await runPod();
    const exits = await runContainer(pod, {
      metadata: { name: 'exits' },
      annotations: { 'kemu.io/sim-exit-after': '0.1', 'kemu.io/sim-exit-code': '3' },
    });
    const done = await waitFor(async () => {
      const s = await status(exits);
      return s.state === cri.ContainerState.CONTAINER_EXITED ? s : undefined;
    });
    expect(done).toMatchObject({ exitCode: 3, reason: 'Error' });

    const { containerId: failing } = await shim.call('CreateContainer', {
      podSandboxId: pod.id,
      config: containerConfig({ metadata: { name: 'fails' }, annotations: { 'kemu.io/sim-behavior': 'fail-start', 'kemu.io/sim-start-error': 'no such binary' } }),
    });
    const err = await grpcError(shim.call('StartContainer', { containerId: failing }));
    expect(err.details).toContain('no such binary');
    expect(await status(failing!)).toMatchObject({ state: cri.ContainerState.CONTAINER_EXITED, exitCode: 128, reason: 'StartError' });

    const oom = await runContainer(pod, {
      metadata: { name: 'oom' },
      annotations: { 'kemu.io/sim-memory-mib': '64' },
      linux: { resources: { memoryLimitInBytes: 32 * 1024 * 1024 } },
    });
    const oomed = await waitFor(async () => {
      const s = await status(oom);
      return s.state === cri.ContainerState.CONTAINER_EXITED ? s : undefined;
    });
    expect(oomed).toMatchObject({ exitCode: 137, reason: 'OOMKilled' });

    // Pod-level annotations script a container by name, the way kubelet passes pod annotations.
    const pod2 = await runPod({ annotations: { 'kemu.io/sim-exit-after.job': '0', 'kemu.io/sim-exit-code.job': '0' } });
    const job = await runContainer(pod2, { metadata: { name: 'job' } });
    const completed = await waitFor(async () => {
      const s = await status(job);
      return s.state === cri.ContainerState.CONTAINER_EXITED ? s : undefined;
    });
    expect(completed).toMatchObject({ exitCode: 0, reason: 'Completed' });

    const stubborn = await runContainer(pod, { metadata: { name: 'stubborn' }, annotations: { 'kemu.io/sim-ignore-sigterm': 'true' } });
    const t0 = Date.now();
    await shim.call('StopContainer', { containerId: stubborn, timeout: 1 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    expect(await status(stubborn)).toMatchObject({ exitCode: 137 });
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
    await shim.call('RemovePodSandbox', { podSandboxId: pod2.id });
  });

  it('runs ExecSync against the container and refuses exited containers', async () => {
    const pod = await runPod({ hostname: 'exec-host', dnsConfig: { servers: ['10.96.0.10'], searches: ['default.svc.cluster.local'], options: ['ndots:5'] } });
    const cid = await runContainer(pod, { envs: [{ key: 'GREETING', value: 'hi' }] });
    const r = await shim.call('ExecSync', { containerId: cid, cmd: ['echo', 'hello'], timeout: 5 });
    expect(Buffer.from(r.stdout!).toString()).toBe('hello\n');
    expect(r.exitCode).toBe(0);
    expect(Buffer.from((await shim.call('ExecSync', { containerId: cid, cmd: ['hostname'] })).stdout!).toString()).toBe('exec-host\n');
    const resolv = Buffer.from((await shim.call('ExecSync', { containerId: cid, cmd: ['cat', '/etc/resolv.conf'] })).stdout!).toString();
    expect(resolv).toBe('search default.svc.cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n');
    expect(Buffer.from((await shim.call('ExecSync', { containerId: cid, cmd: ['env'] })).stdout!).toString()).toContain('GREETING=hi');
    const fail = await shim.call('ExecSync', { containerId: cid, cmd: ['sh', '-c', 'exit 7'] });
    expect(fail.exitCode).toBe(7);
    const missing = await shim.call('ExecSync', { containerId: cid, cmd: ['nonexistent-binary'] });
    expect(missing.exitCode).toBe(127);
    const timeout = await grpcError(shim.call('ExecSync', { containerId: cid, cmd: ['sleep', '5'], timeout: 1 }));
    expect(timeout.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    const empty = await grpcError(shim.call('ExecSync', { containerId: cid, cmd: [] }));
    expect(empty.code).toBe(grpc.status.INVALID_ARGUMENT);
    await shim.call('StopContainer', { containerId: cid, timeout: 0 });
    const exited = await grpcError(shim.call('ExecSync', { containerId: cid, cmd: ['echo'] }));
    expect(exited.code).toBe(grpc.status.FAILED_PRECONDITION);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('updates resources, reopens logs and rejects both for exited containers', async () => {
    const pod = await runPod();
    const cid = await runContainer(pod, { command: ['sh', '-c', 'echo first; sleep infinity'] });
    await shim.call('UpdateContainerResources', { containerId: cid, linux: { cpuQuota: 50000, cpuPeriod: 100000, memoryLimitInBytes: 1 << 28 } });
    const st = await status(cid);
    expect(st.resources!.linux).toMatchObject({ cpuQuota: 50000, cpuPeriod: 100000, memoryLimitInBytes: 1 << 28 });
    const neg = await grpcError(shim.call('UpdateContainerResources', { containerId: cid, linux: { memoryLimitInBytes: -5 } }));
    expect(neg.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await status(cid)).resources!.linux!.memoryLimitInBytes).toBe(1 << 28);

    fs.renameSync(st.logPath!, `${st.logPath}.1`);
    await shim.call('ReopenContainerLog', { containerId: cid });
    expect(fs.existsSync(st.logPath!)).toBe(true);
    expect(fs.readFileSync(`${st.logPath}.1`, 'utf8')).toContain('stdout F first');

    await shim.call('StopContainer', { containerId: cid, timeout: 0 });
    expect((await grpcError(shim.call('ReopenContainerLog', { containerId: cid }))).code).toBe(grpc.status.FAILED_PRECONDITION);
    expect((await grpcError(shim.call('UpdateContainerResources', { containerId: cid, linux: {} }))).code).toBe(grpc.status.FAILED_PRECONDITION);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });
});

describe('stats, metrics and streams', () => {
  it('reports container and sandbox stats from the scripted usage', async () => {
    const pod = await runPod({ labels: { app: 'stats' } });
    const cid = await runContainer(pod, { annotations: { 'kemu.io/sim-memory-mib': '10', 'kemu.io/sim-cpu-millicores': '500' } });
    await new Promise((r) => setTimeout(r, 50));
    const s = (await shim.call('ContainerStats', { containerId: cid })).stats!;
    expect(s.attributes!.id).toBe(cid);
    expect(s.memory!.workingSetBytes!.value).toBe(10 * 1024 * 1024);
    expect(s.cpu!.usageCoreNanoSeconds!.value).toBeGreaterThan(0);
    const list = await shim.call('ListContainerStats', { filter: { podSandboxId: pod.id } });
    expect(list.stats!.map((x) => x.attributes!.id)).toEqual([cid]);
    const ps = (await shim.call('PodSandboxStats', { podSandboxId: pod.id })).stats!;
    expect(ps.attributes!.id).toBe(pod.id);
    expect(ps.linux!.memory!.workingSetBytes!.value).toBe(10 * 1024 * 1024);
    expect(ps.linux!.containers!.map((c) => c.attributes!.id)).toEqual([cid]);
    expect(ps.linux!.process!.processCount!.value).toBe(1);
    const lps = await shim.call('ListPodSandboxStats', { filter: { labelSelector: { app: 'stats' } } });
    expect(lps.stats!.map((x) => x.attributes!.id)).toEqual([pod.id]);

    const d = await shim.call('ListMetricDescriptors', {});
    expect(d.descriptors!.map((x) => x.name)).toContain('container_memory_working_set_bytes');
    const m = await shim.call('ListPodSandboxMetrics', {});
    const mine = m.podMetrics!.find((p) => p.podSandboxId === pod.id)!;
    const ws = mine.containerMetrics![0].metrics!.find((x) => x.name === 'container_memory_working_set_bytes')!;
    expect(ws.value!.value).toBe(10 * 1024 * 1024);
    expect(ws.labelValues).toEqual(['c', pod.config.metadata!.name, 'default']);

    const streamedPods = await collectStream(shim.rt.StreamPodSandboxes({ filter: { id: pod.id } }));
    expect(streamedPods.flatMap((r) => r.podSandboxes!.map((p) => p.id))).toEqual([pod.id]);
    const streamedCtrs = await collectStream(shim.rt.StreamContainers({ filter: { podSandboxId: pod.id } }));
    expect(streamedCtrs.flatMap((r) => r.containers!.map((c) => c.id))).toEqual([cid]);
    const streamedStats = await collectStream(shim.rt.StreamContainerStats({ filter: { id: cid } }));
    expect(streamedStats.flatMap((r) => r.containerStats!.map((c) => c.attributes!.id))).toEqual([cid]);
    const streamedPodStats = await collectStream(shim.rt.StreamPodSandboxStats({ filter: { id: pod.id } }));
    expect(streamedPodStats.flatMap((r) => r.podSandboxStats!.map((c) => c.attributes!.id))).toEqual([pod.id]);
    const streamedMetrics = await collectStream(shim.rt.StreamPodSandboxMetrics({}));
    expect(streamedMetrics.flatMap((r) => r.podSandboxMetrics!.map((p) => p.podSandboxId))).toContain(pod.id);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('reports stats for created and exited containers too, without CPU or memory figures, as containerd lists them', async () => {
    const pod = await runPod();
    const created = await runContainer(pod, { metadata: { name: 'created' } }, false);
    const exited = await runContainer(pod, { metadata: { name: 'exited' }, annotations: { 'kemu.io/sim-memory-mib': '10' } });
    await shim.call('StopContainer', { containerId: exited, timeout: 0 });
    expect((await status(exited)).state).toBe(cri.ContainerState.CONTAINER_EXITED);
    for (const id of [created, exited]) {
      const s = (await shim.call('ContainerStats', { containerId: id })).stats!;
      expect(s.attributes!.id).toBe(id);
      expect(s.cpu ?? null).toBeNull();
      expect(s.memory ?? null).toBeNull();
      expect(s.writableLayer!.fsId!.mountpoint).toBeTruthy();
    }
    const list = await shim.call('ListContainerStats', { filter: { podSandboxId: pod.id } });
    expect(list.stats!.map((x) => x.attributes!.id).sort()).toEqual([created, exited].sort());
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });

  it('streams container events in order', async () => {
    const stream = shim.rt.GetContainerEvents({});
    const events: cri.ContainerEventResponse[] = [];
    stream.on('data', (e: cri.ContainerEventResponse) => events.push(e));
    stream.on('error', () => {});
    await new Promise((r) => setTimeout(r, 50));
    const pod = await runPod();
    const cid = await runContainer(pod);
    await shim.call('StopContainer', { containerId: cid, timeout: 0 });
    await shim.call('RemoveContainer', { containerId: cid });
    await waitFor(() => events.filter((e) => e.containerId === cid).length >= 4 || undefined);
    const mine = events.filter((e) => e.containerId === cid);
    expect(mine.map((e) => e.containerEventType)).toEqual([
      cri.ContainerEventType.CONTAINER_CREATED_EVENT,
      cri.ContainerEventType.CONTAINER_STARTED_EVENT,
      cri.ContainerEventType.CONTAINER_STOPPED_EVENT,
      cri.ContainerEventType.CONTAINER_DELETED_EVENT,
    ]);
    expect(mine[1].podSandboxStatus!.id).toBe(pod.id);
    expect(mine[1].containersStatuses!.map((c) => c.id)).toContain(cid);
    stream.cancel();
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
  });
});

describe('recovery after a restart', () => {
  it('recovers sandboxes, containers, exit codes, log paths and reserved names from the state dir', async () => {
    const pod = await runPod();
    const stopped = await runContainer(pod, { metadata: { name: 'done' }, annotations: { 'kemu.io/sim-exit-after': '0', 'kemu.io/sim-exit-code': '42' } });
    await waitFor(async () => ((await status(stopped)).state === cri.ContainerState.CONTAINER_EXITED ? true : undefined));
    const running = await runContainer(pod, { metadata: { name: 'runs' } });
    const later = await runContainer(pod, { metadata: { name: 'later' }, annotations: { 'kemu.io/sim-exit-after': '1', 'kemu.io/sim-exit-code': '5' } });
    const created = await runContainer(pod, { metadata: { name: 'created' } }, false);
    const before = await shim.call('PodSandboxStatus', { podSandboxId: pod.id });
    const beforeDone = await status(stopped);

    await shim.restart();

    const after = await shim.call('PodSandboxStatus', { podSandboxId: pod.id });
    expect(after.status).toEqual(before.status);
    expect(await status(stopped)).toEqual(beforeDone);
    expect((await status(running)).state).toBe(cri.ContainerState.CONTAINER_RUNNING);
    expect((await status(created)).state).toBe(cri.ContainerState.CONTAINER_CREATED);
    expect((await status(running)).logPath).toBe(path.join(pod.config.logDirectory!, 'c/0.log'));
    // The script of a running container continues where it was.
    const exited = await waitFor(async () => {
      const s = await status(later);
      return s.state === cri.ContainerState.CONTAINER_EXITED ? s : undefined;
    });
    expect(exited.exitCode).toBe(5);
    const dup = await grpcError(shim.call('RunPodSandbox', { config: pod.config }));
    expect(dup.code).toBe(grpc.status.ALREADY_EXISTS);
    // The recovered IP stays allocated: a new pod gets another one.
    const other = await runPod();
    const ip2 = (await shim.call('PodSandboxStatus', { podSandboxId: other.id })).status!.network!.ip;
    expect(ip2).not.toBe(after.status!.network!.ip);
    await shim.call('RemovePodSandbox', { podSandboxId: pod.id });
    await shim.call('RemovePodSandbox', { podSandboxId: other.id });
    await shim.restart();
    expect((await shim.call('ListPodSandbox', {})).items!.map((s) => s.id)).not.toContain(pod.id);
    expect(fs.readdirSync(path.join(shim.stateDir, 'sandboxes')).filter((f) => f.startsWith(pod.id))).toEqual([]);
    expect(fs.readdirSync(path.join(shim.stateDir, 'containers'))).toEqual([]);
  });
});
