import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createCri, type CriInstance } from '@kemu/cri';
import { createMemoryStore, type Node, type Store } from '@kemu/core';
import { cri, deviceplugin, grpc, inProcessApi, openChannel } from '@kemu/proto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DevicePluginServer, simDevices } from '@kemu/device-plugin';
import { CHECKPOINT_FILE, DeviceManager } from './device-manager.js';
import { Kubelet } from './kubelet.js';
import { testPod, until } from './testing.js';

// The plugin runs as its own process, from source, talking to the kubelet over the real sockets.
const pluginCli = path.join(path.dirname(createRequire(import.meta.url).resolve('@kemu/device-plugin/package.json')), 'src', 'cli.ts');

interface Plugin {
  proc: ChildProcess;
  stderr: string[];
}

let root: string;
let store: Store;
let instance: CriInstance;
let kubelets: Kubelet[] = [];
const plugins: Plugin[] = [];
let created: cri.CreateContainerRequest[] = [];

beforeEach(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-devices-'));
  store = await createMemoryStore();
  instance = await createCri({ backend: 'sim', syntheticImages: true, streaming: false, podCidr: '10.244.1.0/24' });
  created = [];
});

afterEach(async () => {
  for (const p of plugins.splice(0)) {
    if (p.proc.exitCode === null && p.proc.signalCode === null) {
      p.proc.kill('SIGTERM');
      await new Promise((r) => p.proc.once('exit', r));
    }
  }
  for (const k of kubelets.splice(0)) await k.stop();
  await instance.close();
  await store.close();
  fs.rmSync(root, { recursive: true, force: true });
});

async function startKubelet(): Promise<Kubelet> {
  const api = inProcessApi(cri.RuntimeServiceService, instance.runtimeService);
  const runtime = new Proxy(api, {
    get(target, prop, recv) {
      if (prop === 'CreateContainer') return (req: cri.CreateContainerRequest) => (created.push(req), target.CreateContainer(req));
      return Reflect.get(target, prop, recv);
    },
  });
  const k = new Kubelet({
    store,
    nodeName: 'node-a',
    runtime,
    images: inProcessApi(cri.ImageServiceService, instance.imageService),
    relistPeriodMs: 100,
    leaseRenewMs: 100,
    statusUpdateMs: 100,
    podLogsDir: path.join(root, 'logs'),
    devicePluginDir: path.join(root, 'device-plugins'),
  });
  await k.start();
  kubelets.push(k);
  return k;
}

function startPlugin(...args: string[]): Plugin {
  const proc = spawn(
    process.execPath,
    ['--conditions=@kemu/source', '--import', 'tsx', pluginCli, '--plugin-dir', path.join(root, 'device-plugins'), '--seed', 'node-a', '--watch-ms', '100', ...args],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const p: Plugin = { proc, stderr: [] };
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => p.stderr.push(d));
  plugins.push(p);
  return p;
}

async function gpus(): Promise<{ capacity?: string; allocatable?: string }> {
  const n = (await store.get('Node', '', 'node-a')) as Node;
  return { capacity: n.status?.capacity?.['nvidia.com/gpu'], allocatable: n.status?.allocatable?.['nvidia.com/gpu'] };
}

const gpuPod = (name: string, count: number) =>
  testPod(name, { containers: [{ name: 'cuda', image: 'busybox', resources: { limits: { 'nvidia.com/gpu': String(count) } } }] });

function visibleDevices(podName: string): string[] {
  const req = created.find((c) => c.sandboxConfig?.metadata?.name === podName);
  return req?.config?.envs?.find((e) => e.key === 'NVIDIA_VISIBLE_DEVICES')?.value?.split(',') ?? [];
}

describe('device plugins (a plugin process over the kubelet socket)', () => {
  it('advertises 8 GPUs, gives pods distinct devices, drops an unhealthy one from allocatable, and keeps allocations across a restart', async () => {
    const healthFile = path.join(root, 'health');
    fs.writeFileSync(healthFile, '');
    let kubelet = await startKubelet();
    startPlugin('--resource', 'nvidia.com/gpu', '--count', '8', '--model', 'H100', '--health-file', healthFile);
    await until('8 GPUs in capacity and allocatable', async () => {
      const g = await gpus();
      return g.capacity === '8' && g.allocatable === '8';
    }, 15_000);
    expect(fs.statSync(path.join(root, 'device-plugins', 'kubelet.sock')).mode & 0o777).toBe(0o660);

    const a = await store.create(gpuPod('train-a', 2));
    const b = await store.create(gpuPod('train-b', 2));
    for (const n of ['train-a', 'train-b']) await until(`${n} running`, async () => (await store.get('Pod', 'default', n)).status?.phase === 'Running');
    const devA = visibleDevices('train-a');
    const devB = visibleDevices('train-b');
    expect(devA).toHaveLength(2);
    expect(new Set(devA).size).toBe(2);
    expect(devB).toHaveLength(2);
    expect(devA.filter((id) => devB.includes(id))).toEqual([]);
    for (const id of [...devA, ...devB]) expect(id).toMatch(/^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(kubelet.devices!.podDevices(a.metadata.uid!)).toEqual([{ containerName: 'cuda', resourceName: 'nvidia.com/gpu', deviceIDs: devA }]);

    // A device the plugin reports Unhealthy leaves allocatable; capacity still counts it.
    const sick = devA[0];
    fs.writeFileSync(healthFile, `${sick} Unhealthy\n`);
    await until('7 allocatable', async () => (await gpus()).allocatable === '7', 10_000);
    expect((await gpus()).capacity).toBe('8');

    // A restarted kubelet keeps the allocations (checkpoint); the plugin registers again on the new socket.
    const checkpoint = JSON.parse(fs.readFileSync(path.join(root, 'device-plugins', CHECKPOINT_FILE), 'utf8'));
    expect(checkpoint.Data.podDeviceEntries.map((e: { deviceIDs: string[] }) => e.deviceIDs).flat().sort()).toEqual([...devA, ...devB].sort());
    await kubelet.stop();
    kubelets = kubelets.filter((k) => k !== kubelet);
    kubelet = await startKubelet();
    expect(kubelet.devices!.podDevices(a.metadata.uid!)[0].deviceIDs).toEqual(devA);
    expect(kubelet.devices!.podDevices(b.metadata.uid!)[0].deviceIDs).toEqual(devB);
    await until('plugin registered again', async () => (await gpus()).allocatable === '7', 15_000);

    // A new pod gets none of the devices held across the restart.
    await store.create(gpuPod('train-c', 3));
    await until('train-c running', async () => (await store.get('Pod', 'default', 'train-c')).status?.phase === 'Running');
    const devC = visibleDevices('train-c');
    expect(devC).toHaveLength(3);
    expect(devC.filter((id) => [...devA, ...devB].includes(id))).toEqual([]);

    // Deleting a pod frees its devices.
    await store.delete('Pod', 'default', 'train-a');
    await until('train-a released', () => kubelet.devices!.podDevices(a.metadata.uid!).length === 0);
  }, 60_000);

  it('refuses malformed registrations with precise errors', async () => {
    await startKubelet();
    const sock = path.join(root, 'device-plugins', 'kubelet.sock');
    fs.writeFileSync(path.join(root, 'device-plugins', 'not-a-socket'), '');
    const ch = openChannel(`unix://${sock}`);
    const reg = ch.service(deviceplugin.RegistrationService);
    const refuse = async (req: deviceplugin.RegisterRequest) => {
      try {
        await reg.Register(req, { timeoutMs: 5000 });
      } catch (err) {
        return err as grpc.ServiceError;
      }
      throw new Error('registration was accepted');
    };
    try {
      const v = await refuse({ version: 'v1alpha', endpoint: 'x.sock', resourceName: 'nvidia.com/gpu' });
      expect(v.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(v.details).toBe('requested API version "v1alpha" is not supported by kubelet. Supported versions are ["v1beta1"]');
      const r = await refuse({ version: 'v1beta1', endpoint: 'x.sock', resourceName: 'gpu' });
      expect(r.details).toBe('the ResourceName "gpu" is invalid');
      expect((await refuse({ version: 'v1beta1', endpoint: 'x.sock', resourceName: 'kubernetes.io/gpu' })).details).toBe('the ResourceName "kubernetes.io/gpu" is invalid');
      const e = await refuse({ version: 'v1beta1', endpoint: '../x.sock', resourceName: 'nvidia.com/gpu' });
      expect(e.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(e.details).toContain('must be the name of a socket in');
      const f = await refuse({ version: 'v1beta1', endpoint: 'not-a-socket', resourceName: 'nvidia.com/gpu' });
      expect(f.code).toBe(grpc.status.FAILED_PRECONDITION);
    } finally {
      ch.close();
    }
    // Nothing was registered.
    expect((await gpus()).capacity).toBeUndefined();
  });

  it('fails a pod whose plugin disappears mid-Allocate, keeps no devices for it, and admits pods again once a plugin is back', async () => {
    const kubelet = await startKubelet();
    const p = startPlugin('--resource', 'nvidia.com/gpu', '--count', '4', '--allocate-delay-ms', '20000');
    await until('4 GPUs', async () => (await gpus()).allocatable === '4', 15_000);
    const pod = await store.create(gpuPod('doomed', 1));
    await until('Allocate reached the plugin', () => p.stderr.join('').includes('Allocate '), 10_000);
    p.proc.kill('SIGKILL');
    const failed = await until('pod failed', async () => {
      const x = await store.get('Pod', 'default', 'doomed');
      return x.status?.phase === 'Failed' ? x : undefined;
    }, 10_000);
    expect(failed.status?.reason).toBe('UnexpectedAdmissionError');
    expect(failed.status?.message).toMatch(/^Allocate failed due to rpc error: code = (UNAVAILABLE|CANCELLED|INTERNAL) desc = .+, which is unexpected$/);
    expect(kubelet.devices!.podDevices(pod.metadata.uid!)).toEqual([]);
    expect(created.filter((c) => c.sandboxConfig?.metadata?.name === 'doomed')).toEqual([]);
    await until('nothing allocatable once the plugin is gone', async () => (await gpus()).allocatable === '0');

    // A plugin that comes back registers again; a new pod is admitted.
    startPlugin('--resource', 'nvidia.com/gpu', '--count', '4');
    await until('4 GPUs again', async () => (await gpus()).allocatable === '4', 15_000);
    await store.create(gpuPod('next', 1));
    await until('next running', async () => (await store.get('Pod', 'default', 'next')).status?.phase === 'Running');
    expect(visibleDevices('next')).toHaveLength(1);
  }, 60_000);

  it('rejects a pod asking for more devices than are free, with the upstream admission message', async () => {
    await startKubelet();
    startPlugin('--resource', 'nvidia.com/gpu', '--count', '2');
    await until('2 GPUs', async () => (await gpus()).allocatable === '2', 15_000);
    // Bound to the node directly, past any scheduler: the kubelet's admission has the last word.
    await store.create(gpuPod('greedy', 3));
    const failed = await until('pod failed', async () => {
      const x = await store.get('Pod', 'default', 'greedy');
      return x.status?.phase === 'Failed' ? x : undefined;
    });
    expect(failed.status?.reason).toBe('UnexpectedAdmissionError');
    expect(failed.status?.message).toBe('Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 3, Available: 2, which is unexpected');
  }, 30_000);

  it('calls PreStartContainer with the container\'s devices when the plugin asks for it', async () => {
    const kubelet = await startKubelet();
    const plugin = new DevicePluginServer({
      resourceName: 'example.com/fpga',
      pluginDir: path.join(root, 'device-plugins'),
      devices: simDevices({ count: 2, model: 'fpga', seed: 'node-a' }),
      preStartRequired: true,
    });
    await plugin.start();
    try {
      await until('2 FPGAs', async () => ((await store.get('Node', '', 'node-a')) as Node).status?.allocatable?.['example.com/fpga'] === '2', 10_000);
      const pod = await store.create(testPod('fpga', { containers: [{ name: 'app', image: 'busybox', resources: { limits: { 'example.com/fpga': '1' } } }] }));
      await until('fpga running', async () => (await store.get('Pod', 'default', 'fpga')).status?.phase === 'Running');
      const ids = kubelet.devices!.podDevices(pod.metadata.uid!)[0].deviceIDs;
      expect(plugin.preStarts).toEqual([ids]);
      const env = created.find((c) => c.sandboxConfig?.metadata?.name === 'fpga')?.config?.envs?.find((e) => e.key === 'KEMU_VISIBLE_FPGA');
      expect(env?.value).toBe(ids.join(','));
    } finally {
      await plugin.stop();
    }
  });

  it('keeps a vanished plugin\'s devices in capacity (none allocatable) for the grace period, then drops the resource', async () => {
    const dir = path.join(root, 'dm');
    const dm = new DeviceManager({ dir, stopGracePeriodMs: 300 });
    await dm.start();
    const plugin = new DevicePluginServer({ resourceName: 'example.com/fpga', pluginDir: dir, devices: simDevices({ count: 2, model: 'fpga', seed: 'n' }) });
    try {
      await plugin.start();
      await until('registered', () => dm.resources().allocatable['example.com/fpga'] === '2');
      await plugin.stop();
      await until('none allocatable', () => dm.resources().allocatable['example.com/fpga'] === '0');
      expect(dm.resources().capacity['example.com/fpga']).toBe('2');
      await until('resource gone', () => !('example.com/fpga' in dm.resources().capacity));
    } finally {
      await plugin.stop();
      await dm.stop();
    }
  });
});
