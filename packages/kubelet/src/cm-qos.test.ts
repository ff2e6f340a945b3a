import fs from 'node:fs';
import type { Container, Pod } from '@kemu/core';
import { afterAll, describe, expect, it } from 'vitest';
import { RealCgroupManager, SimCgroupManager, detectCgroupVersion } from './cgroup-manager.js';
import {
  cgroupFiles,
  cgroupParentForCRI,
  cgroupPath,
  containerLinuxResources,
  containerOOMScoreAdjust,
  milliCPUToQuota,
  milliCPUToShares,
  podCgroupName,
  podResourceConfig,
  sharesToWeight,
} from './cm-qos.js';
import { ContainerManager } from './container-manager.js';
import { decodeKubeletConfiguration } from './kubelet-config.js';

const UID = '6a5c1f7e-0b1d-4c7e-9f00-1234567890ab';

function pod(containers: Partial<Container>[], init: Partial<Container>[] = [], uid = UID): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default', uid },
    spec: {
      containers: containers.map((c, i) => ({ name: `c${i}`, image: 'busybox', ...c })),
      initContainers: init.map((c, i) => ({ name: `i${i}`, image: 'busybox', ...c })),
    },
  } as Pod;
}

const guaranteed = pod([{ resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } } }]);
const burstable = pod([{ resources: { requests: { cpu: '100m', memory: '100Mi' }, limits: { cpu: '200m' } } }]);
const besteffort = pod([{}]);

describe('upstream formulas', () => {
  it.each([
    [0, 2],
    [1, 2], // floor(1.024) is below the minimum
    [100, 102],
    [1000, 1024],
    [256_000, 262144], // capped at MaxShares
    [300_000, 262144],
  ])('MilliCPUToShares(%i) = %i', (m, s) => expect(milliCPUToShares(m)).toBe(s));

  it.each([
    [0, 100_000, 0],
    [1, 100_000, 1000], // below MinQuotaPeriod
    [200, 100_000, 20_000],
    [1500, 100_000, 150_000],
    [500, 50_000, 25_000],
  ])('MilliCPUToQuota(%i, %i) = %i', (m, p, q) => expect(milliCPUToQuota(m, p)).toBe(q));

  it.each([
    [2, 1],
    [102, 4],
    [1024, 39],
    [262144, 10000],
  ])('cpu.weight from cpu.shares %i = %i', (s, w) => expect(sharesToWeight(s)).toBe(w));
});

describe('pod cgroup settings by QoS class (table)', () => {
  const GiB = 2 ** 30;
  it.each([
    ['Guaranteed', guaranteed, { cpuShares: 1024, cpuQuota: 100_000, cpuPeriod: 100_000, memoryLimit: GiB, pidsLimit: 512 },
      { 'cpu.shares': '1024', 'cpu.cfs_period_us': '100000', 'cpu.cfs_quota_us': '100000', 'memory.limit_in_bytes': String(GiB), 'pids.max': '512' },
      { 'cpu.weight': '39', 'cpu.max': '100000 100000', 'memory.max': String(GiB), 'pids.max': '512' }],
    ['Burstable', burstable, { cpuShares: 102, cpuQuota: 20_000, cpuPeriod: 100_000, pidsLimit: 512 },
      { 'cpu.shares': '102', 'cpu.cfs_period_us': '100000', 'cpu.cfs_quota_us': '20000', 'pids.max': '512' },
      { 'cpu.weight': '4', 'cpu.max': '20000 100000', 'pids.max': '512' }],
    ['BestEffort', besteffort, { cpuShares: 2, pidsLimit: 512 },
      { 'cpu.shares': '2', 'pids.max': '512' },
      { 'cpu.weight': '1', 'pids.max': '512' }],
  ])('%s', (_qos, p, config, v1, v2) => {
    const c = podResourceConfig(p, { podPidsLimit: 512 });
    expect(c).toEqual(config);
    expect(Object.fromEntries(cgroupFiles(c, 'v1').map((f) => [f.file, f.value]))).toEqual(v1);
    expect(Object.fromEntries(cgroupFiles(c, 'v2').map((f) => [f.file, f.value]))).toEqual(v2);
  });

  it('a Burstable pod gets a memory limit only when every container declares one', () => {
    const p = pod([{ resources: { limits: { memory: '64Mi' } } }, { resources: { requests: { cpu: '50m' } } }]);
    expect(podResourceConfig(p).memoryLimit).toBeUndefined();
    const q = pod([{ resources: { requests: { cpu: '50m' }, limits: { memory: '64Mi' } } }, { resources: { limits: { memory: '32Mi' } } }]);
    expect(podResourceConfig(q).memoryLimit).toBe(96 * 2 ** 20);
  });

  it('sums app containers and takes the larger of that and each init container', () => {
    const p = pod(
      [{ resources: { requests: { cpu: '100m' } } }, { resources: { requests: { cpu: '100m' } } }],
      [{ resources: { requests: { cpu: '500m' } } }],
    );
    expect(podResourceConfig(p).cpuShares).toBe(milliCPUToShares(500));
  });

  it('cpuCFSQuota false leaves quota unlimited', () => {
    expect(podResourceConfig(guaranteed, { enforceCPULimits: false }).cpuQuota).toBe(-1);
    expect(Object.fromEntries(cgroupFiles(podResourceConfig(guaranteed, { enforceCPULimits: false }), 'v2').map((f) => [f.file, f.value]))['cpu.max']).toBe('max 100000');
  });

  it('container resources and oom_score_adj as kuberuntime sends them', () => {
    const cap = 8 * 2 ** 30;
    expect(containerLinuxResources(guaranteed, guaranteed.spec.containers[0], { memoryCapacity: cap })).toMatchObject({
      cpuShares: 1024,
      cpuQuota: 100_000,
      cpuPeriod: 100_000,
      memoryLimitInBytes: 2 ** 30,
      oomScoreAdj: -997,
    });
    expect(containerOOMScoreAdjust(besteffort, besteffort.spec.containers[0], cap)).toBe(1000);
    // 1000 - 1000 * 100Mi / 8Gi = 1000 - 12.2 -> 988
    expect(containerOOMScoreAdjust(burstable, burstable.spec.containers[0], cap)).toBe(988);
    expect(containerLinuxResources(burstable, burstable.spec.containers[0], { cpuPeriodUs: 50_000 })).toMatchObject({ cpuShares: 102, cpuQuota: 10_000, cpuPeriod: 50_000 });
  });
});

describe('cgroup naming', () => {
  it.each([
    ['cgroupfs', guaranteed, `/kubepods/pod${UID}`, `/kubepods/pod${UID}`],
    ['cgroupfs', burstable, `/kubepods/burstable/pod${UID}`, `/kubepods/burstable/pod${UID}`],
    ['systemd', besteffort, `/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${UID.replace(/-/g, '_')}.slice`, `kubepods-besteffort-pod${UID.replace(/-/g, '_')}.slice`],
    ['systemd', guaranteed, `/kubepods.slice/kubepods-pod${UID.replace(/-/g, '_')}.slice`, `kubepods-pod${UID.replace(/-/g, '_')}.slice`],
  ] as const)('%s names %s', (driver, p, fsPath, parent) => {
    expect(cgroupPath(podCgroupName(p), driver)).toBe(fsPath);
    expect(cgroupParentForCRI(podCgroupName(p), driver)).toBe(parent);
  });
});

describe('ContainerManager (sim)', () => {
  it('records kubepods from allocatable, the QoS cgroups and each pod cgroup', () => {
    const { config } = decodeKubeletConfiguration(
      'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nkubeReserved: {cpu: "1", memory: 1Gi}\npodPidsLimit: 100\n',
    );
    const sim = new SimCgroupManager('v1');
    const cm = new ContainerManager(sim, config, { cpu: '4', memory: '8Gi' });
    cm.start();
    expect(cm.nodeCgroups().kubepods?.files).toEqual({ 'cpu.shares': String(3 * 1024), 'memory.limit_in_bytes': String(7 * 2 ** 30) });
    const info = cm.ensurePod(burstable);
    expect(info.cgroupParent).toBe(`/kubepods/burstable/pod${UID}`);
    expect(info.cgroup.files['pids.max']).toBe('100');
    expect(cm.nodeCgroups().burstable?.files['cpu.shares']).toBe('102');
    expect(cm.nodeCgroups().besteffort?.files['cpu.shares']).toBe('2');
    cm.removePod(UID);
    expect(cm.pod(UID)).toBeUndefined();
    expect(sim.get(`/kubepods/burstable/pod${UID}`)).toBeUndefined();
    expect(cm.nodeCgroups().burstable?.files['cpu.shares']).toBe('2');
  });
});

describe('ContainerManager.ensurePod on a resync', () => {
  it('leaves the cgroup of a pod whose spec did not change alone, and rewrites it for a new generation', () => {
    const { config } = decodeKubeletConfiguration('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n');
    const writes: string[] = [];
    const sim = new SimCgroupManager('v1');
    const recording = Object.assign(Object.create(sim), {
      ensure: (p: string, c: Parameters<SimCgroupManager['ensure']>[1]) => (writes.push(p), sim.ensure(p, c)),
    }) as SimCgroupManager;
    const cm = new ContainerManager(recording, config, { cpu: '4', memory: '8Gi' });
    const v1 = { ...burstable, metadata: { ...burstable.metadata, generation: 1 } };
    cm.ensurePod(v1);
    const made = writes.length;
    cm.ensurePod({ ...v1, status: { phase: 'Running' } });
    expect(writes.length).toBe(made);
    // A resized pod: a new generation, new limits on its cgroup.
    const resized = structuredClone(v1);
    resized.metadata.generation = 2;
    resized.spec.containers[0].resources = { requests: { cpu: '200m' }, limits: { cpu: '400m' } };
    const info = cm.ensurePod(resized);
    expect(writes.length).toBe(made + 1);
    expect(info.cgroup.files['cpu.shares']).toBe('204');
  });
});

// As root on a host with cgroups: the files under /sys/fs/cgroup, in a scratch subtree removed afterwards.
const version = detectCgroupVersion();
const canWrite = process.getuid?.() === 0 && version !== undefined && (() => {
  try {
    fs.accessSync(version === 'v1' ? '/sys/fs/cgroup/cpu' : '/sys/fs/cgroup', fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
})();

describe.runIf(canWrite)(`real cgroups (${version})`, () => {
  const root = `/kemu-test-${process.pid}`;
  const real = canWrite ? new RealCgroupManager() : undefined!;
  afterAll(() => real.destroy(root));

  it.each(['cgroupfs', 'systemd'] as const)('creates the QoS hierarchy and pod cgroups with the %s driver', (driver) => {
    const { config } = decodeKubeletConfiguration(
      `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: ${driver}\ncgroupRoot: ${root}/${driver}\npodPidsLimit: 64\n`,
    );
    const cm = new ContainerManager(real, config, { cpu: '2', memory: '4Gi' });
    cm.start();
    const pods = [guaranteed, pod(burstable.spec.containers, [], `${UID.slice(0, -1)}1`), pod([{}], [], `${UID.slice(0, -1)}2`)];
    for (const p of pods) {
      const info = cm.ensurePod(p);
      const dir = cgroupPath(podCgroupName(p), driver, `${root}/${driver}`);
      const expected = Object.fromEntries(cgroupFiles(podResourceConfig(p, { podPidsLimit: 64 }), real.version).map((f) => [`${f.controller}/${f.file}`, f.value]));
      for (const [key, value] of Object.entries(expected)) {
        const [controller, file] = key.split('/') as ['cpu' | 'memory' | 'pids', string];
        const onDisk = real.read(dir, controller, file);
        // cgroup v2 prints "max" for unlimited and v1 rounds memory limits to pages: both equal here.
        expect(onDisk, `${dir} ${file}`).toBe(value);
      }
      expect(info.cgroup.path).toBe(dir);
    }
    const kubepods = cgroupPath(['kubepods'], driver, `${root}/${driver}`);
    expect(real.read(kubepods, 'memory', real.version === 'v1' ? 'memory.limit_in_bytes' : 'memory.max')).toBe(String(4 * 2 ** 30));
    for (const p of pods) cm.removePod(p.metadata.uid!);
    expect(fs.existsSync(real.dirs(cgroupPath(podCgroupName(guaranteed), driver, `${root}/${driver}`))[0].dir)).toBe(false);
    cm.destroyAll();
    expect(fs.existsSync(real.dirs(kubepods)[0].dir)).toBe(false);
  });

  it.runIf(version === 'v1')('removes a pod cgroup from every v1 hierarchy, also those the runtime made it in (freezer, blkio, ...)', () => {
    const podPath = `${root}/runtime-made/podx`;
    real.ensure(podPath, {});
    // What runc does for a container under this parent: the path in every mounted hierarchy.
    const others = ['freezer', 'blkio', 'devices'].filter((h) => fs.existsSync(`/sys/fs/cgroup/${h}/cgroup.procs`)).map((h) => `/sys/fs/cgroup/${h}${podPath}`);
    for (const d of others) fs.mkdirSync(d, { recursive: true });
    real.destroy(podPath);
    for (const d of [...others, ...real.dirs(podPath).map((x) => x.dir)]) expect(fs.existsSync(d), d).toBe(false);
  });
});
