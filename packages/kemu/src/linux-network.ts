// The real-kernel network of a whole cluster, the counterpart of SimClusterNetwork: every node is a Linux
// network namespace whose eth0 is a veth into an underlay namespace holding one bridge; each node runs the
// CNI chain (bridge + host-local + portmap) in process through the netlink datapath pointed at the node's
// namespace, and nodes route each other's pod CIDRs via the node IPs (host-gw; no NAT between pods).
// Nothing touches the machine's own namespace: the underlay is a namespace too.
import type { ClusterBgp } from './bgp-routing.js';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createLinuxDatapath, HOST_NETNS, isDatapathError, type LinuxDatapath } from '@kemu/cni';
import { ipFamily } from '@kemu/ip';
import { linuxRuleSink, type RuleSink } from '@kemu/kube-proxy';
import type { ClusterNetwork, ClusterNetworkOptions, NodeNetwork, ProbeResult, UdpExchange } from './cluster-network.js';
import { serveUdpInNetns, udpExchangeInNetns } from './udp-relay.js';
import {
  CLUSTER_NETWORK,
  addHostGwRoutes,
  clusterPlugins,
  countIpFiles,
  nodeCni,
  type NodeRoutes,
  type OverlayKind,
  RecoveringNetwork,
  uplinkName,
} from './sim-network.js';

const IP = '/usr/sbin/ip';
const NSENTER = '/usr/bin/nsenter';
const PING = '/usr/bin/ping';
const NETNS_DIR = '/run/netns';

export interface LinuxNodeNetwork extends NodeNetwork {
  /** The node's namespace (the "host" namespace of its CNI chain). */
  netnsPath: string;
  datapath: LinuxDatapath;
}

function run(cmd: string, args: string[], timeoutMs = 10_000): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, out }));
  });
}

/** Why the linux datapath cannot run here, or undefined when it can. */
export function linuxUnsupportedReason(): string | undefined {
  if (process.platform !== 'linux') return 'it needs Linux';
  if (process.getuid?.() !== 0) return 'it needs root (network namespaces, veths and routes): run as root or use --datapath sim';
  for (const bin of [IP, NSENTER, PING])
    if (!fs.existsSync(bin)) return `${bin} is missing: install iproute2, util-linux and iputils-ping`;
  return undefined;
}

/** `ip netns add` that tolerates an existing namespace (a restarted cluster finds its nodes again). */
async function ensureNetns(name: string): Promise<string> {
  const p = path.join(NETNS_DIR, name);
  if (!fs.existsSync(p)) {
    const r = await run(IP, ['netns', 'add', name]);
    if (r.code !== 0 && !/File exists/.test(r.out)) throw new Error(`ip netns add ${name}: ${r.out.trim()}`);
  }
  return p;
}

async function deleteNetns(name: string): Promise<void> {
  const r = await run(IP, ['netns', 'delete', name]);
  if (r.code !== 0 && !/No such file|not found|Cannot remove/.test(r.out))
    throw new Error(`ip netns delete ${name}: ${r.out.trim()}`);
}

export class LinuxClusterNetwork implements ClusterNetwork {
  readonly nodes = new Map<string, LinuxNodeNetwork>();
  /** Names of this cluster's namespaces carry a hash of its state dir, so two clusters never collide. */
  readonly prefix: string;
  readonly underlayName: string;
  private underlay?: LinuxDatapath;
  /** bridge: host-gw routes between nodes; vxlan: each node's VxlanAgent programs the overlay instead. */
  readonly overlay: OverlayKind;
  /** With the bgp overlay: the nodes' speakers, which program the routes between nodes. */
  readonly bgp?: ClusterBgp;
  readonly onMachine = true;
  readonly probesNeedLocalNodes = false;
  readonly stateDir: string;
  readonly nodePrefixLen = 16;

  constructor(o: Pick<ClusterNetworkOptions, 'stateDir' | 'overlay' | 'bgp'>) {
    this.stateDir = o.stateDir;
    this.overlay = o.overlay ?? 'bridge';
    this.bgp = o.bgp;
    const stateDir = o.stateDir;
    this.prefix = `kemu-${createHash('sha256').update(path.resolve(stateDir)).digest('hex').slice(0, 8)}`;
    this.underlayName = `${this.prefix}-underlay`;
  }

  private async underlayDatapath(): Promise<LinuxDatapath> {
    if (this.underlay) return this.underlay;
    const p = await ensureNetns(this.underlayName);
    const dp = createLinuxDatapath({ hostNetns: p });
    if (!(await dp.getLink(HOST_NETNS, 'kemu-underlay'))) {
      // Node processes start together: another may create the bridge first.
      await dp.addLink(HOST_NETNS, { kind: 'bridge', name: 'kemu-underlay', up: true }).catch((err) => {
        if (!isDatapathError(err, 'EEXIST')) throw err;
      });
    }
    this.underlay = dp;
    return dp;
  }

  get podNetnsPrefix(): string {
    return `${this.prefix}-pod-`;
  }

  ruleSink(nodeName: string): RuleSink {
    const node = this.nodes.get(nodeName);
    if (!node) throw new Error(`node ${nodeName} is not on this cluster network`);
    return linuxRuleSink(node.netnsPath);
  }

  /**
   * UDP `port` on the node's address answered by `answer`, through a relay in the node's namespace (UDP
   * only); the node may be one of a node process.
   */
  async serveUdp(nodeName: string, port: number, answer: (payload: Buffer) => Uint8Array | undefined): Promise<() => Promise<void>> {
    // A node of a node process has its namespace on this machine too, under the cluster's prefix.
    const netnsPath = this.nodes.get(nodeName)?.netnsPath ?? path.join(NETNS_DIR, this.nodeNetnsName(nodeName));
    if (!fs.existsSync(netnsPath)) throw new Error(`node ${nodeName} has no network namespace on this machine (${netnsPath})`);
    const dir = path.join(this.stateDir, 'nodes', nodeName);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    return serveUdpInNetns(netnsPath, port, path.join(dir, `udp-${port}.sock`), answer);
  }

  /** A real datagram from the pod's namespace and the reply its connected socket took (no hop trace here). */
  async exchangeUdp(netns: string, to: string, port: number, payload: Uint8Array): Promise<UdpExchange> {
    if (!ipFamily(to)) throw new Error(`${JSON.stringify(to)} is not an IP address`);
    const r = await udpExchangeInNetns(netns, to, port, payload);
    return { reply: r.reply, error: r.error ? { message: r.error } : undefined, trace: [], text: '' };
  }

  /** Nothing to save: the kernel keeps the namespaces. */
  save(): void {}

  /** The node's namespace name; a hash keeps long node names inside what `ip netns` accepts comfortably. */
  nodeNetnsName(nodeName: string): string {
    return `${this.prefix}-${nodeName}`;
  }

  async addNode(nodeName: string, nodeIP: string, podCIDR: string): Promise<LinuxNodeNetwork> {
    const under = await this.underlayDatapath();
    const netnsPath = await ensureNetns(this.nodeNetnsName(nodeName));
    const datapath = createLinuxDatapath({ hostNetns: netnsPath });
    const uplink = uplinkName(nodeName);
    if (!(await datapath.getLink(HOST_NETNS, 'eth0'))) {
      await under.addLink(HOST_NETNS, { kind: 'veth', name: uplink, up: true, peer: { name: 'eth0', netns: netnsPath } });
      await under.setLink(HOST_NETNS, uplink, { master: 'kemu-underlay', up: true });
      await datapath.setLink(HOST_NETNS, 'eth0', { up: true });
      await datapath.addAddr(HOST_NETNS, 'eth0', `${nodeIP}/${this.nodePrefixLen}`);
    }
    await datapath.setLink(HOST_NETNS, 'lo', { up: true });
    await datapath.setSysctl(HOST_NETNS, 'net.ipv4.ip_forward', '1');

    const cni = await nodeCni(this.stateDir, nodeName, podCIDR, this.overlay, { plugins: clusterPlugins(), datapath });
    const netnsHooks = {
      create: async (p: string) => {
        await ensureNetns(path.basename(p));
      },
      remove: async (p: string) => {
        await deleteNetns(path.basename(p));
      },
    };
    const node: LinuxNodeNetwork = {
      nodeName,
      nodeIP,
      podCIDR,
      netnsPath,
      datapath,
      manager: new RecoveringNetwork(`cni on linux (${CLUSTER_NETWORK})`, cni, netnsHooks, (p) => fs.existsSync(p)),
      netnsHooks,
    };
    this.nodes.set(nodeName, node);
    if (this.overlay === 'bridge') await this.addNodeRoutes(node);
    else if (this.overlay === 'bgp') await this.bgp?.addNode(nodeName, nodeIP, podCIDR, datapath);
    return node;
  }

  /** Addresses host-local holds on a node (on disk, in the reference plugin's layout). */
  async allocatedIps(nodeName: string): Promise<number> {
    return countIpFiles(path.join(this.stateDir, 'nodes', nodeName, 'cni', 'ipam', CLUSTER_NETWORK));
  }

  /** Host-gw routes between a node that just joined and every other node. */
  async addNodeRoutes(m: NodeRoutes): Promise<void> {
    await addHostGwRoutes(this.nodes.values(), m);
  }

  /** A real ping from a pod's network namespace. */
  async probe(netns: string, to: string, port?: number): Promise<ProbeResult> {
    if (!netns.startsWith('/') || netns.includes('\0')) throw new Error(`invalid network namespace path ${netns}`);
    if (!ipFamily(to)) throw new Error(`${JSON.stringify(to)} is not an IP address`);
    if (port !== undefined) {
      if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`invalid port ${port}`);
      // A TCP connect from inside the pod's namespace; address and port go in as arguments, not code.
      const script =
        "const s=require('net').connect({host:process.argv[1],port:+process.argv[2],timeout:3000});" +
        "s.on('connect',()=>{console.log('connected');s.destroy()});s.on('error',(e)=>{console.log('error '+e.code);});" +
        "s.on('timeout',()=>{console.log('error ETIMEDOUT');s.destroy()});";
      const r = await run(NSENTER, [`--net=${netns}`, '--', process.execPath, '-e', script, to, String(port)], 15_000);
      const ok = /^connected/m.test(r.out);
      return {
        reachable: ok,
        transmitted: 1,
        received: ok ? 1 : 0,
        error: ok ? undefined : { code: /error (\S+)/.exec(r.out)?.[1], message: r.out.trim().split('\n').pop() ?? 'no answer' },
        trace: [],
        text: r.out,
      };
    }
    const r = await run(NSENTER, [`--net=${netns}`, '--', PING, '-c', '1', '-W', '2', '-n', to], 15_000);
    const m = /(\d+) packets transmitted, (\d+) received/.exec(r.out);
    const transmitted = m ? Number(m[1]) : 0;
    const received = m ? Number(m[2]) : 0;
    return {
      reachable: received > 0,
      transmitted,
      received,
      error: received > 0 ? undefined : { message: r.out.trim().split('\n').pop() ?? 'no reply' },
      trace: [],
      text: r.out,
    };
  }

  /**
   * Removes every namespace of this cluster (nodes, underlay, and pods that could not be torn down),
   * including those made by node processes.
   */
  async destroy(): Promise<void> {
    const mine = (fs.existsSync(NETNS_DIR) ? fs.readdirSync(NETNS_DIR) : []).filter((n) => n.startsWith(`${this.prefix}-`));
    // Pods first, then nodes, then the underlay their uplinks hang on.
    const rank = (n: string) => (n.startsWith(`${this.prefix}-pod-`) ? 0 : n === this.underlayName ? 2 : 1);
    for (const n of mine.sort((a, b) => rank(a) - rank(b))) await deleteNetns(n);
    this.nodes.clear();
    this.underlay = undefined;
  }
}
