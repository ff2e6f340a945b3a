// The composed cluster with the flannel-style VXLAN overlay (`kemu up --network vxlan`): each node runs a
// VxlanAgent (lease, flannel.1, VTEP annotations, one route/neighbour/FDB entry per remote node) and the
// kemu-vxlan CNI plugin. On netsim the trace shows the encapsulation; on the linux datapath tshark on the
// underlay sees the VXLAN frames with the VNI.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kemu/core';
import { Cluster, type LinuxClusterNetwork } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxDatapathAvailable, pinnedPod, runningPod, until } from './util.js';
import { peers } from '@kemu/test-peers';

const linuxOk = linuxDatapathAvailable('the vxlan cluster test on the linux datapath', [peers.tshark]);

for (const datapath of ['sim', 'linux'] as const) {
  describe.runIf(datapath === 'sim' || linuxOk)(`the vxlan overlay (${datapath} datapath)`, () => {
    let cluster: Cluster;
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), `kemu-e2e-vxlan-${datapath}-`));
    let a: Pod;
    let b: Pod;

    beforeAll(async () => {
      cluster = await Cluster.start({ stateDir, nodes: 2, fast: true, datapath, network: 'vxlan' });
      await cluster.store.create(pinnedPod('a', 'kemu-node-1'));
      await cluster.store.create(pinnedPod('b', 'kemu-node-2'));
      [a, b] = [await runningPod(cluster.store, 'a'), await runningPod(cluster.store, 'b')];
    }, 60_000);

    afterAll(async () => {
      await cluster?.stop();
      fs.rmSync(stateDir, { recursive: true, force: true });
    });

    it('publishes each node as a VTEP, flannel-style', async () => {
      for (const n of (await cluster.store.list('Node')).items) {
        const an = n.metadata.annotations ?? {};
        expect(an['flannel.alpha.coreos.com/backend-type']).toBe('vxlan');
        expect(JSON.parse(an['flannel.alpha.coreos.com/backend-data'] ?? '{}')).toMatchObject({ VNI: 1 });
        expect(an['flannel.alpha.coreos.com/public-ip']).toBe(n.status?.addresses?.find((x) => x.type === 'InternalIP')?.address);
      }
      expect(a.status?.podIP).toMatch(/^10\.244\.1\./);
      expect(b.status?.podIP).toMatch(/^10\.244\.2\./);
    });

    if (datapath === 'sim') {
      it('carries pod traffic across nodes inside VXLAN, with the pod addresses intact', async () => {
        const t = await cluster.trace('a', 'b');
        expect(t.reachable).toBe(true);
        expect(t.text).toContain(`${b.status?.podIP?.replace(/\.\d+$/, '.0')}/24 via`);
        expect(t.text).toMatch(/kemu-node-1\/flannel\.1\s+encap\s+vxlan vni 1 172\.18\.0\.10:\d+ -> 172\.18\.0\.11:8472/);
        expect(t.text).toMatch(/kemu-node-2\/flannel\.1\s+decap\s+vxlan vni 1/);
        expect(t.text).toContain(`IP ${a.status?.podIP} > ${b.status?.podIP}: ICMP echo request`);
        // kube-proxy's rules are traversed (nf hops) but nothing is rewritten: no nat hop.
        expect((t.trace as { kind: string }[]).filter((h) => h.kind === 'nat')).toEqual([]);
      });
    } else {
      it('pods ping across nodes and tshark on the underlay sees VXLAN frames with VNI 1', async () => {
        const net = cluster.network as LinuxClusterNetwork;
        const routes = spawnSync('ip', ['-n', `${net.prefix}-kemu-node-1`, 'route'], { encoding: 'utf8' }).stdout;
        expect(routes).toMatch(/10\.244\.2\.0\/24 via 10\.244\.2\.0 dev flannel\.1 onlink/);
        expect(routes).not.toMatch(/10\.244\.2\.0\/24 via 172\.18\.0\.11/);
        const capture = spawn(
          'nsenter',
          [`--net=/run/netns/${net.underlayName}`, '--', 'tshark', '-i', 'kemu-underlay', '-f', 'udp port 8472', '-c', '2', '-a', 'duration:40', '-d', 'udp.port==8472,vxlan', '-T', 'fields', '-e', 'vxlan.vni', '-e', 'ip.src'],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let out = '';
        let err = '';
        capture.stdout.on('data', (c) => (out += c));
        capture.stderr.on('data', (c) => (err += c));
        await until('tshark capturing', async () => err.includes('Capturing on'), 40_000);
        // "Capturing on" can come before the capture filter is attached on a busy machine: keep the pods
        // talking until tshark has its two frames (or gives up at its own 40 s), not just once.
        const exited = new Promise((r) => capture.once('exit', r));
        let done = false;
        void exited.then(() => (done = true));
        while (!done) {
          const t = await cluster.trace('a', 'b');
          expect(t.reachable).toBe(true);
          await Promise.race([exited, new Promise((r) => setTimeout(r, 500))]);
        }
        const frames = out.trim().split('\n').filter(Boolean).map((l) => l.split('\t'));
        expect(frames.length).toBeGreaterThanOrEqual(1);
        for (const [vni, outer] of frames) {
          expect(vni).toBe('1');
          expect(['172.18.0.10', '172.18.0.11']).toContain(outer.split(',')[0]);
        }
        // tshark can take many seconds to start when the machine is busy.
      }, 90_000);
    }
  });
}
