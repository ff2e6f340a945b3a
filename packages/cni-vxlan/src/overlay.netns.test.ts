// Three "nodes" as network namespaces joined by an underlay bridge; kemu-vxlan programs the kernel's VXLAN
// between them and pods (namespaces) on different nodes ping each other. Needs root and iproute2.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLinuxDatapath, HOST_NETNS, InProcessInvoker, type LinuxDatapath } from '@kemu/cni';
import { addNetns, delAllNetns, inNetns, ipJson, tsharkCapture } from '@kemu/cni/testing';
import { bridge } from '@kemu/cni-bridge';
import { hostLocal } from '@kemu/cni-host-local';
import { createMemoryStore, type Store } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { VxlanAgent } from './agent.js';
import { vxlan } from './plugin.js';

const ok = requirePeers('the kemu-vxlan netns tests', [peers.netns, peers.tshark]);

const VNI = 42;
const tmp = mkdtempSync(join(tmpdir(), 'kemu-vxlan-netns-'));

interface LinuxNode {
  name: string;
  ns: { name: string; path: string };
  ip: string;
  dp: LinuxDatapath;
  agent: VxlanAgent;
  invoker: InProcessInvoker;
  pod?: { name: string; path: string; ip: string };
}

const nodes: LinuxNode[] = [];
let underlay: { name: string; path: string };
let store: Store;
let underDp: LinuxDatapath;

afterAll(async () => {
  for (const n of nodes) {
    await n.agent.stop().catch(() => undefined);
    await n.dp.close?.();
  }
  await underDp?.close?.();
  await store?.close();
  delAllNetns();
  rmSync(tmp, { recursive: true, force: true });
});

/** Captures VXLAN-port and ICMP traffic on an underlay port while `fn` runs; returns tshark's field rows. */
function captureRows(port: string, fn: () => void): Promise<string[][]> {
  return tsharkCapture(
    {
      netns: underlay.name,
      iface: port,
      filter: 'udp port 8472 or icmp',
      decodeAs: ['udp.port==8472,vxlan'],
      displayFilter: 'icmp',
      fields: ['vxlan.vni', 'ip.src', 'ip.dst', 'icmp.type'],
      dir: tmp,
    },
    fn,
  );
}

describe.runIf(ok)('kemu-vxlan on the Linux datapath', () => {
  beforeAll(async () => {
    store = await createMemoryStore();
    underlay = addNetns('under');
    underDp = createLinuxDatapath({ hostNetns: underlay.path });
    await underDp.addLink(HOST_NETNS, { kind: 'bridge', name: 'br0', up: true });
    for (let i = 0; i < 3; i++) {
      const name = `node-${'abc'[i]}`;
      const ns = addNetns(`node${i}`);
      const ip = `192.168.77.${11 + i}`;
      await underDp.addLink(HOST_NETNS, {
        kind: 'veth',
        name: `u${i}`,
        up: true,
        peer: { name: 'eth0', netns: ns.path },
      });
      await underDp.setLink(HOST_NETNS, `u${i}`, { master: 'br0' });
      const dp = createLinuxDatapath({ hostNetns: ns.path });
      await dp.setLink(HOST_NETNS, 'lo', { up: true });
      await dp.setLink(HOST_NETNS, 'eth0', { up: true });
      await dp.addAddr(HOST_NETNS, 'eth0', `${ip}/24`);
      await store.create({ apiVersion: 'v1', kind: 'Node', metadata: { name }, spec: {} });
      const agent = new VxlanAgent({
        store,
        datapath: dp,
        node: name,
        publicIp: ip,
        underlayDevice: 'eth0',
        vni: VNI,
        network: '10.247.0.0/16',
        subnetFile: join(tmp, name, 'subnet.env'),
      });
      const invoker = new InProcessInvoker({ plugins: [vxlan, bridge, hostLocal], datapath: dp });
      nodes.push({ name, ns, ip, dp, agent, invoker });
    }
    for (const n of nodes) await n.agent.start();
    for (const n of nodes) await n.agent.reconcile();
    for (const n of nodes) {
      const pod = addNetns(`pod${n.name}`);
      const conf = {
        cniVersion: '1.0.0',
        name: 'overlay',
        type: 'kemu-vxlan',
        subnetFile: join(tmp, n.name, 'subnet.env'),
        dataDir: join(tmp, n.name, 'flannel'),
        ipam: { dataDir: join(tmp, n.name, 'ipam') },
      };
      const env = {
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: `ctr-${n.name}`,
        CNI_NETNS: pod.path,
        CNI_IFNAME: 'eth0',
        CNI_PATH: '/opt/cni/bin',
      };
      const out = await n.invoker.invoke('kemu-vxlan', env, JSON.stringify(conf));
      expect(out.exitCode, out.stdout).toBe(0);
      const ip = JSON.parse(out.stdout).ips[0].address.split('/')[0];
      n.pod = { ...pod, ip };
    }
  }, 60_000);

  it('creates the VXLAN device and one route, neighbour and FDB entry per remote node in the kernel', () => {
    const a = nodes[0]!;
    const [link] = ipJson(a.ns.name, ['-d', 'link', 'show', 'flannel.42']);
    expect(link.linkinfo.info_kind).toBe('vxlan');
    expect(link.linkinfo.info_data).toMatchObject({
      id: 42,
      port: 8472,
      local: '192.168.77.11',
      learning: false,
    });
    const routes = ipJson(a.ns.name, ['route', 'show', 'dev', 'flannel.42']).filter(
      (r: { gateway?: string }) => r.gateway,
    );
    expect(
      routes
        .map((r: { dst: string; gateway: string; flags: string[] }) => [r.dst, r.gateway, r.flags])
        .sort(),
    ).toEqual([
      ['10.247.1.0/24', '10.247.1.0', ['onlink']],
      ['10.247.2.0/24', '10.247.2.0', ['onlink']],
    ]);
    const neigh = ipJson(a.ns.name, ['neigh', 'show', 'dev', 'flannel.42']).map(
      (x: { dst: string; lladdr: string; state: string[] }) => [x.dst, x.lladdr, x.state],
    );
    expect(neigh.sort()).toEqual([
      ['10.247.1.0', nodes[1]!.agent.vtepMac, ['PERMANENT']],
      ['10.247.2.0', nodes[2]!.agent.vtepMac, ['PERMANENT']],
    ]);
    const fdb = spawnSync('bridge', ['-n', a.ns.name, '-j', 'fdb', 'show', 'dev', 'flannel.42'], {
      encoding: 'utf8',
    });
    const entries = JSON.parse(fdb.stdout).filter((f: { dst?: string }) => f.dst);
    expect(entries.map((f: { mac: string; dst: string }) => [f.mac, f.dst]).sort()).toEqual(
      [
        [nodes[1]!.agent.vtepMac, '192.168.77.12'],
        [nodes[2]!.agent.vtepMac, '192.168.77.13'],
      ].sort(),
    );
  });

  it('lets pods on different nodes ping each other, and tshark sees VXLAN with VNI 42 on the underlay', async () => {
    const [a, b, c] = nodes as [LinuxNode, LinuxNode, LinuxNode];
    const pcap = join(tmp, 'underlay.pcap');
    const cap: ChildProcess = spawn('ip', [
      'netns',
      'exec',
      underlay.name,
      'tshark',
      '-q',
      '-i',
      'u0',
      '-w',
      pcap,
      '-f',
      'udp port 8472',
    ]);
    await new Promise<void>((resolve, reject) => {
      let err = '';
      const t = setTimeout(() => reject(new Error(`tshark did not start: ${err}`)), 20_000);
      cap.stderr!.on('data', (d: Buffer) => {
        err += d.toString();
        if (err.includes('Capturing on')) {
          clearTimeout(t);
          resolve();
        }
      });
    });
    try {
      const ab = inNetns(a.pod!.name, 'ping', ['-c', '2', '-W', '2', b.pod!.ip]);
      expect(ab.status, ab.stdout + ab.stderr).toBe(0);
      const ca = inNetns(c.pod!.name, 'ping', ['-c', '1', '-W', '2', a.pod!.ip]);
      expect(ca.status, ca.stdout + ca.stderr).toBe(0);
      const bc = inNetns(b.pod!.name, 'ping', ['-c', '1', '-W', '2', c.pod!.ip]);
      expect(bc.status, bc.stdout + bc.stderr).toBe(0);
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      cap.kill('SIGINT');
      await new Promise((r) => cap.once('exit', r));
    }
    const ts = spawnSync(
      'tshark',
      [
        '-r',
        pcap,
        '-d',
        'udp.port==8472,vxlan',
        '-Y',
        'vxlan && icmp',
        '-T',
        'fields',
        '-e',
        'vxlan.vni',
        '-e',
        'ip.src',
        '-e',
        'ip.dst',
        '-e',
        'icmp.type',
      ],
      { encoding: 'utf8' },
    );
    expect(ts.status, ts.stderr).toBe(0);
    const rows = ts.stdout
      .trim()
      .split('\n')
      .map((l) => l.split('\t'));
    // tshark may start a moment after it says so: count kinds of packets, not exact totals.
    const has = (src: string, dst: string, type: string) =>
      rows.some((f) => f[1] === src && f[2] === dst && f[3] === type);
    expect(rows.length, ts.stdout).toBeGreaterThanOrEqual(4);
    expect(
      rows.every((f) => f[0] === '42'),
      ts.stdout,
    ).toBe(true);
    // Outer (underlay) and inner (pod) addresses: no NAT between pods.
    expect(has(`192.168.77.11,${a.pod!.ip}`, `192.168.77.12,${b.pod!.ip}`, '8'), ts.stdout).toBe(true);
    expect(has(`192.168.77.12,${b.pod!.ip}`, `192.168.77.11,${a.pod!.ip}`, '0'), ts.stdout).toBe(true);
    expect(has(`192.168.77.13,${c.pod!.ip}`, `192.168.77.11,${a.pod!.ip}`, '8'), ts.stdout).toBe(true);
    expect(has(`192.168.77.11,${a.pod!.ip}`, `192.168.77.13,${c.pod!.ip}`, '0'), ts.stdout).toBe(true);
    // pod-b <-> pod-c goes straight between node-b and node-c, never through node-a's port.
    expect(
      rows.some((f) => f[1]!.startsWith('192.168.77.12') && f[2]!.startsWith('192.168.77.13')),
      ts.stdout,
    ).toBe(false);
  }, 60_000);

  it('stops routing to a node once it leaves the store', async () => {
    const [a, , c] = nodes as [LinuxNode, LinuxNode, LinuxNode];
    await c.agent.stop();
    await store.delete('Node', '', c.name);
    await a.agent.reconcile();
    const routes = ipJson(a.ns.name, ['route', 'show', 'dev', 'flannel.42']).filter(
      (r: { gateway?: string }) => r.gateway,
    );
    expect(routes.map((r: { dst: string }) => r.dst)).toEqual(['10.247.1.0/24']);
    expect(
      ipJson(a.ns.name, ['neigh', 'show', 'dev', 'flannel.42']).map((x: { dst: string }) => x.dst),
    ).toEqual(['10.247.1.0']);
    const gone = inNetns(a.pod!.name, 'ping', ['-c', '1', '-W', '1', c.pod!.ip]);
    expect(gone.status).not.toBe(0);
  });

  it('with directRouting routes between same-subnet nodes without VXLAN: tshark sees plain ICMP only', async () => {
    const [a, b] = nodes as [LinuxNode, LinuxNode];
    const direct = [a, b].map(
      (n) =>
        new VxlanAgent({ store, datapath: n.dp, node: n.name, publicIp: n.ip, underlayDevice: 'eth0', vni: VNI, network: '10.247.0.0/16', directRouting: true }),
    );
    for (const d of direct) await d.setup();
    for (const d of direct) expect((await d.reconcile()).remotes.map((r) => r.mode)).toEqual(['direct']);
    const routes = ipJson(a.ns.name, ['route', 'show', '10.247.1.0/24']);
    expect(routes).toMatchObject([{ dst: '10.247.1.0/24', gateway: '192.168.77.12', dev: 'eth0' }]);
    expect(ipJson(a.ns.name, ['route', 'show', 'dev', 'flannel.42']).filter((r: { gateway?: string }) => r.gateway)).toEqual([]);
    const rows = await captureRows('u0', () => {
      const ab = inNetns(a.pod!.name, 'ping', ['-c', '2', '-W', '2', b.pod!.ip]);
      expect(ab.status, ab.stdout + ab.stderr).toBe(0);
    });
    expect(rows.length).toBeGreaterThanOrEqual(2);
    // No VNI, no outer header: the pod addresses travel as they are.
    expect(rows.every((f) => f[0] === '' && !f[1]!.includes(',')), JSON.stringify(rows)).toBe(true);
    expect(rows.some((f) => f[1] === a.pod!.ip && f[2] === b.pod!.ip && f[3] === '8')).toBe(true);
    expect(rows.some((f) => f[1] === b.pod!.ip && f[2] === a.pod!.ip && f[3] === '0')).toBe(true);
  }, 60_000);
});
