// The composed cluster on embedded defaults (memory store, sim runtime, simulated network and storage):
// the demo app on three nodes, a cross-node trace, cleanup with nothing left behind, and the failure
// behaviours a user of a real cluster relies on.
import fs from 'node:fs';
import { type KubeObject, parseManifests, type Pod } from '@kemu/core';
import { Kubelet } from '@kemu/kubelet';
import { Cluster, demoManifestPath, leftovers } from 'kemu';
import { describe, expect, it } from 'vitest';
import { composedCluster } from './composed-cluster.js';
import { until } from './util.js';

const inCidr = (ip: string, cidr: string) => ip.startsWith(cidr.split('.').slice(0, 3).join('.'));

let cluster: Cluster;
composedCluster('kemu-e2e-', { nodes: 3, fast: true }, (c) => (cluster = c));

const pods = async (ns = 'default') => (await cluster.store.list('Pod', { namespace: ns })).items as Pod[];

describe('the demo app on embedded defaults', () => {
  let objs: KubeObject[];

  it('starts every pod Running on the three nodes with IPs from their pod CIDRs and the volume attached', async () => {
    const nodes = (await cluster.store.list('Node')).items;
    expect(nodes.map((n) => n.metadata.name).sort()).toEqual(['kemu-node-1', 'kemu-node-2', 'kemu-node-3']);
    objs = parseManifests(fs.readFileSync(demoManifestPath(), 'utf8'));
    for (const o of objs) await cluster.store.create(o);
    const running = await until('all pods Running and Ready', async () => {
      const ps = await pods();
      return ps.length === 5 && ps.every((p) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True') && ps;
    });
    const web = running.filter((p) => p.metadata.labels?.app === 'web');
    expect(new Set(web.map((p) => p.spec.nodeName)).size).toBe(3); // topology spread: one per node
    for (const p of running) {
      const node = cluster.node(p.spec.nodeName ?? '')!;
      expect(inCidr(p.status?.podIP ?? '', node.podCIDR)).toBe(true);
      expect(p.status?.hostIP).toBe(node.ip);
    }
    expect(web[0].status?.initContainerStatuses?.[0].state?.terminated?.reason).toBe('Completed');
    const db = running.find((p) => p.metadata.name === 'db')!;
    const pvc = await cluster.store.get('PersistentVolumeClaim', 'default', 'db-data');
    expect(pvc.status?.phase).toBe('Bound');
    expect(pvc.metadata.annotations?.['volume.kubernetes.io/selected-node']).toBe(db.spec.nodeName);
    const pv = await cluster.store.get('PersistentVolume', '', pvc.spec.volumeName ?? '');
    expect(JSON.stringify(pv.spec.nodeAffinity)).toContain(db.spec.nodeName);
    const vas = (await cluster.store.list('VolumeAttachment')).items;
    expect(vas).toHaveLength(1);
    expect(vas[0].spec.nodeName).toBe(db.spec.nodeName);
    expect(vas[0].status?.attached).toBe(true);
    // volumesInUse comes with the kubelet's next status update, which may trail the pod's readiness.
    const node = await until('volumesInUse on the node', async () => {
      const n = await cluster.store.get('Node', '', db.spec.nodeName ?? '');
      return (n.status?.volumesInUse?.length ?? 0) > 0 && n;
    });
    expect(node.status?.volumesInUse).toEqual([`kubernetes.io/csi/kemu.csi.k8s.io^${pv.spec.csi?.volumeHandle}`]);
    // What cleanup will have to undo is really there.
    const held = await leftovers(cluster);
    expect(held).toMatchObject({ sandboxes: 5, ips: 5, volumes: 1, attachments: 1, pvs: 1 });
  });

  it('a pod on one node reaches a pod on another, and the trace shows the path through both nodes', async () => {
    const web = (await pods()).filter((p) => p.metadata.labels?.app === 'web').sort((a, b) => (a.spec.nodeName ?? '').localeCompare(b.spec.nodeName ?? ''));
    const [a, b] = web;
    const t = await cluster.trace(a.metadata.name ?? '', b.metadata.name ?? '');
    expect(t.reachable).toBe(true);
    expect(t.ip).toBe(b.status?.podIP);
    const nodeA = cluster.node(a.spec.nodeName ?? '')!;
    const nodeB = cluster.node(b.spec.nodeName ?? '')!;
    expect(t.text).toContain(`/run/kemu/nodes/${nodeA.name}/cni0`);
    expect(t.text).toContain(`${nodeB.podCIDR} via ${nodeB.ip}`);
    expect(t.text).toContain('/run/kemu/underlay/kemu-underlay');
    expect(t.text).toContain(`/run/kemu/nodes/${nodeB.name}/cni0`);
    expect(t.text).toMatch(/echo reply/);
    // And an address nobody has is unreachable.
    expect((await cluster.trace(a.metadata.name ?? '', '10.244.77.7')).reachable).toBe(false);
  });

  it('deleting everything leaves no IP allocation, volume, VolumeAttachment, PV or sandbox behind', async () => {
    for (const o of [...objs].reverse()) await cluster.store.delete(o.kind, o.metadata.namespace ?? 'default', o.metadata.name ?? '');
    const left = await until('cleanup', async () => {
      const l = await leftovers(cluster);
      const n = (await pods()).length;
      return n === 0 && Object.values(l).every((x) => x === 0) && l;
    });
    expect(left).toEqual({ sandboxes: 0, ips: 0, volumes: 0, attachments: 0, pvs: 0 });
  });
});

describe('failures', () => {
  const pod = (name: string, spec: Partial<Pod['spec']> = {}, annotations: Record<string, string> = {}): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', annotations },
    spec: { containers: [{ name: 'app', image: 'busybox' }], ...spec },
  });

  it('a container that exits 1 goes to CrashLoopBackOff with a growing back-off', async () => {
    await cluster.store.create(pod('crasher', {}, { 'kemu.io/sim-exit-after': '0.1', 'kemu.io/sim-exit-code': '1' }));
    const delays = new Set<string>();
    await until(
      'three restarts',
      async () => {
        const p = await cluster.store.get('Pod', 'default', 'crasher');
        const s = p.status?.containerStatuses?.[0];
        const m = s?.state?.waiting?.message?.match(/^back-off (\S+) restarting failed container=app pod=crasher_default/);
        if (m) delays.add(m[1]);
        return (s?.restartCount ?? 0) >= 3 && delays.size >= 2;
      },
      30_000,
    );
    expect([...delays].slice(0, 2)).toEqual(['1s', '2s']);
    await cluster.store.delete('Pod', 'default', 'crasher', { gracePeriodSeconds: 0 });
  }, 40_000);

  it('a failing readiness probe keeps the pod Running but not Ready', async () => {
    await cluster.store.create(
      pod('unready', { containers: [{ name: 'app', image: 'nginx', readinessProbe: { exec: { command: ['false'] }, periodSeconds: 1, failureThreshold: 1 } }] }),
    );
    const p = await until('Running', async () => {
      const x = await cluster.store.get('Pod', 'default', 'unready');
      return x.status?.phase === 'Running' && x;
    });
    await new Promise((r) => setTimeout(r, 1500));
    const again = await cluster.store.get('Pod', 'default', 'unready');
    expect(again.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'ContainersNotReady' });
    expect(p.status?.containerStatuses?.[0].ready).toBe(false);
    await cluster.store.delete('Pod', 'default', 'unready', { gracePeriodSeconds: 0 });
  });

  it('a node that stops heartbeating becomes NotReady and tainted unreachable', async () => {
    const victim = cluster.nodes[2];
    victim.kubelet.pauseHeartbeats();
    try {
      const n = await until(
        'NotReady',
        async () => {
          const x = await cluster.store.get('Node', '', victim.name);
          return x.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'Unknown' && x;
        },
        15_000,
      );
      expect(n.spec?.taints?.map((t) => `${t.key}:${t.effect}`)).toContain('node.kubernetes.io/unreachable:NoSchedule');
    } finally {
      victim.kubelet.pauseHeartbeats(false);
    }
    await until('Ready again', async () => {
      const x = await cluster.store.get('Node', '', victim.name);
      return x.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' && !x.spec?.taints?.length;
    }, 15_000);
  });

  it('a restarted kubelet recovers its pods from the runtime instead of recreating them', async () => {
    const node = cluster.nodes[0];
    await cluster.store.create(pod('steady', { nodeName: node.name }));
    const before = await until('Running', async () => {
      const x = await cluster.store.get('Pod', 'default', 'steady');
      return x.status?.phase === 'Running' && x;
    });
    await node.kubelet.stop();
    const fresh = new Kubelet(node.kubelet.options);
    await fresh.start();
    node.kubelet = fresh;
    await new Promise((r) => setTimeout(r, 1000));
    const after = await cluster.store.get('Pod', 'default', 'steady');
    expect(after.status?.phase).toBe('Running');
    expect(after.status?.containerStatuses?.[0].containerID).toBe(before.status?.containerStatuses?.[0].containerID);
    expect(after.status?.podIP).toBe(before.status?.podIP);
    await cluster.store.delete('Pod', 'default', 'steady', { gracePeriodSeconds: 0 });
  });
});
