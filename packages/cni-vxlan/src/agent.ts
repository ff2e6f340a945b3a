import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { formatIP, parseCidr, parseIP } from '@kemu/ip';
import { type Datapath, HOST_NETNS, ignoreNotFound, isDatapathError, type NetnsRef } from '@kemu/cni';
import { isStatusError, type Node, type Store, type Watch } from '@kemu/core';

/** Node annotations, spelled as flannel's kube subnet manager spells them so tools that read them agree. */
export const ANNOTATIONS = {
  backendType: 'flannel.alpha.coreos.com/backend-type',
  backendData: 'flannel.alpha.coreos.com/backend-data',
  publicIp: 'flannel.alpha.coreos.com/public-ip',
  subnetManager: 'flannel.alpha.coreos.com/kube-subnet-manager',
} as const;

export const DEFAULT_NETWORK = '10.244.0.0/16';
export const DEFAULT_SUBNET_LEN = 24;
export const DEFAULT_VNI = 1;
/** flannel's port (the Linux kernel's historic default); calico-style vxlanMode uses the IANA 4789. */
export const DEFAULT_PORT = 8472;
export const DEFAULT_DEVICE = 'flannel.1';

export interface VxlanAgentOptions {
  store: Store;
  datapath: Datapath;
  /** This node's name (a Node object in the store). */
  node: string;
  /** The node's underlay address: VXLAN packets to this node go here. */
  publicIp: string;
  /** Cluster pod network the node subnets are carved from (used when the Node has no spec.podCIDR). */
  network?: string;
  subnetLen?: number;
  vni?: number;
  port?: number;
  /** VXLAN device name (default `flannel.<vni>`, as flannel names it). */
  device?: string;
  /** Underlay device the tunnel is bound to. */
  underlayDevice?: string;
  /** VXLAN device MTU (default 1450: a 1500 underlay minus the 50-byte VXLAN overhead). */
  mtu?: number;
  /** Namespace acting as the node (default the datapath's host namespace). */
  netns?: NetnsRef;
  /** Write flannel's subnet.env here for the CNI plugin (FLANNEL_NETWORK, FLANNEL_SUBNET, ...). */
  subnetFile?: string;
  /**
   * Route to remote nodes on the same underlay subnet directly (`<podCIDR> via <node IP> dev <underlay>`)
   * and use VXLAN only across subnets: flannel's DirectRouting, calico's CrossSubnet. Needs
   * `underlayDevice`.
   */
  directRouting?: boolean;
  /**
   * Masquerade pod traffic that leaves the cluster network (default true, as flanneld --ip-masq); the CNI
   * bridge then does no NAT of its own, so pod-to-pod traffic across nodes keeps its source address.
   */
  ipMasq?: boolean;
  /** Called after each reconcile pass fails (the watch keeps going). */
  onError?: (e: unknown) => void;
}

export interface RemoteNode {
  name: string;
  subnet: string;
  /** The remote VTEP's overlay address: the subnet's network address, as flannel uses it. */
  vtepIp: string;
  vtepMac: string;
  publicIp: string;
  /** How the node is reached: through the tunnel, or routed directly on the shared underlay subnet. */
  mode?: 'vxlan' | 'direct';
}

/** What is programmed for the remote nodes after a reconcile pass. */
export interface ReconcileReport {
  remotes: RemoteNode[];
  added: string[];
  removed: string[];
}

const isObj = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);

function networkAddress(cidr: string): string {
  const c = parseCidr(cidr);
  if (!c) throw new Error(`invalid subnet ${JSON.stringify(cidr)}`);
  const bits = c.family === 4 ? 32 : 128;
  const m = ((1n << BigInt(bits)) - 1n) ^ ((1n << BigInt(bits - c.prefix)) - 1n);
  return formatIP(c.family, c.ip & m);
}

/** Namespace of the subnet Lease objects (one per handed-out subnet). */
export const LEASE_NAMESPACE = 'kube-system';

export const subnetLeaseName = (cidr: string) => `kemu-vxlan-${cidr.replace(/[./]/g, '-')}`;

function sameSubnet(ifaceCidr: string, ip: string): boolean {
  const c = parseCidr(ifaceCidr);
  const p = parseIP(ip);
  if (!c || !p || c.family !== p.family) return false;
  const bits = c.family === 4 ? 32 : 128;
  const m = ((1n << BigInt(bits)) - 1n) ^ ((1n << BigInt(bits - c.prefix)) - 1n);
  return (c.ip & m) === (p.value & m);
}

function cidrWithin(outer: string, inner: string): boolean {
  const o = parseCidr(outer);
  const i = parseCidr(inner);
  if (!o || !i || o.family !== i.family || i.prefix < o.prefix) return false;
  return sameSubnet(outer, formatIP(i.family, i.ip));
}

/**
 * Leases a pod subnet for `node`: its spec.podCIDR when set, else the first `subnetLen` subnet of
 * `network` that no Node holds. The claim is a Lease object named after the subnet (a create, so of two
 * nodes racing for one subnet exactly one gets it; a lease whose holder's Node is gone may be taken over),
 * then the subnet is written to the Node's spec.podCIDR.
 */
export async function leaseSubnet(
  store: Store,
  node: string,
  network = DEFAULT_NETWORK,
  subnetLen = DEFAULT_SUBNET_LEN,
): Promise<string> {
  const net = parseCidr(network);
  if (net?.family !== 4) throw new Error(`network ${JSON.stringify(network)}: must be an IPv4 CIDR`);
  if (!Number.isInteger(subnetLen) || subnetLen < net.prefix || subnetLen > 30) {
    throw new Error(`subnetLen ${subnetLen}: must be between ${net.prefix} and 30`);
  }
  const isReason = (e: unknown, r: string) => isStatusError(e) && e.reason === r;
  const step = 1n << BigInt(32 - subnetLen);
  const count = 1n << BigInt(subnetLen - net.prefix);
  const base = parseIP(networkAddress(network))!.value;
  for (let attempt = 0; attempt < 100; attempt++) {
    const me = (await store.get('Node', '', node)) as Node;
    if (me.spec?.podCIDR) return me.spec.podCIDR;
    const all = (await store.list('Node')).items as Node[];
    const names = new Set(all.map((n) => n.metadata.name));
    const used = new Set(all.map((n) => n.spec?.podCIDR).filter(Boolean));
    let pick: string | undefined;
    for (let i = 0n; i < count && !pick; i++) {
      const c = `${formatIP(4, base + i * step)}/${subnetLen}`;
      if (used.has(c)) continue;
      const lease = {
        apiVersion: 'coordination.k8s.io/v1' as const,
        kind: 'Lease' as const,
        metadata: { name: subnetLeaseName(c), namespace: LEASE_NAMESPACE, labels: { 'app.kubernetes.io/managed-by': 'kemu-vxlan' } },
        spec: { holderIdentity: node },
      };
      try {
        await store.create(lease);
        pick = c;
      } catch (e) {
        if (!isReason(e, 'AlreadyExists')) throw e;
        const cur = await store.get('Lease', LEASE_NAMESPACE, lease.metadata.name).catch(() => undefined);
        const holder = cur?.spec?.holderIdentity;
        if (cur && (holder === node || !holder || !names.has(holder))) {
          // Ours from an earlier try, or left behind by a node that is gone: take it (compare-and-swap).
          try {
            await store.update({ ...cur, spec: { ...cur.spec, holderIdentity: node } });
            pick = c;
          } catch (e2) {
            if (!isReason(e2, 'Conflict') && !isReason(e2, 'NotFound')) throw e2;
          }
        }
      }
    }
    if (!pick) throw new Error(`no free /${subnetLen} subnet left in ${network}`);
    try {
      await store.update({ ...me, spec: { ...me.spec, podCIDR: pick, podCIDRs: [pick] } });
      return pick;
    } catch (e) {
      // The Node changed under us (maybe a podCIDR was assigned): re-read; the lease stays ours.
      if (!isReason(e, 'Conflict')) throw e;
    }
  }
  throw new Error(`could not lease a subnet for node ${node}: too much contention`);
}

/** Reads a Node's overlay parameters from its annotations; undefined when it has not joined (yet). */
export function remoteOf(n: Node, vni: number): RemoteNode | undefined {
  const a = n.metadata.annotations ?? {};
  const subnet = n.spec?.podCIDR;
  const publicIp = a[ANNOTATIONS.publicIp];
  if (!subnet || !publicIp || a[ANNOTATIONS.backendType] !== 'vxlan') return undefined;
  let data: unknown;
  try {
    data = JSON.parse(a[ANNOTATIONS.backendData] ?? '');
  } catch {
    return undefined;
  }
  if (!isObj(data) || data.VNI !== vni || typeof data.VtepMAC !== 'string') return undefined;
  if (!parseIP(publicIp) || !parseCidr(subnet)) return undefined;
  return {
    name: n.metadata.name!,
    subnet,
    vtepIp: networkAddress(subnet),
    vtepMac: data.VtepMAC.toLowerCase(),
    publicIp,
  };
}

/**
 * One node's side of the overlay: leases the node's subnet, creates the VXLAN device, announces the
 * VTEP on the Node object, and keeps one route, one neighbour and one FDB entry per remote node in
 * step with the Nodes in the store. Works through the Datapath, so on Linux and on netsim alike.
 */
export class VxlanAgent {
  readonly vni: number;
  readonly port: number;
  readonly device: string;
  private readonly netns: NetnsRef;
  private subnet?: string;
  private mac?: string;
  private watch?: Watch<Node>;
  private loop?: Promise<void>;
  private pending: Promise<ReconcileReport> = Promise.resolve({ remotes: [], added: [], removed: [] });
  private queued?: Promise<ReconcileReport>;
  private programmed = new Map<string, RemoteNode>();

  constructor(readonly opts: VxlanAgentOptions) {
    this.vni = opts.vni ?? DEFAULT_VNI;
    this.port = opts.port ?? DEFAULT_PORT;
    this.device = opts.device ?? `flannel.${this.vni}`;
    this.netns = opts.netns ?? HOST_NETNS;
    if (!Number.isInteger(this.vni) || this.vni < 1 || this.vni > 0xffffff) {
      throw new Error(`vni ${this.vni}: must be between 1 and 16777215`);
    }
    if (!Number.isInteger(this.port) || this.port < 1 || this.port > 65535)
      throw new Error(`port ${this.port}: must be between 1 and 65535`);
    if (!parseIP(opts.publicIp))
      throw new Error(`publicIp ${JSON.stringify(opts.publicIp)}: not an IP address`);
  }

  /** The leased subnet (after {@link setup}). */
  get podSubnet(): string | undefined {
    return this.subnet;
  }

  get vtepMac(): string | undefined {
    return this.mac;
  }

  /** Leases the subnet, creates (or fixes) the VXLAN device and publishes the node's VTEP. */
  async setup(): Promise<{ subnet: string; mac: string }> {
    const { store, datapath: dp, node } = this.opts;
    const subnet = await leaseSubnet(store, node, this.opts.network, this.opts.subnetLen);
    const mtu = this.opts.mtu ?? 1450;
    let link = await dp.getLink(this.netns, this.device);
    const fits =
      link?.kind === 'vxlan' &&
      link.vxlan?.vni === this.vni &&
      (link.vxlan.port ?? 4789) === this.port &&
      (link.vxlan.local === undefined || link.vxlan.local === this.opts.publicIp);
    if (link && !fits) {
      // A device left over with other parameters: replace it, as flannel does.
      await ignoreNotFound(() => dp.delLink(this.netns, this.device));
      link = undefined;
    }
    if (!link) {
      link = await dp.addLink(this.netns, {
        kind: 'vxlan',
        name: this.device,
        mtu,
        vxlan: {
          vni: this.vni,
          port: this.port,
          local: this.opts.publicIp,
          dev: this.opts.underlayDevice,
          learning: false,
        },
      });
    }
    await dp.setLink(this.netns, this.device, { up: true, mtu });
    const addr = `${networkAddress(subnet)}/32`;
    for (const a of await dp.listAddrs(this.netns, this.device)) {
      if (a.family === 4 && a.cidr !== addr)
        await ignoreNotFound(() => dp.delAddr(this.netns, this.device, a.cidr));
    }
    try {
      await dp.addAddr(this.netns, this.device, addr);
    } catch (e) {
      if (!isDatapathError(e, 'EEXIST')) throw e;
    }
    await dp.setSysctl(this.netns, 'net.ipv4.ip_forward', '1');
    const network = this.opts.network ?? DEFAULT_NETWORK;
    if (this.opts.ipMasq ?? true) {
      await dp.addNatRules(this.netns, [
        {
          kind: 'masquerade',
          owner: `kemu-vxlan-${this.device}`,
          src: network,
          excludeDst: [network, '224.0.0.0/4'],
          comment: 'kemu-vxlan: pod traffic leaving the cluster network',
        },
      ]);
    } else {
      await dp.delNatRules(this.netns, `kemu-vxlan-${this.device}`);
    }
    const mac = (await dp.getLink(this.netns, this.device))!.mac;
    this.subnet = subnet;
    this.mac = mac;
    await this.publish(subnet, mac, mtu);
    return { subnet, mac };
  }

  private async publish(subnet: string, mac: string, mtu: number): Promise<void> {
    const { store, node } = this.opts;
    const ann = {
      [ANNOTATIONS.backendType]: 'vxlan',
      [ANNOTATIONS.backendData]: JSON.stringify({ VNI: this.vni, VtepMAC: mac }),
      [ANNOTATIONS.publicIp]: this.opts.publicIp,
      [ANNOTATIONS.subnetManager]: 'true',
    };
    await store.patch('Node', '', node, { metadata: { annotations: ann } }, 'merge');
    if (this.opts.subnetFile) {
      const gw = parseCidr(subnet)!;
      const text =
        `FLANNEL_NETWORK=${this.opts.network ?? DEFAULT_NETWORK}\n` +
        `FLANNEL_SUBNET=${formatIP(4, gw.ip + 1n)}/${gw.prefix}\n` +
        `FLANNEL_MTU=${mtu}\n` +
        `FLANNEL_IPMASQ=${this.opts.ipMasq ?? true}\n`;
      await mkdir(dirname(this.opts.subnetFile), { recursive: true });
      const tmp = `${this.opts.subnetFile}.tmp-${process.pid}`;
      await writeFile(tmp, text, { mode: 0o644 });
      await rename(tmp, this.opts.subnetFile);
    }
  }

  /** One pass: program every remote node present in the store, remove what belongs to nodes that left. */
  reconcile(): Promise<ReconcileReport> {
    // Passes never overlap, and a burst of watch events while one pass runs costs one more pass, not one
    // per event: a pass reads the whole current state anyway.
    if (this.queued) return this.queued;
    const next = this.pending
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.reconcileOnce();
      });
    this.queued = next;
    this.pending = next;
    return next;
  }

  private async reconcileOnce(): Promise<ReconcileReport> {
    if (!this.subnet) throw new Error('VxlanAgent.reconcile before setup');
    const dp = this.opts.datapath;
    const ns = this.netns;
    const dev = this.device;
    const nodes = (await this.opts.store.list('Node')).items as Node[];
    const want = new Map<string, RemoteNode>();
    for (const n of nodes) {
      if (n.metadata.name === this.opts.node) continue;
      const r = remoteOf(n, this.vni);
      if (r && r.subnet !== this.subnet) want.set(r.name, r);
    }
    // Direct routing: remote nodes whose underlay address is on one of our underlay subnets.
    const under = this.opts.underlayDevice;
    const localNets = this.opts.directRouting && under ? (await dp.listAddrs(ns, under)).filter((a) => a.family === 4) : [];
    for (const r of want.values()) {
      r.mode = localNets.some((a) => sameSubnet(a.cidr, r.publicIp)) ? 'direct' : 'vxlan';
    }
    const added: string[] = [];
    const removed: string[] = [];
    for (const r of want.values()) {
      const prev = this.programmed.get(r.name);
      if (prev && (prev.vtepMac !== r.vtepMac || prev.subnet !== r.subnet || prev.mode !== r.mode)) await this.unprogram(prev);
      if (r.mode === 'direct') {
        await dp.addRoute(ns, { dst: r.subnet, via: r.publicIp, dev: under }, { replace: true });
      } else {
        // Order matters for traffic already flowing: FDB, then neighbour, then route.
        await dp.setFdb(ns, { mac: r.vtepMac, dev, dst: r.publicIp, permanent: true });
        await dp.setNeigh(ns, { ip: r.vtepIp, mac: r.vtepMac, dev, permanent: true });
        await dp.addRoute(ns, { dst: r.subnet, via: r.vtepIp, dev, onlink: true }, { replace: true });
      }
      if (!prev || JSON.stringify(prev) !== JSON.stringify(r)) added.push(r.name);
      this.programmed.set(r.name, { ...r });
    }
    // Anything on the device that no wanted node explains is stale (also after an agent restart).
    const tunnelled = [...want.values()].filter((r) => r.mode === 'vxlan');
    const wantSubnets = new Set(tunnelled.map((r) => r.subnet));
    const wantVteps = new Set(tunnelled.map((r) => r.vtepIp));
    const wantMacs = new Set(tunnelled.map((r) => `${r.vtepMac} ${r.publicIp}`));
    for (const name of [...this.programmed.keys()]) {
      if (!want.has(name)) {
        this.programmed.delete(name);
        removed.push(name);
      }
    }
    for (const rt of await dp.listRoutes(ns, { dev, family: 4 })) {
      if (rt.via && !wantSubnets.has(rt.dst)) await ignoreNotFound(() => dp.delRoute(ns, { dst: rt.dst, via: rt.via, dev }));
    }
    if (under) {
      // Direct routes live on the underlay device beside routes that are not ours: only pod subnets of
      // the cluster network with a next hop are ours to remove.
      const network = this.opts.network ?? DEFAULT_NETWORK;
      const wantDirect = new Set([...want.values()].filter((r) => r.mode === 'direct').map((r) => `${r.subnet} ${r.publicIp}`));
      for (const rt of await dp.listRoutes(ns, { dev: under, family: 4 })) {
        if (rt.via && rt.dst !== this.subnet && cidrWithin(network, rt.dst) && !wantDirect.has(`${rt.dst} ${rt.via}`)) {
          await ignoreNotFound(() => dp.delRoute(ns, { dst: rt.dst, via: rt.via, dev: under }));
        }
      }
    }
    for (const nb of await dp.listNeighs(ns, dev)) {
      if (nb.permanent && parseIP(nb.ip)?.family === 4 && !wantVteps.has(nb.ip)) {
        await ignoreNotFound(() => dp.delNeigh(ns, { ip: nb.ip, dev }));
      }
    }
    for (const f of await dp.listFdb(ns, dev)) {
      if (f.dst && f.mac !== '00:00:00:00:00:00' && !wantMacs.has(`${f.mac} ${f.dst}`)) {
        await ignoreNotFound(() => dp.delFdb(ns, { mac: f.mac, dev, dst: f.dst }));
      }
    }
    return { remotes: [...want.values()].sort((a, b) => a.name.localeCompare(b.name)), added, removed };
  }

  private async unprogram(r: RemoteNode): Promise<void> {
    const dp = this.opts.datapath;
    if (r.mode === 'direct') {
      await ignoreNotFound(() => dp.delRoute(this.netns, { dst: r.subnet, via: r.publicIp, dev: this.opts.underlayDevice }));
      return;
    }
    await ignoreNotFound(() => dp.delRoute(this.netns, { dst: r.subnet, via: r.vtepIp, dev: this.device }));
    await ignoreNotFound(() => dp.delNeigh(this.netns, { ip: r.vtepIp, dev: this.device }));
    await ignoreNotFound(() => dp.delFdb(this.netns, { mac: r.vtepMac, dev: this.device, dst: r.publicIp }));
  }

  /** setup(), a first pass, then a pass on every Node change until {@link stop}. */
  async start(): Promise<void> {
    await this.setup();
    await this.reconcile();
    const rv = await this.opts.store.resourceVersion();
    this.watch = (await this.opts.store.watch('Node', { resourceVersion: rv })) as Watch<Node>;
    const w = this.watch;
    this.loop = (async () => {
      for await (const ev of w) {
        if (ev.type === 'ERROR') break;
        if (ev.type === 'BOOKMARK') continue;
        await this.reconcile().catch((e) => this.opts.onError?.(e));
      }
    })();
  }

  /** Waits for the passes triggered so far (tests and callers that need the datapath settled). */
  async settled(): Promise<ReconcileReport> {
    return this.pending;
  }

  async stop(): Promise<void> {
    this.watch?.stop();
    await this.loop;
    await this.pending.catch(() => undefined);
  }

  /** Removes the VXLAN device (and with it every route, neighbour and FDB entry on it). */
  async teardown(): Promise<void> {
    await this.stop();
    await ignoreNotFound(() => this.opts.datapath.delLink(this.netns, this.device));
    await this.opts.datapath.delNatRules(this.netns, `kemu-vxlan-${this.device}`);
    this.programmed.clear();
  }
}
