// `kemu up --runtime runc` on the linux datapath, as root: the node's kemu-cri runs its runc backend, the
// kubelet pulls a real OCI image (busybox-static, built and pushed by the test) from a registry on loopback
// over plain HTTP, and the pod runs the image's own entrypoint and cmd as the image's user, inside the pod
// cgroup the kubelet made, and logs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kemu/core';
import { Cluster } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestRegistry } from '../../packages/cri/src/test-util-registry.js';
import { busyboxOnRegistry, qosTreeCleanup, runcPeers } from './runc-util.js';
import { runningPod, until, linuxDatapathAvailable } from './util.js';

const ok = linuxDatapathAvailable('the runc-runtime cluster tests', runcPeers);

const expectedCgroup: Record<'cgroupfs' | 'systemd', (uid: string, id: string) => string> = {
  cgroupfs: (uid, id) => `/kubepods/burstable/pod${uid}/${id}`,
  systemd: (uid, id) => `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid.replace(/-/g, '_')}.slice/kemu-cri-${id}.scope`,
};

for (const driver of ['cgroupfs', 'systemd'] as const) {
  describe.runIf(ok)(`a cluster whose nodes run kemu-cri on runc (kubelet cgroupDriver ${driver})`, () => {
    let cluster: Cluster;
    let registry: TestRegistry;
    let image: string;
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-runc-'));
    const imagesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-runc-images-'));
    const removeQosTree = qosTreeCleanup(driver);

    beforeAll(async () => {
      ({ registry, image } = await busyboxOnRegistry(imagesDir));
      const kubeletConfig = path.join(stateDir, 'kubelet-config.yaml');
      fs.writeFileSync(kubeletConfig, `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: ${driver}\n`);
      cluster = await Cluster.start({ stateDir, nodes: 1, fast: true, datapath: 'linux', runtime: 'runc', kubeletConfigs: { '*': kubeletConfig } });
    }, 90_000);

    afterAll(async () => {
      await cluster?.stop();
      await registry?.stop();
      fs.rmSync(stateDir, { recursive: true, force: true });
      fs.rmSync(imagesDir, { recursive: true, force: true });
      removeQosTree();
    });

    it("runs a pod from a loopback registry's image: its entrypoint and cmd as its user, logged, in the kubelet's pod cgroup with its limit", async () => {
      const nodeName = cluster.nodes[0].name;
      const pod: Pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'hello', namespace: 'default' },
        spec: { containers: [{ name: 'hello', image, resources: { limits: { memory: '64Mi' } } }] },
      };
      await cluster.store.create(pod);
      const running = await runningPod(cluster.store, 'hello', 60_000);
      expect(running.spec.nodeName).toBe(nodeName);
      expect(running.status?.containerStatuses?.[0].imageID).toMatch(/sha256:[0-9a-f]{64}/);

      const log = await until('the log line', async () => {
        const text = (await cluster.extensions().podLog!('default', 'hello', {})) as string;
        return text.includes('hello from') && text;
      });
      expect(log).toContain('hello from app hi');

      const runtime = cluster.runtimeOf(nodeName)!;
      const containers = (await runtime.ListContainers({ filter: { labelSelector: { 'io.kubernetes.pod.uid': running.metadata.uid ?? '' } } })).containers ?? [];
      expect(containers).toHaveLength(1);
      const verbose = JSON.parse((await runtime.ContainerStatus({ containerId: containers[0].id ?? '', verbose: true })).info?.info ?? '{}');
      // runc ran it in its own root, under the pod's cgroup as the kubelet named it.
      expect(fs.readFileSync(`/proc/${verbose.pid}/root/etc/passwd`, 'utf8')).toBe('root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n');
      const cgroupLine = fs.readFileSync(`/proc/${verbose.pid}/cgroup`, 'utf8').split('\n').find((l) => /(^0::)|(:memory:)/.test(l) && !l.endsWith(':/'))!;
      expect(cgroupLine).toContain(expectedCgroup[driver](running.metadata.uid ?? '', containers[0].id ?? ''));
      // The pod cgroup carries the pod's 64Mi limit, which therefore bounds the container inside it.
      const v1 = cgroupLine.includes(':memory:');
      const podDir = path.join(v1 ? '/sys/fs/cgroup/memory' : '/sys/fs/cgroup', path.dirname(cgroupLine.split(':')[2]));
      expect(fs.readFileSync(path.join(podDir, v1 ? 'memory.limit_in_bytes' : 'memory.max'), 'utf8').trim()).toBe(String(64 * 1024 * 1024));

      await cluster.store.delete('Pod', 'default', 'hello', { gracePeriodSeconds: 0 });
      await until('the sandbox is gone', async () => ((await runtime.ListPodSandbox({})).items ?? []).length === 0, 60_000);
    }, 120_000);
  });
}

// `kemu node --runtime runc`: the same, with the node in a process of its own (the built CLI).
const cliBuilt = fs.existsSync(path.join(import.meta.dirname, '..', '..', 'packages', 'kemu', 'dist', 'cli.js'));
describe.runIf(ok && cliBuilt)('a `kemu node --runtime runc` process', () => {
  let cluster: Cluster;
  let registry: TestRegistry;
  let image: string;
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-runc-node-'));
  const imagesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-runc-images-'));
  const removeQosTree = qosTreeCleanup('cgroupfs');

  beforeAll(async () => {
    ({ registry, image } = await busyboxOnRegistry(imagesDir));
    cluster = await Cluster.start({ stateDir, nodes: 1, fast: true, datapath: 'linux', runtime: 'runc', nodeProcesses: true, apiSocket: path.join(stateDir, 'kemu.sock') });
  }, 90_000);

  afterAll(async () => {
    await cluster?.stop();
    await registry?.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
    fs.rmSync(imagesDir, { recursive: true, force: true });
    removeQosTree();
  }, 60_000);

  it('runs the registry image in the node process and logs', async () => {
    const [node] = [...cluster.remoteNodes.values()];
    expect(fs.readFileSync(`/proc/${node.child.pid}/cmdline`, 'utf8').split('\0')).toEqual(expect.arrayContaining(['node', '--runtime', 'runc']));
    await cluster.store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'hello', namespace: 'default' }, spec: { containers: [{ name: 'hello', image }] } } as Pod);
    await runningPod(cluster.store, 'hello', 60_000);
    const log = await until('the log line', async () => {
      const text = (await cluster.extensions().podLog!('default', 'hello', {})) as string;
      return text.includes('hello from') && text;
    });
    expect(log).toContain('hello from app hi');
    await cluster.store.delete('Pod', 'default', 'hello', { gracePeriodSeconds: 0 });
    await until('the sandbox is gone', async () => ((await node.runtime.ListPodSandbox({})).items ?? []).length === 0, 60_000);
  }, 120_000);
});
