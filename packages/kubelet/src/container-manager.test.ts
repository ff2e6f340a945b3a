import { createCri } from '@kemu/cri';
import { cri, inProcessApi } from '@kemu/proto';
import { afterEach, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { detectCgroupVersion, RealCgroupManager, SimCgroupManager } from './cgroup-manager.js';
import { cgroupFiles, podResourceConfig } from './cm-qos.js';
import { decodeKubeletConfiguration } from './kubelet-config.js';
import { startTestKubelet, type TestKubelet, testPod, until } from './testing.js';

const running: TestKubelet[] = [];
const others: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const k of running.splice(0)) await k.stop();
  for (const o of others.splice(0)) await o.close();
});

describe('the kubelet makes pod cgroups', () => {
  it('creates the pod cgroup before the pod runs and removes it when the pod is gone', async () => {
    const { config } = decodeKubeletConfiguration('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\npodPidsLimit: 300\n');
    const cgroups = new SimCgroupManager('v1');
    const k = await startTestKubelet({ config, cgroups });
    running.push(k);
    const created = await k.store.create(
      testPod('web', { containers: [{ name: 'app', image: 'busybox', resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '500m', memory: '64Mi' } } }] }),
    );
    const uid = created.metadata.uid!;
    await until('pod running', async () => (await k.store.get('Pod', 'default', 'web')).status?.phase === 'Running');
    const info = k.kubelet.podCgroup(uid)!;
    expect(info.qosClass).toBe('Burstable');
    expect(info.cgroupParent).toBe(`kubepods-burstable-pod${uid.replace(/-/g, '_')}.slice`);
    expect(info.cgroup.files).toEqual({ 'cpu.shares': '256', 'cpu.cfs_period_us': '100000', 'cpu.cfs_quota_us': '50000', 'memory.limit_in_bytes': String(64 * 2 ** 20), 'pids.max': '300' });
    expect(cgroups.get('/kubepods.slice/kubepods-burstable.slice')?.files['cpu.shares']).toBe('256');
    await k.store.delete('Pod', 'default', 'web');
    await until('pod cgroup removed', () => k.kubelet.podCgroup(uid) === undefined);
    expect(cgroups.get(info.cgroup.path)).toBeUndefined();
    expect(cgroups.get('/kubepods.slice/kubepods-burstable.slice')?.files['cpu.shares']).toBe('2');
  });

  it('passes the pod cgroup as the sandbox cgroup_parent and the container resources through CRI', async () => {
    const { config } = decodeKubeletConfiguration('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuCFSQuotaPeriod: 50ms\n');
    const instance = await createCri({ backend: 'sim', syntheticImages: true, streaming: false, podCidr: '10.244.1.0/24' });
    others.push(instance);
    const api = inProcessApi(cri.RuntimeServiceService, instance.runtimeService);
    const sandboxes: cri.RunPodSandboxRequest[] = [];
    const containers: cri.CreateContainerRequest[] = [];
    const runtime = new Proxy(api, {
      get(target, prop, recv) {
        if (prop === 'RunPodSandbox') return (req: cri.RunPodSandboxRequest) => (sandboxes.push(req), target.RunPodSandbox(req));
        if (prop === 'CreateContainer') return (req: cri.CreateContainerRequest) => (containers.push(req), target.CreateContainer(req));
        return Reflect.get(target, prop, recv);
      },
    });
    const k = await startTestKubelet({ config, runtime, images: inProcessApi(cri.ImageServiceService, instance.imageService), capacity: { memory: '8Gi' } });
    running.push(k);
    const created = await k.store.create(
      testPod('g', { containers: [{ name: 'app', image: 'busybox', resources: { requests: { cpu: '500m', memory: '128Mi' }, limits: { cpu: '500m', memory: '128Mi' } } }] }),
    );
    await until('pod running', async () => (await k.store.get('Pod', 'default', 'g')).status?.phase === 'Running');
    expect(sandboxes[0].config?.linux?.cgroupParent).toBe(`/kubepods/pod${created.metadata.uid}`);
    expect(containers[0].config?.linux?.resources).toMatchObject({
      cpuShares: 512,
      cpuPeriod: 50_000,
      cpuQuota: 25_000,
      memoryLimitInBytes: 128 * 2 ** 20,
      oomScoreAdj: -997,
    });
    expect(k.kubelet.podCgroup(created.metadata.uid!)?.cgroup.files).toMatchObject({ 'cpu.weight': '20', 'cpu.max': '25000 50000', 'memory.max': String(128 * 2 ** 20) });
  });
});

// As root: the kubelet makes the pod's cgroup for real (in a scratch subtree of /sys/fs/cgroup, removed after).
const realOk = process.getuid?.() === 0 && detectCgroupVersion() !== undefined;
describe.runIf(realOk)('the kubelet makes pod cgroups on the host', () => {
  it('writes the QoS class formulas to the pod cgroup under /sys/fs/cgroup and removes it with the pod', async () => {
    const root = `/kemu-test-kubelet-${process.pid}`;
    const { config } = decodeKubeletConfiguration(`apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupRoot: ${root}\npodPidsLimit: 128\n`);
    const cgroups = new RealCgroupManager();
    try {
      const k = await startTestKubelet({ config, cgroups });
      running.push(k);
      const created = await k.store.create(
        testPod('g', { containers: [{ name: 'app', image: 'busybox', resources: { requests: { cpu: '500m', memory: '128Mi' }, limits: { cpu: '500m', memory: '128Mi' } } }] }),
      );
      await until('pod running', async () => (await k.store.get('Pod', 'default', 'g')).status?.phase === 'Running');
      const dir = `${root}/kubepods/pod${created.metadata.uid}`;
      for (const f of cgroupFiles(podResourceConfig(created, { podPidsLimit: 128 }), cgroups.version)) {
        expect(cgroups.read(dir, f.controller, f.file), f.file).toBe(f.value);
      }
      expect(cgroups.read(dir, 'cpu', cgroups.version === 'v1' ? 'cpu.shares' : 'cpu.weight')).toBe(cgroups.version === 'v1' ? '512' : '20');
      await k.store.delete('Pod', 'default', 'g');
      await until('pod cgroup removed', () => !fs.existsSync(cgroups.dirs(dir)[0].dir));
    } finally {
      cgroups.destroy(root);
    }
    expect(fs.existsSync(cgroups.dirs(root)[0].dir)).toBe(false);
  });
});
