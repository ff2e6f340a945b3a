// The simulated network of a whole cluster: one netsim world in which every node is a namespace joined to
// an underlay bridge (its eth0 holds the node IP), each node runs the CNI chain (bridge + host-local +
// portmap) in process on its own view of the world, and nodes route each other's pod CIDRs through the
// underlay ("host-gw" style; no NAT between pods), so a packet can be traced from a pod on one node to a pod
// on another.
import type { ClusterBgp } from './bgp-routing.js';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type CniPlugin, type Datapath, HOST_NETNS, InProcessInvoker, type InProcessInvokerOptions } from '@kemu/cni';
import { vxlan } from '@kemu/cni-vxlan';
import { createSimDatapath, type SimDatapath } from '@kemu/cni/datapath-sim';
import { bridge } from '@kemu/cni-bridge';
import { createHostLocal, hostLocal, MemoryIpam } from '@kemu/cni-host-local';
import { loopback } from '@kemu/cni-loopback';
import { portmap } from '@kemu/cni-portmap';
import { CniNetwork, type NetworkManager, type PodNetworkRequest, simNetnsHooks } from '@kemu/cri';
import { type RuleSink, simRuleSink } from '@kemu/kube-proxy';
import type { FilterSink } from '@kemu/network-policy';
import { formatTrace, World } from '@kemu/netsim';
import type { ClusterNetwork, ClusterNetworkOptions, NodeNetwork, ProbeResult, UdpExchange } from './cluster-network.js';

export const UNDERLAY_NS = '/run/kemu/underlay';
export const UNDERLAY_BRIDGE = 'kemu-underlay';
export const CLUSTER_NETWORK = 'kemu';

/**
 * The underlay-side name of a node's uplink. Interface names are limited to 15 bytes, so a prefix of the
 * node name would collide (kemu-node-10 / kemu-node-100); a hash of the name is short, stable across
 * restarts, and unique in practice.
 */
export function uplinkName(nodeName: string): string {
  return `up-${createHash('sha256').update(nodeName).digest('hex').slice(0, 12)}`;
}

export interface SimNodeNetwork extends NodeNetwork {
  /** The world namespace that is this node's root namespace. */
  hostNamespace: string;
  datapath: SimDatapath;
}

/** The node's CNI configuration: bridge + host-local from the node's pod CIDR, then portmap. */
/** bridge: host-gw routes the cluster programs; vxlan: flannel-style overlay; bgp: routes learned over BGP. */
export type OverlayKind = 'bridge' | 'vxlan' | 'bgp';

/** What the node's CNI chain needs besides its pod CIDR: the overlay and, for vxlan, the agent's subnet.env. */
export interface ConflistOptions {
  overlay: OverlayKind;
  /** kemu-vxlan: flannel's subnet.env written by the node's VxlanAgent, and the plugin's own data dir. */
  subnetFile: string;
  dataDir: string;
}

export function writeClusterConflist(confDir: string, podCIDR: string, ipamDir: string, o?: ConflistOptions): void {
  const main =
    o?.overlay === 'vxlan'
      ? {
          // flannel's shape: the plugin reads the agent's subnet.env and delegates to bridge + host-local;
          // pods keep their source addresses across nodes (nothing outside the cluster to masquerade to).
          type: 'kemu-vxlan',
          subnetFile: o.subnetFile,
          dataDir: o.dataDir,
          delegate: { type: 'bridge', bridge: 'cni0', hairpinMode: true, ipMasq: false, ipam: { type: 'host-local', ranges: [[{ subnet: podCIDR }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: ipamDir } },
        }
      : undefined;
  fs.writeFileSync(
    path.join(confDir, `10-${CLUSTER_NETWORK}.conflist`),
    JSON.stringify(
      {
        cniVersion: '1.0.0',
        name: CLUSTER_NETWORK,
        plugins: [
          main ?? {
            type: 'bridge',
            bridge: 'cni0',
            isGateway: true,
            // Pod-to-pod traffic crosses nodes unmodified; there is no outside world to masquerade to.
            ipMasq: false,
            hairpinMode: true,
            ipam: {
              type: 'host-local',
              ranges: [[{ subnet: podCIDR }]],
              routes: [{ dst: '0.0.0.0/0' }],
              dataDir: ipamDir,
            },
          },
          { type: 'portmap', capabilities: { portMappings: true }, snat: true },
        ],
      },
      null,
      2,
    ),
  );
}

/** A node's CNI runtime: its conflist under `<stateDir>/nodes/<node>/cni/net.d`, run by an in-process invoker. */
export async function nodeCni(
  stateDir: string,
  nodeName: string,
  podCIDR: string,
  overlay: OverlayKind,
  invoker: InProcessInvokerOptions,
): Promise<CniNetwork> {
  const dir = path.join(stateDir, 'nodes', nodeName, 'cni');
  const confDir = path.join(dir, 'net.d');
  fs.mkdirSync(confDir, { recursive: true, mode: 0o700 });
  writeClusterConflist(confDir, podCIDR, path.join(dir, 'ipam'), {
    overlay,
    subnetFile: path.join(dir, 'subnet.env'),
    dataDir: path.join(dir, 'vxlan'),
  });
  const cni = new CniNetwork({
    confDir,
    binDirs: [path.join(dir, 'bin')],
    cacheDir: path.join(dir, 'cache'),
    invoker: new InProcessInvoker(invoker),
  });
  await cni.refresh();
  return cni;
}

/** The in-process plugins every node's chain may name. */
export function clusterPlugins(hostLocalPlugin: CniPlugin = hostLocal): Record<string, CniPlugin> {
  return { bridge, 'host-local': hostLocalPlugin, portmap, loopback, [vxlan.name]: vxlan };
}

/** host-local's on-disk allocations: one file per address. */
export function countIpFiles(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  return fs.readdirSync(dir).filter((f) => /^[\d.]+$/.test(f) || f.includes(':')).length;
}

/**
 * The node's CNI-backed manager, plus what a restart needs: with the saved world (or a real kernel), a
 * recovered sandbox's namespace and interfaces are still there, as a kernel's would be when only the
 * runtime restarted. Without it, the namespace is recreated and the chain run again: DEL (host-local, like
 * the reference, refuses a second ADD for a container that holds an address), then ADD, so the pod may
 * get a new address. The pod's namespace itself is the runtime's to report (PodSandboxStatus).
 */
export class RecoveringNetwork implements NetworkManager {
  constructor(
    readonly name: string,
    private readonly inner: CniNetwork,
    private readonly hooks: { create(p: string): Promise<void> },
    private readonly hasNamespace: (p: string) => boolean,
  ) {}
  status() {
    return this.inner.status();
  }
  setUp(req: PodNetworkRequest) {
    return this.inner.setUp(req);
  }
  tearDown(req: PodNetworkRequest) {
    return this.inner.tearDown(req);
  }
  updatePodCidr(cidr: string) {
    return this.inner.updatePodCidr(cidr);
  }
  async recover(held: PodNetworkRequest[]) {
    for (const r of held) {
      if (!r.netnsPath || this.hasNamespace(r.netnsPath)) continue;
      await this.hooks.create(r.netnsPath);
      await this.inner.tearDown(r);
      await this.inner.setUp(r);
    }
  }
}

/** What host-gw routing needs of a node. */
export interface NodeRoutes {
  nodeName: string;
  podCIDR: string;
  nodeIP: string;
  datapath: Datapath;
}

/**
 * Host-gw routes for a node that just joined, in both directions: it routes every other node's pod CIDR via
 * that node's IP, and every other node routes its CIDR via its IP (O(nodes) per join, not a full resync).
 */
export async function addHostGwRoutes(nodes: Iterable<NodeRoutes>, m: NodeRoutes): Promise<void> {
  for (const n of nodes) {
    if (n.nodeName === m.nodeName) continue;
    await m.datapath.addRoute(HOST_NETNS, { dst: n.podCIDR, via: n.nodeIP, dev: 'eth0' }, { replace: true });
    await n.datapath.addRoute(HOST_NETNS, { dst: m.podCIDR, via: m.nodeIP, dev: 'eth0' }, { replace: true });
  }
}

export class SimClusterNetwork implements ClusterNetwork {
  readonly world: World;
  readonly nodes = new Map<string, SimNodeNetwork>();
  /** bridge: host-gw routes between nodes; vxlan: each node's VxlanAgent programs the overlay instead. */
  readonly overlay: OverlayKind;
  /** With the bgp overlay: the nodes' speakers, which program the routes between nodes. */
  readonly bgp?: ClusterBgp;
  readonly onMachine = false;
  readonly podNetnsPrefix = 'kemu-pod-';
  readonly probesNeedLocalNodes = true;
  readonly persist: boolean;
  readonly stateDir: string;
  readonly nodePrefixLen = 16;
  /**
   * With a routed underlay the underlay namespace is a router (a top-of-rack switch that learned the pod
   * CIDRs): one route per node there, and each node sends the pod network to it. Host-gw needs nodes²
   * routes, which a 5,000-node cluster cannot hold; the cluster switches beyond 255 nodes.
   */
  readonly routedUnderlay: boolean;
  /** The cluster's pod network, which nodes route to the underlay router. */
  readonly podNetwork: string;
  /** The underlay router's address (the bridge's own address in the node subnet). */
  readonly underlayGateway: string;
  /** The Services' cluster IP range. */
  readonly serviceNetwork: string;
  private underlayReady = false;

  private readonly saveFile: string;
  /**
   * Without persistence nothing outlives the process, so address allocations and cached results stay in
   * memory (the file work per ADD was a third of a pod's CPU); with it, host-local keeps its on-disk layout.
   */
  readonly ipam?: MemoryIpam;
  private readonly hostLocal = hostLocal;

  /** With `persist`, the world is loaded from and saved to `<stateDir>/netsim.json` (durable stores). */
  constructor(o: Omit<ClusterNetworkOptions, 'datapath'>) {
    this.stateDir = o.stateDir;
    this.persist = o.persist ?? false;
    this.overlay = o.overlay ?? 'bridge';
    this.bgp = o.bgp;
    this.routedUnderlay = o.routedUnderlay ?? false;
    this.podNetwork = o.podNetwork ?? '10.244.0.0/16';
    this.underlayGateway = o.underlayGateway ?? '172.18.0.1';
    this.serviceNetwork = o.serviceNetwork ?? '10.96.0.0/12';
    const persist = this.persist;
    this.saveFile = path.join(this.stateDir, 'netsim.json');
    if (!persist) {
      this.ipam = new MemoryIpam();
      this.hostLocal = createHostLocal({ store: this.ipam });
    }
    this.world =
      persist && fs.existsSync(this.saveFile)
        ? World.fromJSON(JSON.parse(fs.readFileSync(this.saveFile, 'utf8')))
        : new World({ seed: 7 });
  }

  /** Writes the world so a restarted cluster finds its pods' namespaces and interfaces again. */
  save(): void {
    if (!this.persist) return;
    const tmp = `${this.saveFile}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(this.world.toJSON()), { mode: 0o600 });
    fs.renameSync(tmp, this.saveFile);
  }

  private async underlay(dp: SimDatapath) {
    if (this.underlayReady || this.world.hasNamespace(UNDERLAY_NS)) {
      this.underlayReady = true;
      return;
    }
    await dp.addNetns(UNDERLAY_NS);
    await dp.addLink(UNDERLAY_NS, { kind: 'bridge', name: UNDERLAY_BRIDGE, up: true });
    if (this.routedUnderlay) {
      await dp.addAddr(UNDERLAY_NS, UNDERLAY_BRIDGE, `${this.underlayGateway}/${this.nodePrefixLen}`);
      await dp.setSysctl(UNDERLAY_NS, 'net.ipv4.ip_forward', '1');
    }
    this.underlayReady = true;
  }

  /** Adds a node: its namespace, uplink to the underlay, and its CNI configuration. */
  async addNode(nodeName: string, nodeIP: string, podCIDR: string): Promise<SimNodeNetwork> {
    const hostNamespace = `/run/kemu/nodes/${nodeName}`;
    const datapath = createSimDatapath({ world: this.world, hostNamespace });
    await this.underlay(datapath);
    const uplink = uplinkName(nodeName);
    if (!(await datapath.getLink(HOST_NETNS, 'eth0'))) {
      await datapath.addLink(HOST_NETNS, {
        kind: 'veth',
        name: 'eth0',
        up: true,
        peer: { name: uplink, netns: UNDERLAY_NS },
      });
      await datapath.setLink(UNDERLAY_NS, uplink, { master: UNDERLAY_BRIDGE, up: true });
      await datapath.addAddr(HOST_NETNS, 'eth0', `${nodeIP}/${this.nodePrefixLen}`);
      await datapath.setSysctl(HOST_NETNS, 'net.ipv4.ip_forward', '1');
    }
    // br_netfilter, as Kubernetes requires: replies between pods on one bridge meet kube-proxy's NAT.
    this.world.setSysctl(hostNamespace, 'net.bridge.bridge-nf-call-iptables', '1');

    const cni = await nodeCni(this.stateDir, nodeName, podCIDR, this.overlay, {
      plugins: clusterPlugins(this.hostLocal),
      datapath,
      resultCache: this.persist ? undefined : 'memory',
    });
    const netnsHooks = simNetnsHooks(datapath);
    const node: SimNodeNetwork = {
      nodeName,
      nodeIP,
      podCIDR,
      hostNamespace,
      datapath,
      manager: new RecoveringNetwork(`cni on netsim (${CLUSTER_NETWORK})`, cni, netnsHooks, (p) =>
        this.world.hasNamespace(p),
      ),
      netnsHooks,
    };
    this.nodes.set(nodeName, node);
    // Service addresses route like any off-node destination (a real node's default route): the lookup
    // succeeds, so kube-proxy's rules (DNAT, or REJECT without endpoints) decide, not "no route".
    await datapath.addRoute(HOST_NETNS, { dst: this.serviceNetwork, via: this.underlayGateway, dev: 'eth0' }, { replace: true });
    if (this.overlay === 'bridge' && this.routedUnderlay) {
      await datapath.addRoute(HOST_NETNS, { dst: this.podNetwork, via: this.underlayGateway, dev: 'eth0' }, { replace: true });
      await datapath.addRoute(UNDERLAY_NS, { dst: podCIDR, via: nodeIP, dev: UNDERLAY_BRIDGE }, { replace: true });
    } else if (this.overlay === 'bridge') await this.addNodeRoutes(node);
    else if (this.overlay === 'bgp') await this.bgp?.addNode(nodeName, nodeIP, podCIDR, datapath);
    return node;
  }

  /** Addresses host-local holds on a node. */
  async allocatedIps(nodeName: string): Promise<number> {
    const dataDir = path.join(this.stateDir, 'nodes', nodeName, 'cni', 'ipam');
    if (this.ipam) return (await this.ipam.allocations(dataDir, CLUSTER_NETWORK)).size;
    return countIpFiles(path.join(dataDir, CLUSTER_NETWORK));
  }

  /** Host-gw routes between a node that just joined and every other node. */
  async addNodeRoutes(m: NodeRoutes): Promise<void> {
    await addHostGwRoutes(this.nodes.values(), m);
  }

  /** Pings `to` (or connects to `to:port` over TCP) from a pod's namespace, with the hop-by-hop trace. */
  async probe(netns: string, to: string, port?: number): Promise<ProbeResult> {
    if (!this.world.hasNamespace(netns)) throw new Error(`${netns} is no network namespace of this cluster`);
    if (port !== undefined) {
      const r = this.world.tcpConnect(netns, to, port);
      const ok = r.state === 'established';
      return {
        reachable: ok,
        transmitted: 1,
        received: ok ? 1 : 0,
        error: ok ? undefined : { code: r.error?.code ?? r.state, message: r.error?.message ?? `connection ${r.state}` },
        trace: r.trace,
        text: formatTrace(r.trace),
      };
    }
    const r = this.world.ping(netns, to, { count: 1 });
    return {
      reachable: r.reachable,
      transmitted: r.transmitted,
      received: r.received,
      error: r.error ?? (r.errors[0] ? { message: r.errors[0].message } : undefined),
      trace: r.trace,
      text: formatTrace(r.trace),
    };
  }

  async serveUdp(nodeName: string, port: number, answer: (payload: Buffer) => Uint8Array | undefined, o: { tcp?: boolean } = {}): Promise<() => Promise<void>> {
    const node = this.nodes.get(nodeName);
    if (!node) throw new Error(`node ${nodeName} is not on this cluster network`);
    // A saved world keeps the listeners; the answerer is this process's.
    for (const proto of o.tcp ? (['udp', 'tcp'] as const) : (['udp'] as const)) {
      try {
        this.world.unlisten(node.hostNamespace, { proto, port });
      } catch (err) {
        if ((err as { code?: string }).code !== 'ENOENT') throw err;
      }
    }
    this.world.answerUdp(node.hostNamespace, { port }, answer);
    if (o.tcp) this.world.listen(node.hostNamespace, { proto: 'tcp', port });
    // Nothing outlives the process: the world goes with it.
    return async () => {};
  }

  async exchangeUdp(netns: string, to: string, port: number, payload: Uint8Array): Promise<UdpExchange> {
    if (!this.world.hasNamespace(netns)) throw new Error(`${netns} is no network namespace of this cluster`);
    const r = this.world.udpExchange(netns, to, port, payload);
    const error = r.error ?? (r.icmpError ? { message: `${r.icmpError.message} from ${r.icmpError.from}` } : r.reply ? undefined : { message: 'no reply' });
    return { reply: r.reply?.payload, error, trace: r.trace, text: formatTrace(r.trace) };
  }

  ip6FilterSink(nodeName: string): FilterSink {
    const node = this.nodes.get(nodeName);
    if (!node) throw new Error(`node ${nodeName} is not on this cluster network`);
    const ns = node.hostNamespace;
    return {
      save: async () => this.world.iptablesSave(ns, { family: 6, table: 'filter' }),
      restore: async (text) => this.world.iptablesRestore(ns, text, { family: 6, noflush: true }),
    };
  }

  ruleSink(nodeName: string): RuleSink {
    const node = this.nodes.get(nodeName);
    if (!node) throw new Error(`node ${nodeName} is not on this cluster network`);
    return simRuleSink(this.world, node.hostNamespace);
  }

  async destroy(): Promise<void> {}
}
