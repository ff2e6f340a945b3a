// Pods under the cgroup_parent the kubelet gives them (cgroupfs paths and systemd slice names, as containerd
// does), on the runc and process backends: the pod cgroup the kubelet made holds the holder and every
// container, and its limits apply to them. Runs as root in a scratch cgroup subtree that the suite removes.
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { cri } from '@kemu/proto';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectCgroupMode } from './cgroups.js';
import { expandSlice, podCgroupOf } from './cgroup-parent.js';
import { buildBusyboxImages, startRegistry, type TestRegistry } from './test-util-registry.js';
import { containerConfig, grpcError, podConfig, startTestShim, tempDir, type TestShim, waitFor } from './test-util.js';

describe('cgroup_parent naming', () => {
  it('expands systemd slice names the way systemd nests them', () => {
    expect(expandSlice('kubepods-burstable-pod1234_5678.slice')).toBe('/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_5678.slice');
    expect(expandSlice('kubepods.slice')).toBe('/kubepods.slice');
    expect(expandSlice('-.slice')).toBe('/');
  });

  it('puts containers at <parent>/<id> (cgroupfs) or <slice path>/kemu-cri-<id>.scope (systemd)', () => {
    expect(podCgroupOf('/kubepods/burstable/podabc/', 's1')).toEqual({ dir: '/kubepods/burstable/podabc', driver: 'cgroupfs', own: false });
    expect(podCgroupOf('kubepods-podabc.slice', 's1')).toEqual({ dir: '/kubepods.slice/kubepods-podabc.slice', driver: 'systemd', own: false });
    expect(podCgroupOf('', 's1')).toEqual({ dir: '/kemu-cri/s1', driver: 'cgroupfs', own: true });
  });

  it.each(['kubepods', '/kubepods/../escape', '/a/./b', 'kubepods--x.slice', 'a/b.slice', '/a b', '-kubepods.slice'])('refuses cgroup_parent %j as INVALID_ARGUMENT', (bad) => {
    expect(() => podCgroupOf(bad, 's1')).toThrow(expect.objectContaining({ code: grpc.status.INVALID_ARGUMENT }));
  });
});

const mode = detectCgroupMode();
const runcOk = requirePeers('the runc backend under a kubelet cgroup_parent', [peers.root, peers.netns, peers.runc, peers.dockerRegistry, peers.skopeo, peers.umoci, peers.busybox]);
const processOk = requirePeers('the process backend under a kubelet cgroup_parent', [peers.root, peers.netns, peers.unshare, peers.busybox]);

describe.runIf(runcOk && mode !== 'none')('runc backend under the kubelet pod cgroup', () => podCgroupSuite('runc'));
describe.runIf(processOk && mode !== 'none')('process backend under the kubelet pod cgroup', () => podCgroupSuite('process'));

function podCgroupSuite(backend: 'runc' | 'process') {
  const scratch = `kemutest${process.pid}${backend}`;
  const memRoot = mode === 'v1' ? '/sys/fs/cgroup/memory' : '/sys/fs/cgroup';
  const memLimitFile = mode === 'v1' ? 'memory.limit_in_bytes' : 'memory.max';
  // The host's network: what is under test is cgroups, and no CNI plugin is needed for it.
  const hostNet = { namespaceOptions: { network: cri.NamespaceMode.NODE } };
  let registry: TestRegistry;
  let shim: TestShim;
  let image: string;

  /** The cgroup a process is in for the memory controller (v1) or the unified hierarchy (v2). */
  const memCgroupOf = (pid: number) => {
    const lines = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
    const line = mode === 'v1' ? lines.find((l) => l.split(':')[1]?.split(',').includes('memory')) : lines.find((l) => l.startsWith('0::'));
    return line!.split(':')[2];
  };

  /** What the kubelet does before RunPodSandbox: the pod cgroup, with the pod's memory limit. */
  const makePodCgroup = (rel: string, limit: number) => {
    const dir = path.join(memRoot, rel);
    fs.mkdirSync(dir, { recursive: true });
    if (mode === 'v2') for (const d of [memRoot, ...rel.split('/').filter(Boolean).slice(0, -1).map((_, i, a) => path.join(memRoot, ...a.slice(0, i + 1)))]) fs.writeFileSync(path.join(d, 'cgroup.subtree_control'), '+memory');
    fs.writeFileSync(path.join(dir, memLimitFile), String(limit));
  };

  beforeAll(async () => {
    if (backend === 'runc') {
      const built = buildBusyboxImages(tempDir('kemu-cri-images-'));
      registry = await startRegistry();
      await registry.push(built.layout, 'v1', 'tools/busybox:v1');
      image = `${registry.host}/tools/busybox:v1`;
      shim = await startTestShim({ backend: 'runc', syntheticImages: false, runc: { netnsPrefix: `kemu-cg${process.pid}-` } });
    } else {
      // Synthetic image: the process backend runs the host's own sh, head and tr.
      image = 'docker.io/library/busybox:1.36';
      shim = await startTestShim({ backend: 'process', syntheticImages: true, process: { netnsPrefix: `kemu-cp${process.pid}-` } });
    }
    await shim.icall('PullImage', { image: { image } });
  }, 60_000);

  afterAll(async () => {
    if (shim) {
      for (const p of (await shim.call('ListPodSandbox', {})).items ?? []) {
        await shim.call('StopPodSandbox', { podSandboxId: p.id });
        await shim.call('RemovePodSandbox', { podSandboxId: p.id });
      }
      await shim.close();
    }
    await registry?.stop();
    // The scratch subtree, deepest first, in every hierarchy.
    const roots = mode === 'v1' ? fs.readdirSync('/sys/fs/cgroup').map((h) => path.join('/sys/fs/cgroup', h)) : ['/sys/fs/cgroup'];
    for (const root of roots) {
      for (const top of [scratch, `${scratch}.slice`]) {
        const dirs: string[] = [];
        const walk = (d: string) => {
          if (!fs.existsSync(d)) return;
          dirs.push(d);
          for (const e of fs.readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(path.join(d, e.name));
        };
        walk(path.join(root, top));
        for (const d of dirs.reverse()) fs.rmdirSync(d);
      }
    }
  });

  async function runIn(cgroupParent: string, command: string[]) {
    const cfg = podConfig(shim.dir, { linux: { cgroupParent, securityContext: hostNet } });
    const pod = (await shim.call('RunPodSandbox', { config: cfg })).podSandboxId!;
    const id = (await shim.call('CreateContainer', { podSandboxId: pod, config: containerConfig({ image: { image }, command, logPath: 'c.log' }), sandboxConfig: cfg })).containerId!;
    await shim.call('StartContainer', { containerId: id });
    return { pod, id };
  }

  it.each([
    ['cgroupfs', () => `/${scratch}/burstable/pod-a`, (pod: string, id: string) => [`/${scratch}/burstable/pod-a/${pod}`, `/${scratch}/burstable/pod-a/${id}`]],
    ['systemd', () => `${scratch}-burstable-pod_b.slice`, (pod: string, id: string) => [`/${scratch}.slice/${scratch}-burstable.slice/${scratch}-burstable-pod_b.slice/kemu-cri-${pod}.scope`, `/${scratch}.slice/${scratch}-burstable.slice/${scratch}-burstable-pod_b.slice/kemu-cri-${id}.scope`]],
  ] as const)('the %s pod cgroup holds the holder and the container, and its memory limit kills a hog', async (_driver, parentOf, expected) => {
    const parent = parentOf();
    const podDir = podCgroupOf(parent, 'x').dir;
    makePodCgroup(podDir, 48 * 1024 * 1024);

    const { pod, id } = await runIn(parent, ['sleep', '3600']);
    const [holderCg, containerCg] = expected(pod, id);
    const verbose = JSON.parse((await shim.call('ContainerStatus', { containerId: id, verbose: true })).info!.info);
    expect(memCgroupOf(verbose.pid)).toBe(containerCg);
    const holders = fs.readFileSync(path.join(memRoot, holderCg, 'cgroup.procs'), 'utf8').trim().split('\n').filter(Boolean).map(Number);
    expect(holders.length).toBeGreaterThan(0);
    for (const h of holders) expect(memCgroupOf(h)).toBe(holderCg);

    // No container limit: only the pod cgroup's 48 MiB stands between this and the host.
    const hog = await runIn(parent, ['sh', '-c', 'x=$(head -c 200000000 /dev/zero | tr "\\0" a); echo survived']);
    await waitFor(async () => (await shim.call('ContainerStatus', { containerId: hog.id })).status!.state === cri.ContainerState.CONTAINER_EXITED || undefined, 30_000, 'hog exit');
    const st = (await shim.call('ContainerStatus', { containerId: hog.id })).status!;
    expect(st.exitCode).toBe(137);
    expect(st.reason).toBe('OOMKilled');

    for (const p of [pod, hog.pod]) {
      await shim.call('StopPodSandbox', { podSandboxId: p });
      await shim.call('RemovePodSandbox', { podSandboxId: p });
    }
    // The pod cgroup is the kubelet's and stays; everything the runtime put in it is gone.
    expect(fs.existsSync(path.join(memRoot, podDir))).toBe(true);
    expect(fs.readdirSync(path.join(memRoot, podDir), { withFileTypes: true }).filter((e) => e.isDirectory())).toEqual([]);
  }, 60_000);

  it('refuses a cgroup_parent that climbs out with INVALID_ARGUMENT and keeps no sandbox', async () => {
    const before = (await shim.call('ListPodSandbox', {})).items?.length ?? 0;
    const err = await grpcError(shim.call('RunPodSandbox', { config: podConfig(shim.dir, { linux: { cgroupParent: `/${scratch}/../escape`, securityContext: hostNet } }) }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toContain('cgroup_parent');
    expect((await shim.call('ListPodSandbox', {})).items?.length ?? 0).toBe(before);
    expect(fs.existsSync(path.join(memRoot, 'escape'))).toBe(false);
  });
}
