import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kemu/core';
import { createCri, type CriInstance } from '@kemu/cri';
import { cri, inProcessApi } from '@kemu/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { CpuAdmissionError, CpuManager, formatCpuSet, parseCpuSet } from './cpu-manager.js';
import { decodeKubeletConfiguration } from './kubelet-config.js';
import { startTestKubelet, type TestKubelet, testPod, until } from './testing.js';

const HEAD = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
const staticConfig = decodeKubeletConfiguration(HEAD + 'cpuManagerPolicy: static\nkubeReserved: {cpu: "1"}\n').config;

const guaranteed = (name: string, cpu: string, uid = name): Pod => ({
  ...testPod(name, { containers: [{ name: 'app', image: 'busybox', resources: { requests: { cpu, memory: '64Mi' }, limits: { cpu, memory: '64Mi' } } }] }),
  metadata: { name, namespace: 'default', uid },
});
const burstable = (name: string): Pod => ({
  ...testPod(name, { containers: [{ name: 'app', image: 'busybox', resources: { requests: { cpu: '100m' } } }] }),
  metadata: { name, namespace: 'default', uid: name },
});

describe('cpuset lists', () => {
  it.each([
    [[0, 1, 2, 5], '0-2,5'],
    [[3], '3'],
    [[], ''],
    [[7, 6, 1], '1,6-7'],
  ])('%j <-> %s', (cpus, text) => {
    expect(formatCpuSet(cpus)).toBe(text);
    expect(parseCpuSet(text)).toEqual([...cpus].sort((a, b) => a - b));
  });
  it('rejects a malformed list', () => expect(() => parseCpuSet('3-1')).toThrow(/invalid cpuset/));
});

describe('the static CPU manager policy', () => {
  it('gives whole-CPU Guaranteed containers CPUs of their own, never the reserved ones, and the rest the shared pool', () => {
    const m = new CpuManager(staticConfig, '4');
    m.admit(guaranteed('a', '2'));
    expect(m.cpusetFor(guaranteed('a', '2'), 'app')).toBe('1-2');
    // Fractional CPUs share, as do Burstable pods: the pool is what nobody holds (CPU 0 is reserved, 3 is free).
    m.admit(guaranteed('frac', '1500m'));
    expect(m.cpusetFor(guaranteed('frac', '1500m'), 'app')).toBe('0,3');
    expect(m.cpusetFor(burstable('b'), 'app')).toBe('0,3');
    expect(() => m.admit(guaranteed('c', '2'))).toThrow(CpuAdmissionError);
    expect(() => m.admit(guaranteed('c', '2'))).toThrow('not enough cpus available to satisfy request: requested=2, available=1');
    m.release('a');
    expect(m.defaultSet()).toEqual([0, 1, 2, 3]);
  });

  it('keeps assignments in cpu_manager_state across a restart', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-cpu-'));
    try {
      new CpuManager(staticConfig, '4', dir).admit(guaranteed('a', '1'));
      const again = new CpuManager(staticConfig, '4', dir);
      expect(again.cpusetFor(guaranteed('a', '1'), 'app')).toBe('1');
      expect(JSON.parse(fs.readFileSync(path.join(dir, 'cpu_manager_state'), 'utf8'))).toEqual({ policyName: 'static', defaultCpuSet: '0,2-3', entries: { a: { app: '1' } } });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('does nothing under the none policy', () => {
    const m = new CpuManager(decodeKubeletConfiguration(HEAD).config, '4');
    m.admit(guaranteed('a', '2'));
    expect(m.cpusetFor(guaranteed('a', '2'), 'app')).toBeUndefined();
  });
});

describe('the kubelet under cpuManagerPolicy static', () => {
  let k: TestKubelet | undefined;
  let instance: CriInstance | undefined;
  afterEach(async () => {
    await k?.stop();
    await instance?.close();
  });

  it('sends the exclusive cpuset through CRI and fails a pod it cannot serve', async () => {
    instance = await createCri({ backend: 'sim', syntheticImages: true, streaming: false, podCidr: '10.244.1.0/24' });
    const api = inProcessApi(cri.RuntimeServiceService, instance.runtimeService);
    const created: cri.CreateContainerRequest[] = [];
    const runtime = new Proxy(api, {
      get: (t, p, r) => (p === 'CreateContainer' ? (req: cri.CreateContainerRequest) => (created.push(req), t.CreateContainer(req)) : Reflect.get(t, p, r)),
    });
    k = await startTestKubelet({ config: staticConfig, capacity: { cpu: '4' }, runtime, images: inProcessApi(cri.ImageServiceService, instance.imageService) });
    const { metadata, spec } = guaranteed('a', '2');
    await k.store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: metadata.name, namespace: 'default' }, spec });
    await until('a running', async () => (await k!.store.get('Pod', 'default', 'a')).status?.phase === 'Running');
    expect(created.find((c) => c.sandboxConfig?.metadata?.name === 'a')?.config?.linux?.resources?.cpusetCpus).toBe('1-2');
    await k.store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'big', namespace: 'default' }, spec: guaranteed('big', '2').spec });
    const failed = await until('big failed', async () => {
      const p = await k!.store.get('Pod', 'default', 'big');
      return p.status?.phase === 'Failed' ? p : undefined;
    });
    expect(failed.status?.reason).toBe('UnexpectedAdmissionError');
    expect(failed.status?.message).toBe('not enough cpus available to satisfy request: requested=2, available=1');
  });
});
