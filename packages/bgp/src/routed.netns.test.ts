// Calico-style routing in the kernel: three "nodes" as network namespaces joined by an underlay bridge,
// calico IPAM blocks per node, pods (namespaces) plumbed calico-style, and one real `kemu-bgp` process per
// node, running inside the node's namespace, peering over real TCP on the underlay and programming
// `<block> via <node IP>` through the linux Datapath. Pods on different nodes ping each other; tshark on the
// underlay sees the ICMP between pod addresses and no VXLAN at all. Needs root, iproute2 and tshark.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLinuxDatapath, HOST_NETNS, type LinuxDatapath } from '@kemu/cni';
import { addNetns, delAllNetns, inNetns, ipJson, tsharkCapture } from '@kemu/cni/testing';
import { CalicoIpam } from '@kemu/cni-calico';
import { createMemoryStore, type Store } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { plumbPod, POOL, prepareNode, until } from './routed.test-util.js';

const ok = requirePeers('the BGP-routed netns tests', [peers.netns, peers.tshark]);

const cli = fileURLToPath(new URL('./cli.ts', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'kemu-bgp-routed-netns-'));

interface LinuxNode {
  name: string;
  ns: { name: string; path: string };
  ip: string;
  dp: LinuxDatapath;
  block: string;
  pod: { name: string; path: string; ip: string };
  bgp?: ChildProcess;
  stderr: string;
}

const nodes: LinuxNode[] = [];
let underlay: { name: string; path: string };
let underDp: LinuxDatapath;
let store: Store;

afterAll(async () => {
  for (const n of nodes) {
    if (n.bgp && n.bgp.exitCode === null) {
      n.bgp.kill('SIGKILL');
      await new Promise((r) => n.bgp!.once('exit', r));
    }
    await n.dp.close?.();
  }
  await underDp?.close?.();
  await store?.close();
  delAllNetns();
  rmSync(tmp, { recursive: true, force: true });
});

/** Kernel routes for pool blocks that go via another node: `[dst, gateway, dev]`, sorted. */
function kernelBlockRoutes(n: LinuxNode): [string, string, string][] {
  return ipJson(n.ns.name, ['route', 'show'])
    .filter((r: { dst: string; gateway?: string }) => r.gateway && r.dst.startsWith('10.250.'))
    .map((r: { dst: string; gateway: string; dev: string }): [string, string, string] => [r.dst, r.gateway, r.dev])
    .sort((a: string[], b: string[]) => (a[0]! < b[0]! ? -1 : 1));
}

const expected = (n: LinuxNode) =>
  nodes
    .filter((o) => o !== n)
    .map((o): [string, string, string] => [o.block, o.ip, 'eth0'])
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));

/**
 * Starts `kemu-bgp` inside the node's namespace, advertising its block: full mesh with the other nodes, or,
 * with `reflector`, that node reflects for the others (which peer with it alone).
 */
function startSpeaker(n: LinuxNode, reflector?: LinuxNode): void {
  const args = ['--router-id', n.ip, '--as', '64512', '--listen', `${n.ip}:179`];
  if (!reflector) {
    for (const o of nodes) if (o !== n) args.push('--peer', `${o.ip}:179:64512`);
  } else if (n === reflector) {
    args.push('--route-reflector', '--cluster-id', '0.0.0.9');
    for (const o of nodes) if (o !== n) args.push('--rr-client', `${o.ip}:179:64512`);
  } else {
    args.push('--peer', `${reflector.ip}:179:64512`);
  }
  args.push('--advertise', n.block, '--install-routes', '--rib-out', join(tmp, `${n.name}.rib.json`));
  args.push('--connect-retry', '1', '--hold-time', '9');
  // No shell: ip netns exec runs node directly, with the speaker's arguments as they are.
  const child = spawn(
    'ip',
    ['netns', 'exec', n.ns.name, process.execPath, '--conditions=@kemu/source', '--import', 'tsx', cli, ...args],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, KEMU_DATAPATH: 'linux' } },
  );
  n.stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    n.stderr += d.toString();
  });
  n.bgp = child;
}

function capture(port: string, fn: () => void): Promise<string[][]> {
  return tsharkCapture(
    {
      netns: underlay.name,
      iface: port,
      filter: 'icmp or udp port 4789 or udp port 8472',
      decodeAs: ['udp.port==4789,vxlan', 'udp.port==8472,vxlan'],
      fields: ['vxlan.vni', 'ip.src', 'ip.dst', 'icmp.type', 'udp.dstport'],
      dir: tmp,
    },
    fn,
  );
}

describe.runIf(ok)('BGP-routed pod networking on the Linux datapath (kemu-bgp per node, no encapsulation)', () => {
  beforeAll(async () => {
    store = await createMemoryStore();
    const ipam = new CalicoIpam(store);
    await ipam.applyPool('default', POOL);
    underlay = addNetns('under');
    underDp = createLinuxDatapath({ hostNetns: underlay.path });
    await underDp.addLink(HOST_NETNS, { kind: 'bridge', name: 'br0', up: true });
    for (let i = 0; i < 3; i++) {
      const name = `node-${'abc'[i]}`;
      const ns = addNetns(`rnode${i}`);
      const ip = `192.168.78.${11 + i}`;
      await underDp.addLink(HOST_NETNS, { kind: 'veth', name: `u${i}`, up: true, peer: { name: 'eth0', netns: ns.path } });
      await underDp.setLink(HOST_NETNS, `u${i}`, { master: 'br0' });
      const dp = createLinuxDatapath({ hostNetns: ns.path });
      await prepareNode(dp, ip);
      const a = await ipam.assign({ handle: `k8s-pod-network.pod-${name}`, node: name });
      await ipam.syncBlackholes(dp, name);
      const pod = addNetns(`rpod${i}`);
      await plumbPod(dp, pod.path, `cali${i}`, a.ip);
      nodes.push({ name, ns, ip, dp, block: a.block, pod: { ...pod, ip: a.ip }, stderr: '' });
    }
    for (const n of nodes) startSpeaker(n);
  }, 60_000);

  it('each node blackholes its own block and learns the others over BGP as `<block> via <node IP>` in the kernel', async () => {
    for (const n of nodes) {
      const bh = ipJson(n.ns.name, ['route', 'show', 'type', 'blackhole']).map((r: { dst: string }) => r.dst);
      expect(bh).toEqual([n.block]);
    }
    for (const n of nodes) {
      await until(
        () => JSON.stringify(kernelBlockRoutes(n)) === JSON.stringify(expected(n)),
        `${n.name}'s kernel routes ${JSON.stringify(expected(n))} (kemu-bgp said: ${n.stderr})`,
        45_000,
      );
    }
    // The sessions are real TCP connections on the underlay, port 179, one per pair of nodes.
    for (const n of nodes) {
      const ss = inNetns(n.ns.name, 'ss', ['-Htn', 'state', 'established']);
      const bgp = ss.stdout.split('\n').filter((l) => /:179\b/.test(l));
      expect(bgp.length, ss.stdout).toBe(2);
      const rib = JSON.parse(readFileSync(join(tmp, `${n.name}.rib.json`), 'utf8')) as { prefix: string; nextHop: string; asPath: number[]; peer: string | null }[];
      for (const o of nodes.filter((x) => x !== n)) {
        expect(rib.find((e) => e.prefix === o.block)).toMatchObject({ nextHop: o.ip, asPath: [], peer: o.ip });
      }
    }
  }, 60_000);

  it('pods on different nodes ping each other; the underlay carries plain ICMP between pod addresses and no VXLAN', async () => {
    const [a, b, c] = nodes as [LinuxNode, LinuxNode, LinuxNode];
    const rows = await capture('u0', () => {
      const ab = inNetns(a.pod.name, 'ping', ['-c', '2', '-W', '2', b.pod.ip]);
      expect(ab.status, ab.stdout + ab.stderr).toBe(0);
      const ca = inNetns(c.pod.name, 'ping', ['-c', '1', '-W', '2', a.pod.ip]);
      expect(ca.status, ca.stdout + ca.stderr).toBe(0);
      const bc = inNetns(b.pod.name, 'ping', ['-c', '1', '-W', '2', c.pod.ip]);
      expect(bc.status, bc.stdout + bc.stderr).toBe(0);
    });
    const text = rows.map((r) => r.join(' ')).join('\n');
    expect(rows.length, text).toBeGreaterThanOrEqual(4);
    // Nothing encapsulated: no VNI, no second IP header, no VXLAN port.
    expect(rows.every((f) => f[0] === '' && !f[1]!.includes(',') && f[4] === ''), text).toBe(true);
    const has = (src: string, dst: string, type: string) => rows.some((f) => f[1] === src && f[2] === dst && f[3] === type);
    expect(has(a.pod.ip, b.pod.ip, '8'), text).toBe(true);
    expect(has(b.pod.ip, a.pod.ip, '0'), text).toBe(true);
    expect(has(c.pod.ip, a.pod.ip, '8'), text).toBe(true);
    expect(has(a.pod.ip, c.pod.ip, '0'), text).toBe(true);
    // pod-b <-> pod-c is routed straight from node-b to node-c and never crosses node-a's port.
    expect(rows.some((f) => f[1] === b.pod.ip && f[2] === c.pod.ip), text).toBe(false);
    // TTL shows two routed hops (pod's node, then the destination node): 64 - 2.
    const ttl = inNetns(a.pod.name, 'ping', ['-c', '1', '-W', '2', b.pod.ip]);
    expect(ttl.stdout).toMatch(/ttl=62/);
  }, 60_000);

  it('a node whose speaker shuts down (Cease) is withdrawn from the other kernels, and its pod becomes unreachable', async () => {
    const [a, b, c] = nodes as [LinuxNode, LinuxNode, LinuxNode];
    c.bgp!.kill('SIGTERM');
    await new Promise((r) => c.bgp!.once('exit', r));
    for (const n of [a, b]) {
      await until(
        () => !kernelBlockRoutes(n).some((r) => r[0] === c.block),
        `${n.name} to remove ${c.block}`,
        20_000,
      );
      expect(kernelBlockRoutes(n)).toEqual(expected(n).filter((r) => r[0] !== c.block));
    }
    const gone = inNetns(a.pod.name, 'ping', ['-c', '1', '-W', '1', c.pod.ip]);
    expect(gone.status).not.toBe(0);
    const still = inNetns(a.pod.name, 'ping', ['-c', '1', '-W', '2', b.pod.ip]);
    expect(still.status, still.stdout + still.stderr).toBe(0);
  }, 60_000);

  it('route reflector: node-b and node-c peer with node-a only, learn each other’s blocks with the original next hop, and talk directly', async () => {
    const [a, b, c] = nodes as [LinuxNode, LinuxNode, LinuxNode];
    for (const n of [a, b]) {
      n.bgp!.kill('SIGTERM');
      await new Promise((r) => n.bgp!.once('exit', r));
    }
    // A speaker that stops takes the routes it installed out of its own kernel too.
    for (const n of nodes) expect(kernelBlockRoutes(n)).toEqual([]);
    for (const n of nodes) startSpeaker(n, a);
    for (const n of nodes) {
      await until(
        () => JSON.stringify(kernelBlockRoutes(n)) === JSON.stringify(expected(n)),
        `${n.name}'s kernel routes through the reflector (kemu-bgp said: ${n.stderr})`,
        45_000,
      );
    }
    const ss = inNetns(b.ns.name, 'ss', ['-Htn', 'state', 'established']);
    expect(ss.stdout.split('\n').filter((l) => /:179\b/.test(l)).length, ss.stdout).toBe(1);
    await until(() => {
      try {
        const rib = JSON.parse(readFileSync(join(tmp, `${b.name}.rib.json`), 'utf8')) as { prefix: string }[];
        return rib.some((e) => e.prefix === c.block);
      } catch {
        return false;
      }
    }, 'node-b rib-out with node-c block');
    const rib = JSON.parse(readFileSync(join(tmp, `${b.name}.rib.json`), 'utf8')) as Record<string, unknown>[];
    expect(rib.find((e) => e.prefix === c.block)).toMatchObject({
      nextHop: c.ip,
      peer: a.ip,
      originatorId: c.ip,
      clusterList: ['0.0.0.9'],
    });
    // node-a's underlay port sees none of the b<->c traffic: the reflector is control plane only.
    // (a<->b pings afterwards prove the capture was running.)
    const rows = await capture('u0', () => {
      const bc = inNetns(b.pod.name, 'ping', ['-c', '3', '-i', '0.2', '-W', '2', c.pod.ip]);
      expect(bc.status, bc.stdout + bc.stderr).toBe(0);
      const ab = inNetns(a.pod.name, 'ping', ['-c', '3', '-i', '0.2', '-W', '2', b.pod.ip]);
      expect(ab.status, ab.stdout + ab.stderr).toBe(0);
    });
    expect(rows.some((f) => f[1] === a.pod.ip && f[2] === b.pod.ip && f[3] === '8'), JSON.stringify(rows)).toBe(true);
    expect(rows.filter((f) => [f[1], f[2]].includes(c.pod.ip)), JSON.stringify(rows)).toEqual([]);
    const rowsC = await capture('u2', () => {
      const bc = inNetns(b.pod.name, 'ping', ['-c', '3', '-i', '0.2', '-W', '2', c.pod.ip]);
      expect(bc.status, bc.stdout + bc.stderr).toBe(0);
    });
    expect(rowsC.some((f) => f[0] === '' && f[1] === b.pod.ip && f[2] === c.pod.ip && f[3] === '8'), JSON.stringify(rowsC)).toBe(true);
  }, 90_000);
});
