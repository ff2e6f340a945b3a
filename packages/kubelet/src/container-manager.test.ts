import { afterEach, describe, expect, it } from 'vitest';
import { SimCgroupManager } from './cgroup-manager.js';
import { decodeKubeletConfiguration } from './kubelet-config.js';
import { startTestKubelet, type TestKubelet, testPod, until } from './testing.js';

const running: TestKubelet[] = [];
afterEach(async () => {
  for (const k of running.splice(0)) await k.stop();
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
});
