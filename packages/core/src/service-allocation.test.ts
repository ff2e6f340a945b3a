import { afterEach, describe, expect, it } from 'vitest';
import { InvalidError, MemoryStore, type Service } from './index.js';
import { NodePortAllocator } from './node-port-allocator.js';
import { staticBandSize } from './range-allocator.js';
import { ServiceIPAllocator } from './service-ip-allocator.js';

const svc = (name: string, spec: Record<string, unknown>): Service =>
  ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec }) as Service;

let store: MemoryStore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

describe('ServiceIPAllocator', () => {
  it('never hands out the network or broadcast address and fills the range exactly', () => {
    const a = new ServiceIPAllocator('10.0.0.0/29');
    const got = new Set<string>();
    for (let ip = a.allocateNext(); ip; ip = a.allocateNext()) got.add(ip);
    expect([...got].sort()).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5', '10.0.0.6']);
    expect(a.allocate('10.0.0.0')).toEqual({ ok: false, reason: 'not-in-range' });
    expect(a.allocate('10.0.0.3')).toEqual({ ok: false, reason: 'allocated' });
    a.release('10.0.0.3');
    expect(a.allocateNext()).toBe('10.0.0.3');
  });

  it('allocates dynamically from above the static band first', () => {
    expect(staticBandSize(4094, 256)).toBe(255);
    expect(staticBandSize(8, 256)).toBe(0);
    const a = new ServiceIPAllocator('10.96.0.0/20', () => 0);
    // Offset 255 is the first dynamic address: 10.96.0.1 + 255.
    expect(a.allocateNext()).toBe('10.96.1.0');
    const v6 = new ServiceIPAllocator('fd00:10:96::/108', () => 0);
    expect(v6.allocateNext()).toBe('fd00:10:96::101');
  });
});

describe('NodePortAllocator', () => {
  it('parses the range and refuses ports outside it', () => {
    const p = new NodePortAllocator('30000-30010');
    expect(p.toString()).toBe('30000-30010');
    expect(p.allocate(29999)).toEqual({ ok: false, reason: 'not-in-range' });
    expect(p.allocate(30005)).toEqual({ ok: true });
    expect(p.allocate(30005)).toEqual({ ok: false, reason: 'allocated' });
    expect(() => new NodePortAllocator('32767-30000')).toThrow(RangeError);
  });
});

describe('Service allocation in the store', () => {
  it('allocates a cluster IP and families, refuses a taken or foreign IP, and frees it on delete', async () => {
    store = await MemoryStore.open({ serviceClusterIPRange: '10.96.0.0/24' });
    const a = await store.create(svc('a', { selector: { app: 'a' }, ports: [{ port: 80 }] }));
    expect(a.spec.clusterIP).toMatch(/^10\.96\.0\.\d+$/);
    expect(a.spec.clusterIPs).toEqual([a.spec.clusterIP]);
    expect(a.spec.ipFamilies).toEqual(['IPv4']);
    expect(a.spec.ipFamilyPolicy).toBe('SingleStack');
    const dup = store.create(svc('b', { clusterIP: a.spec.clusterIP, ports: [{ port: 80 }] }));
    await expect(dup).rejects.toBeInstanceOf(InvalidError);
    await expect(dup).rejects.toThrow(
      `Service "b" is invalid: spec.clusterIPs: Invalid value: ["${a.spec.clusterIP}"]: failed to allocate IP ${a.spec.clusterIP}: provided IP is already allocated`,
    );
    await expect(store.create(svc('c', { clusterIP: '10.97.0.5', ports: [{ port: 80 }] }))).rejects.toThrow(
      'failed to allocate IP 10.97.0.5: provided IP (10.97.0.5) is not in the valid range. The range of valid IPs is 10.96.0.0/24',
    );
    await store.delete('Service', 'default', 'a');
    await new Promise((r) => setImmediate(r));
    const b = await store.create(svc('b', { clusterIP: a.spec.clusterIP, ports: [{ port: 80 }] }));
    expect(b.spec.clusterIP).toBe(a.spec.clusterIP);
  });

  it('gives headless and ExternalName services no IP', async () => {
    store = await MemoryStore.open();
    const h = await store.create(svc('h', { clusterIP: 'None', selector: { app: 'h' } }));
    expect(h.spec.clusterIPs).toEqual(['None']);
    const x = await store.create(svc('x', { type: 'ExternalName', externalName: 'example.com' }));
    expect(x.spec.clusterIP).toBeUndefined();
    expect(x.spec.ipFamilies).toBeUndefined();
  });

  it('refuses RequireDualStack on a single-stack cluster and allocates both families on a dual-stack one', async () => {
    store = await MemoryStore.open();
    await expect(store.create(svc('d', { ipFamilyPolicy: 'RequireDualStack', ports: [{ port: 80 }] }))).rejects.toThrow(
      'spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services',
    );
    await store.close();
    store = await MemoryStore.open({ serviceClusterIPRange: '10.96.0.0/16,fd00:96::/112' });
    const d = await store.create(svc('d', { ipFamilyPolicy: 'PreferDualStack', ports: [{ port: 80 }] }));
    expect(d.spec.ipFamilies).toEqual(['IPv4', 'IPv6']);
    expect(d.spec.clusterIPs).toHaveLength(2);
    expect(d.spec.clusterIPs![1]).toMatch(/^fd00:96::/);
  });

  it('allocates node ports, keeps them across a replace that omits them, and frees them on type change', async () => {
    store = await MemoryStore.open({ serviceNodePortRange: '30000-30002' });
    const n = await store.create(svc('n', { type: 'NodePort', ports: [{ name: 'a', port: 80 }, { name: 'b', port: 443 }] }));
    const [p0, p1] = n.spec.ports!.map((p) => p.nodePort!);
    expect(p0).toBeGreaterThanOrEqual(30000);
    expect(p1).toBeLessThanOrEqual(30002);
    expect(p0).not.toBe(p1);
    await expect(store.create(svc('m', { type: 'NodePort', ports: [{ port: 80, nodePort: p0 }] }))).rejects.toThrow(
      `spec.ports[0].nodePort: Invalid value: ${p0}: provided port is already allocated`,
    );
    await expect(store.create(svc('m', { type: 'NodePort', ports: [{ port: 80, nodePort: 31000 }] }))).rejects.toThrow(
      'spec.ports[0].nodePort: Invalid value: 31000: provided port is not in the valid range. The range of valid ports is 30000-30002',
    );
    // A replace without clusterIP or nodePorts keeps both (kubectl replace / apply).
    const replaced = await store.update(svc('n', { type: 'NodePort', ports: [{ name: 'a', port: 80 }, { name: 'b', port: 443 }] }));
    expect(replaced.spec.clusterIP).toBe(n.spec.clusterIP);
    expect(replaced.spec.ports!.map((p) => p.nodePort)).toEqual([p0, p1]);
    // Back to ClusterIP: the node ports return to the pool.
    await store.update(svc('n', { type: 'ClusterIP', ports: [{ name: 'a', port: 80 }, { name: 'b', port: 443 }] }));
    const m = await store.create(svc('m', { type: 'NodePort', ports: [{ port: 80, nodePort: p0 }] }));
    expect(m.spec.ports![0].nodePort).toBe(p0);
  });

  it('rebuilds allocator state from stored Services (a second store over the same data sees them taken)', async () => {
    store = await MemoryStore.open({ serviceClusterIPRange: '10.96.0.0/29' });
    for (let i = 0; i < 6; i++) await store.create(svc(`s${i}`, { ports: [{ port: 80 }] }));
    await expect(store.create(svc('full', { ports: [{ port: 80 }] }))).rejects.toThrow('failed to allocate a serviceIP: range is full');
    // The failed create left nothing behind: deleting one frees exactly one address.
    await store.delete('Service', 'default', 's0');
    await new Promise((r) => setImmediate(r));
    await expect(store.create(svc('again', { ports: [{ port: 80 }] }))).resolves.toBeTruthy();
  });
});
