// A whole emulated cluster in one process: the store, the storage controllers, the scheduler, the CSI
// sidecars, and per node a CSI driver, a CRI runtime with CNI networking on the simulated datapath, and a
// kubelet. Everything talks through the same APIs the standalone packages serve on sockets.
import { BGP_MAX_NODES, ClusterBgp } from './bgp-routing.js';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  createEtcdStore,
  createFileStore,
  createMemoryStore,
  isAlreadyExists,
  isNotFound,
  type KubeObject,
  labelValue,
  type Node,
  qualifiedName,
  setInformerErrorHandler,
  SharedInformer,
  type Pod,
  StatusError,
  type Service,
  type Store,
  type Taint,
} from '@kemu/core';
import { AttachDetachController, EphemeralVolumeController, PersistentVolumeBinder } from '@kemu/core/controllers';
import { ControllerManager, ScaledClock } from '@kemu/controllers';
import { RuntimePodMetrics } from './pod-metrics.js';
import { metricsOfNodes } from './resource-metrics.js';
import { followPodLog, readPodLog } from './pod-logs.js';
import { DEFAULT_DRIVER_NAME, DEFAULT_TOPOLOGY_KEY } from '@kemu/csi';
import { ExternalAttacher, ExternalProvisioner } from '@kemu/csi-sidecars';
import { NodeLifecycleController } from '@kemu/kubelet';
import { cri, inProcessApi, type PromiseApi } from '@kemu/proto';
import { Scheduler } from '@kemu/scheduler';
import {
  type ApiExtensions,
  type ApiServer,
  type ApiServerOptions,
  controllerUser,
  type ExecResult,
  KUBE_CONTROLLER_MANAGER,
  KUBE_PROXY,
  KUBE_SCHEDULER,
  type NodeAddRequest,
  nodeUser,
  startApiServer,
  type UserInfo,
} from '@kemu/apiserver';
import { CsiRouter, type NodeDriver } from './csi-router.js';
import { nthAddress, nthSubnet } from '@kemu/ip';
import { type ClusterNetwork, createClusterNetwork } from './cluster-network.js';
import { LoadBalancerIpam } from '@kemu/kube-proxy';
import { DnsServer } from '@kemu/dns';
import { clusterDnsIP, ensureKubeDnsService, serveClusterDns } from './cluster-dns.js';
import { addonUser, LOAD_BALANCER_CONTROLLER } from './component-identities.js';
import { lookupFromPod, lookupText, type PodLookup } from './pod-dns.js';
import { startNodePolicyAgent } from './node-policy.js';
import { startNodeProxy } from './node-proxy.js';
import { parseTraceTarget } from './trace-target.js';
import { advertiseAddress, KubernetesServiceReconciler } from './kubernetes-service.js';
import { linuxUnsupportedReason } from './linux-network.js';
import { type ClusterNode, isRealRuntime, type RuntimeKind, startNode } from './node.js';
import type { TokenSource } from '@kemu/kubelet';
import { type DeviceRequest, kubeletConfigFor } from './node-resources.js';
import {
  connectNode,
  joinedNodeSockets,
  type NodeConnection,
  type RemoteNode,
  spawnNodeProcess,
  stopNodeProcess,
} from './node-process.js';

export type StoreKind = 'memory' | 'file' | 'etcd';

/** The cluster DNS Service's address the kubelets put in pods' resolv.conf (their clusterDNS default). */
const CLUSTER_DNS_IP = clusterDnsIP();

export interface ClusterOptions {
  nodes?: number;
  /** Workload controllers to run, as kube-controller-manager's --controllers (default `*`). */
  controllers?: string;
  /** How much faster than real time the cluster clock runs for time-driven controllers (CronJob; default 1). */
  clockSpeed?: number;
  stateDir: string;
  store?: StoreKind;
  etcdEndpoints?: string[];
  datapath?: 'sim' | 'linux';
  /** kube-proxy's --proxy-mode on every node: iptables (default) or nftables. */
  proxyMode?: 'iptables' | 'nftables';
  network?: 'bridge' | 'vxlan' | 'bgp';
  storage?: 'sim' | 'hostpath';
  runtime?: RuntimeKind;
  /** Pod CIDRs are /24s carved from this (default 10.244.0.0/16, or 10.0.0.0/8 beyond 255 nodes). */
  podSubnet?: string;
  /** Node IPs on the simulated underlay: host 10 + i of this (default 172.18.0.0/16). */
  nodeSubnet?: string;
  /** Shorter periods (PLEG, heartbeats) for tests and demos; the defaults are upstream's. */
  fast?: boolean;
  /** KubeletConfiguration files: `*` for every node, or by node name. */
  kubeletConfigs?: Record<string, string>;
  /** Simulated devices for every node, each served by a device plugin beside its kubelet. */
  devices?: DeviceRequest[];
  /** Tokens for projected service account token volumes (the API server's TokenRequest), for in-process kubelets. */
  serviceAccountTokens?: TokenSource;
  /** Progress messages for long operations. */
  onProgress?: (step: string, done: number, total: number) => void;
  onError?: (err: unknown, context: string) => void;
  /** Run each node (kubelet, runtime, driver) in a process of its own, talking to the cluster's API socket. */
  nodeProcesses?: boolean;
  /** Serve the Kubernetes-style API on this unix socket (node processes need it). */
  apiSocket?: string;
  /** Where LoadBalancer Services' addresses come from (default: the last /24 of the node subnet). */
  loadBalancerPool?: string;
  /** Port of the cluster DNS server on 127.0.0.1, UDP and TCP (default: a free one; `kemu info` shows it). */
  dnsPort?: number;
  /** More for the API server: HTTPS on a TCP port, auth seams, renderers. */
  apiServer?: ApiServerOptions;
  /**
   * How components reach the store as their upstream users (the scheduler as system:kube-scheduler, each
   * kubelet as system:node:<name>, kube-proxy as system:kube-proxy): called once the store is open, before
   * any component starts, it returns the store each user gets (`kemu up`: authorized as the API would).
   * Without it every component uses the store itself.
   */
  componentStores?: (store: Store) => Promise<(user: UserInfo) => Store>;
  /**
   * Simulated datapath: route pod CIDRs in the underlay (one route per node) instead of host-gw between
   * every pair of nodes. Default: beyond 255 nodes.
   */
  routedUnderlay?: boolean;
}

export type { ClusterNode } from './node.js';

/** A node added to a running cluster (`Cluster.addNodes`, `kemu node add`). */
export interface AddNodeOptions {
  /** The node's name (default `kemu-node-<n>`, numbered on from the nodes the cluster has). */
  name?: string;
  /** Taints the kubelet registers the Node with, as its --register-with-taints. */
  taints?: Taint[];
  /** Labels the kubelet registers the Node with, as its --node-labels. */
  labels?: Record<string, string>;
}

const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** A node-add request off the wire, checked field by field. */
function nodeAddOptions(req: NodeAddRequest): AddNodeOptions {
  const bad = (m: string) => new StatusError('BadRequest', 400, m);
  if (req.count !== undefined && typeof req.count !== 'number') throw bad('count must be a number');
  if (req.name !== undefined && typeof req.name !== 'string') throw bad('name must be a string');
  if (req.taints !== undefined && !Array.isArray(req.taints)) throw bad('taints must be a list');
  const taints = (req.taints ?? []).map((t, i) => {
    if (!t || typeof t.key !== 'string' || !t.key) throw bad(`taints[${i}].key: Required value`);
    const keyErr = qualifiedName(t.key)[0];
    if (keyErr) throw bad(`taints[${i}].key: Invalid value: ${JSON.stringify(t.key)}: ${keyErr}`);
    if (t.value !== undefined && typeof t.value !== 'string') throw bad(`taints[${i}].value must be a string`);
    const valueErr = t.value ? labelValue(t.value)[0] : undefined;
    if (valueErr) throw bad(`taints[${i}].value: Invalid value: ${JSON.stringify(t.value)}: ${valueErr}`);
    if (!TAINT_EFFECTS.includes(t.effect)) throw bad(`taints[${i}].effect: Unsupported value: ${JSON.stringify(t.effect)}: supported values: "${TAINT_EFFECTS.join('", "')}"`);
    return { key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect } as Taint;
  });
  if (req.labels !== undefined && (!req.labels || typeof req.labels !== 'object' || Object.values(req.labels).some((v) => typeof v !== 'string')))
    throw bad('labels must map strings to strings');
  for (const [k, v] of Object.entries(req.labels ?? {})) {
    const err = qualifiedName(k)[0] ?? labelValue(v)[0];
    if (err) throw bad(`labels: Invalid value: ${JSON.stringify(`${k}=${v}`)}: ${err}`);
  }
  return { name: req.name, taints: taints.length ? taints : undefined, labels: req.labels };
}

const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;


/** What this composition supports today; anything else is refused with a clear message. */
export function checkSupported(o: ClusterOptions): void {
  const unsupported: string[] = [];
  const datapath = o.datapath ?? 'sim';
  if (datapath === 'linux') {
    const why = linuxUnsupportedReason();
    if (why) throw new Error(`--datapath linux cannot run here: ${why}`);
  }
  if (isRealRuntime(o.runtime) && datapath !== 'linux')
    unsupported.push(`--runtime ${o.runtime} on the sim datapath (real processes need real network namespaces: add --datapath linux)`);
  if ((o.network ?? 'bridge') === 'bgp') {
    if (o.nodeProcesses)
      unsupported.push('--network bgp with --node-processes (the nodes\' BGP speakers run in the kemu process; drop --node-processes)');
    if ((o.nodes ?? 3) > BGP_MAX_NODES)
      unsupported.push(`--network bgp beyond ${BGP_MAX_NODES} nodes (every node holds a route per node; use --network bridge or vxlan)`);
  }
  if (unsupported.length) throw new Error(`not supported by \`kemu up\` yet: ${unsupported.join('; ')}`);
}

/** Real processes need real directories to mount, so the process and runc runtimes default to hostpath storage. */
export function storageKind(o: Pick<ClusterOptions, 'storage' | 'runtime'>): 'sim' | 'hostpath' {
  return o.storage ?? (isRealRuntime(o.runtime) ? 'hostpath' : 'sim');
}

/** Lazily unmounts whatever is still mounted below `dir` (volumes of pods that could not be torn down). */
async function unmountUnder(dir: string): Promise<void> {
  const root = `${path.resolve(dir)}/`;
  const points = fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4]?.replace(/\\040/g, ' '))
    .filter((p): p is string => !!p && p.startsWith(root))
    .sort((a, b) => b.length - a.length);
  for (const p of points) {
    await new Promise<void>((resolve) => {
      const child = spawn('/usr/bin/umount', ['-l', p], { stdio: 'ignore' });
      child.on('error', () => resolve());
      child.on('close', () => resolve());
    });
  }
}

/**
 * Node i's pod CIDR (a /24 carved from `base`, counting from its first /24 after the network address) or
 * node IP (host number 10 + i in `base`), carrying into higher octets as needed.
 */
export function subnet(base: string, i: number, kind: 'pod' | 'node'): string {
  try {
    return kind === 'pod' ? nthSubnet(base, i + 1, 24) : nthAddress(base, 10 + i);
  } catch (err) {
    if (err instanceof RangeError && !err.message.startsWith('invalid')) throw new Error(`${base} is too small for ${i + 1} nodes`);
    throw err;
  }
}

export async function openStore(
  o: Pick<ClusterOptions, 'store' | 'stateDir' | 'etcdEndpoints'>,
): Promise<Store> {
  switch (o.store ?? 'memory') {
    case 'memory':
      return createMemoryStore();
    case 'file':
      return createFileStore({ dir: path.join(o.stateDir, 'store') });
    case 'etcd':
      if (!o.etcdEndpoints?.length)
        throw new Error('--store etcd needs --etcd-endpoints URL (e.g. http://127.0.0.1:2379)');
      return createEtcdStore({ endpoints: o.etcdEndpoints });
    default:
      throw new Error(`unknown store ${JSON.stringify(o.store)}: use memory, file or etcd`);
  }
}

async function ensure(store: Store, obj: KubeObject) {
  try {
    await store.create(obj);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

export class Cluster {
  /** Nodes running in this process. */
  readonly nodes: ClusterNode[] = [];
  /** Nodes running in processes of their own. */
  readonly remoteNodes = new Map<string, RemoteNode>();
  /** Nodes that joined by hand (`kemu node`), reached through the sockets their Node announces. */
  readonly joinedNodes = new Map<string, NodeConnection>();
  api?: ApiServer;
  /** Every node is up and the controllers run. */
  ready = false;
  readonly network: ClusterNetwork;
  private readonly stoppers: Array<() => Promise<void>> = [];
  /** How to stop each node this process started (in process or as a child), for removing one. */
  private readonly nodeStoppers = new Map<string, () => Promise<void>>();
  /** The nodes' CSI drivers, behind the controller endpoint the sidecars use. */
  private readonly drivers = new Map<string, NodeDriver>();
  private router?: CsiRouter;
  /** The address index the next node gets (node IP and pod CIDR); never reused within a run. */
  private nextNodeIndex = 0;
  /** Each node's address index; a removed node's name keeps its index, so it comes back with its address. */
  private readonly nodeIndexes = new Map<string, number>();
  /** Serialises node additions and removals, so two never race for a name or an index. */
  private nodeChanges: Promise<unknown> = Promise.resolve();
  /** The cluster DNS server (once booted). */
  dns?: DnsServer;
  /** The store a component running as a user sees (see ClusterOptions.componentStores). */
  private storeAs: (user: UserInfo) => Store = () => this.store;
  /**
   * The store `component` runs with as `user`; its informers' failed lists and watches (a 403 for a rule its
   * role lacks) reach onError under the component's name, as each upstream component logs its own.
   */
  private componentStore(user: UserInfo, component: string): Store {
    const s = this.storeAs(user);
    if (s !== this.store) setInformerErrorHandler(s, (e) => this.options.onError?.(e, component));
    return s;
  }
  /** The network policy agents' store (calico-node's ServiceAccount). */
  private policyStore?: Store;
  private constructor(
    readonly options: ClusterOptions,
    readonly store: Store,
  ) {
    this.network = createClusterNetwork({
      datapath: options.datapath ?? 'sim',
      stateDir: options.stateDir,
      persist: (options.store ?? 'memory') !== 'memory',
      overlay: options.network ?? 'bridge',
      bgp: options.network === 'bgp' ? new ClusterBgp(options.nodes ?? 3) : undefined,
      podNetwork: this.podNetwork(),
      routedUnderlay: options.routedUnderlay ?? (options.nodes ?? 3) > 255,
      underlayGateway: subnet(options.nodeSubnet ?? '172.18.0.0/16', -9, 'node'),
    });
  }

  static async start(options: ClusterOptions): Promise<Cluster> {
    checkSupported(options);
    fs.mkdirSync(options.stateDir, { recursive: true, mode: 0o700 });
    const store = await openStore(options);
    const c = new Cluster(options, store);
    try {
      await c.boot();
    } catch (err) {
      await c.stop().catch(() => {});
      throw err;
    }
    return c;
  }

  private progress(step: string, done: number, total: number) {
    this.options.onProgress?.(step, done, total);
  }

  private async boot() {
    const o = this.options;
    const n = o.nodes ?? 3;
    if (!Number.isInteger(n) || n < 1 || n > 5000)
      throw new Error(`--nodes must be between 1 and 5000 (got ${n})`);
    const store = this.store;
    const onError = o.onError ?? (() => {});
    const fast = o.fast ?? false;

    // The namespaces kube-apiserver makes at start (kubelets renew their Leases in kube-node-lease).
    for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease'])
      await ensure(store, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    if (o.componentStores) {
      this.storeAs = await o.componentStores(store);
      // Informers on the unauthorized store are the API server's own (RBAC, admission, service accounts).
      setInformerErrorHandler(store, (e) => onError(e, 'kube-apiserver'));
    }
    if (o.nodeProcesses && !o.apiSocket) throw new Error('node processes need the API socket (apiSocket)');
    // Node processes need the API before they can register; otherwise it opens once the cluster is whole.
    if (o.nodeProcesses) this.api = await startApiServer(store, o.apiSocket!, this.extensions(), o.apiServer);
    await ensure(store, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: DEFAULT_DRIVER_NAME },
      spec: {
        attachRequired: true,
        podInfoOnMount: true,
        volumeLifecycleModes: ['Persistent', 'Ephemeral'],
        storageCapacity: false,
      },
    });
    await ensure(store, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'standard', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
      provisioner: DEFAULT_DRIVER_NAME,
      reclaimPolicy: 'Delete',
      volumeBindingMode: 'WaitForFirstConsumer',
      allowVolumeExpansion: true,
    } as KubeObject);
    await ensure(store, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'standard-immediate' },
      provisioner: DEFAULT_DRIVER_NAME,
      reclaimPolicy: 'Delete',
      volumeBindingMode: 'Immediate',
      allowVolumeExpansion: true,
    } as KubeObject);

    // Control plane.
    const binder = new PersistentVolumeBinder({ store: this.componentStore(controllerUser('persistent-volume-binder'), 'persistent-volume-binder'), resyncPeriodMs: fast ? 2000 : 15_000 });
    await binder.start();
    this.stoppers.push(() => binder.stop());
    const ad = new AttachDetachController({ store: this.componentStore(controllerUser('attachdetach-controller'), 'attachdetach-controller'), resyncPeriodMs: fast ? 2000 : 10_000 });
    await ad.start();
    this.stoppers.push(() => ad.stop());
    const ephemeral = new EphemeralVolumeController({ store: this.componentStore(controllerUser('ephemeral-volume-controller'), 'ephemeral-volume-controller') });
    await ephemeral.start();
    this.stoppers.push(() => ephemeral.stop());
    const scheduler = new Scheduler({ store: this.componentStore(KUBE_SCHEDULER, 'kube-scheduler') });
    await scheduler.start();
    this.stoppers.push(() => scheduler.stop());
    const controllers = new ControllerManager({
      store: this.componentStore(KUBE_CONTROLLER_MANAGER, 'kube-controller-manager'),
      storeFor: (sa) => this.componentStore(controllerUser(sa), `kube-controller-manager: ${sa}`),
      controllers: o.controllers,
      clock: o.clockSpeed && o.clockSpeed !== 1 ? new ScaledClock(new Date(), o.clockSpeed) : undefined,
      metrics: new RuntimePodMetrics((n) => this.runtimeOf(n)),
      hpaSyncPeriodMs: fast ? 1000 : undefined,
      onError: (c, e) => onError(e, c),
    });
    await controllers.start();
    this.stoppers.push(() => controllers.stop());
    // LoadBalancer Services get addresses from the top of the node subnet, as cloud-provider-kind does.
    const lbIpam = new LoadBalancerIpam({
      store: this.componentStore(LOAD_BALANCER_CONTROLLER, 'load-balancer addresses'),
      pool: o.loadBalancerPool ?? nthSubnet(o.nodeSubnet ?? '172.18.0.0/16', 255, 24),
      onError: (e) => onError(e, 'load-balancer addresses'),
    });
    await lbIpam.start();
    this.stoppers.push(() => lbIpam.stop());
    // Cluster DNS, answering as CoreDNS does; `kemu trace` resolves names through it as a pod would.
    const dns = new DnsServer({ store: this.componentStore(addonUser('coredns'), 'cluster DNS'), host: '127.0.0.1', port: o.dnsPort ?? 0, nameserverIPs: [CLUSTER_DNS_IP], onError: (e) => onError(e, 'cluster DNS') });
    await dns.start();
    this.dns = dns;
    this.stoppers.push(() => dns.stop());
    await ensureKubeDnsService(store, CLUSTER_DNS_IP);
    const nlc = new NodeLifecycleController({
      store: this.componentStore(controllerUser('node-controller'), 'node-controller'),
      gracePeriodMs: fast ? 4000 : 40_000,
      monitorPeriodMs: fast ? 500 : 5000,
    });
    nlc.start();
    this.stoppers.push(() => nlc.stop());

    // CSI: a driver per node, one controller endpoint in front of them for the sidecars.
    const drivers = this.drivers;
    const router = new CsiRouter(drivers, DEFAULT_TOPOLOGY_KEY);
    this.router = router;
    const provisioner = new ExternalProvisioner({
      store: this.componentStore(addonUser('provisioner'), 'provisioner'),
      csi: router,
      driverName: DEFAULT_DRIVER_NAME,
      topology: true,
      extraCreateMetadata: true,
      onError: (w, e) => onError(e, `provisioner: ${w}`),
    });
    const attacher = new ExternalAttacher({
      store: this.componentStore(addonUser('attacher'), 'attacher'),
      csi: router,
      driverName: DEFAULT_DRIVER_NAME,
      onError: (w, e) => onError(e, `attacher: ${w}`),
    });

    const bgp = this.network.bgp;
    if (bgp) this.stoppers.push(() => bgp.close());
    for (let i = 0; i < n; i++) {
      await this.startNodeAt(`kemu-node-${i + 1}`, this.nextNodeIndex++, {});
      // The DNS server's socket on the first node (pods' queries reach it through kube-proxy), published
      // before the other nodes start: their kube-proxies find kube-dns's endpoint in their first sync,
      // instead of every one of them syncing again when it appears (seconds of work at 5,000 nodes).
      if (i === 0) {
        const first = this.nodes[0] ?? [...this.remoteNodes.values()][0]?.spec;
        const dnsOn = first && (await serveClusterDns({ store, network: this.network, dns, nodeName: first.name, nodeIP: first.ip }));
        if (dnsOn) this.stoppers.push(dnsOn);
      }
      this.progress('nodes', i + 1, n);
    }
    // Routes between nodes exist once the speakers agree; pods scheduled before that could not talk.
    if (bgp) await bgp.start(Math.max(60_000, n * 100));
    await router.rescan();
    this.watchJoinedNodes(drivers);
    await provisioner.start();
    this.stoppers.push(() => provisioner.stop());
    await attacher.start();
    this.stoppers.push(() => attacher.stop());
    if (o.apiSocket && !this.api) this.api = await startApiServer(store, o.apiSocket, this.extensions(), o.apiServer);
    // The default `kubernetes` Service and its endpoints point at the HTTPS API, as kube-apiserver's own are.
    if (this.api?.url && o.apiServer?.tcp) {
      const kubernetes = new KubernetesServiceReconciler({
        store,
        address: advertiseAddress(o.apiServer.tcp.host ?? '127.0.0.1', subnet(o.nodeSubnet ?? '172.18.0.0/16', -9, 'node')),
        port: Number(new URL(this.api.url).port),
        intervalMs: fast ? 1000 : 10_000,
        onError: (e) => onError(e, 'kubernetes service'),
      });
      await kubernetes.start();
      this.stoppers.push(() => kubernetes.stop());
    }
    this.ready = true;
  }

  /** 10.244.0.0/16 holds 255 nodes' /24s; bigger clusters take theirs from 10.0.0.0/8. */
  private podNetwork(): string {
    return this.options.podSubnet ?? ((this.options.nodes ?? 3) > 255 ? '10.0.0.0/8' : '10.244.0.0/16');
  }

  private address(i: number) {
    const o = this.options;
    const ip = subnet(o.nodeSubnet ?? '172.18.0.0/16', i, 'node');
    const podCIDR = subnet(this.podNetwork(), i, 'pod');
    return { ip, podCIDR };
  }

  /**
   * Adds `count` nodes to the running cluster, each as the cluster's own nodes are made (in process, or in
   * a process of its own with node processes), and resolves with their names once each kubelet has
   * registered its Node. A name given in `opts` suits one node only.
   */
  addNodes(count: number, opts: AddNodeOptions = {}): Promise<string[]> {
    const run = this.nodeChanges.then(async () => {
      if (!this.ready) throw new StatusError('ServiceUnavailable', 503, 'the cluster is not up yet');
      if (!Number.isInteger(count) || count < 1) throw new StatusError('BadRequest', 400, `the number of nodes to add must be a positive whole number (got ${count})`);
      if (opts.name !== undefined && count !== 1) throw new StatusError('BadRequest', 400, `a node name names one node, not ${count}`);
      if (opts.name !== undefined && (!NODE_NAME.test(opts.name) || opts.name.length > 253))
        throw new StatusError('BadRequest', 400, `invalid node name ${JSON.stringify(opts.name)}: a lowercase RFC 1123 subdomain (letters, digits, '-' and '.')`);
      const total = this.allNodeNames().length + count;
      if (total > 5000) throw new StatusError('BadRequest', 400, `a cluster holds at most 5000 nodes (this would make ${total})`);
      const taken = new Set([...this.allNodeNames(), ...(await this.store.list('Node')).items.map((x) => x.metadata.name ?? '')]);
      const names: string[] = [];
      for (let k = 0; k < count; k++) {
        let name = opts.name;
        if (name === undefined) {
          let i = this.nextNodeIndex + 1;
          while (taken.has(`kemu-node-${i}`)) i++;
          name = `kemu-node-${i}`;
        } else if (taken.has(name)) throw new StatusError('AlreadyExists', 409, `nodes "${name}" already exists`, { name, kind: 'nodes' });
        taken.add(name);
        // A node removed earlier comes back at its old address, where its network namespace still is.
        const index = this.nodeIndexes.get(name) ?? this.nextNodeIndex++;
        // The address is checked before anything starts, so a full pod network fails cleanly.
        try {
          this.address(index);
        } catch (err) {
          throw new StatusError('BadRequest', 400, (err as Error).message);
        }
        await this.startNodeAt(name, index, opts);
        names.push(name);
      }
      await this.router?.rescan();
      return names;
    });
    this.nodeChanges = run.catch(() => {});
    return run;
  }

  /**
   * Removes a node this cluster started: its kubelet, runtime, driver, proxy and policy agent stop, its Node
   * goes, and so do the pods bound to it (as the pod garbage collector deletes pods of a node that is gone).
   */
  removeNode(name: string): Promise<void> {
    const run = this.nodeChanges.then(async () => {
      const stop = this.nodeStoppers.get(name);
      if (!stop) {
        if (this.joinedNodes.has(name)) throw new StatusError('BadRequest', 400, `node ${name} joined by hand (kemu node): stop that process instead`);
        throw new StatusError('NotFound', 404, `nodes "${name}" not found`, { name, kind: 'nodes' });
      }
      this.nodeStoppers.delete(name);
      await stop();
      const i = this.nodes.findIndex((x) => x.name === name);
      if (i >= 0) this.nodes.splice(i, 1);
      this.remoteNodes.delete(name);
      this.drivers.delete(name);
      await this.store.delete('Node', undefined, name).catch((err) => {
        if (!isNotFound(err)) throw err;
      });
      for (const p of (await this.store.list('Pod', { fieldSelector: `spec.nodeName=${name}` })).items) {
        await this.store.delete('Pod', p.metadata.namespace ?? 'default', p.metadata.name ?? '', { gracePeriodSeconds: 0 }).catch((err) => {
          if (!isNotFound(err)) throw err;
        });
      }
    });
    this.nodeChanges = run.catch(() => {});
    return run;
  }

  /** Starts node `name` at address index `i`, in this process or its own, and records how to stop it. */
  private async startNodeAt(name: string, i: number, opts: AddNodeOptions) {
    this.nodeIndexes.set(name, i);
    let stop: () => Promise<void>;
    if (this.options.nodeProcesses) stop = await this.spawnNode(name, i, this.drivers, opts);
    else stop = await this.startLocalNode(name, i, this.drivers, opts);
    let stopped: Promise<void> | undefined;
    const once = () => (stopped ??= stop());
    this.nodeStoppers.set(name, once);
    this.stoppers.push(once);
  }

  private async startLocalNode(name: string, i: number, drivers: Map<string, NodeDriver>, opts: AddNodeOptions): Promise<() => Promise<void>> {
    const o = this.options;
    const node = await startNode({
      name,
      ...this.address(i),
      stateDir: o.stateDir,
      store: this.componentStore(nodeUser(name), `${name}: kubelet`),
      network: this.network,
      runtime: o.runtime ?? 'sim',
      storage: storageKind(o),
      durable: (o.store ?? 'memory') !== 'memory',
      serveSockets: false,
      streaming: Boolean(o.apiServer?.tcp),
      fast: o.fast ?? false,
      podNetwork: this.podNetwork(),
      kubeletConfig: kubeletConfigFor(o.kubeletConfigs, name),
      devices: o.devices,
      taints: opts.taints,
      labels: opts.labels,
      // One loopback listener per kubelet for `kemu top`; beyond a few hundred nodes the file descriptors are not worth it.
      kubeletServer: (o.nodes ?? 3) <= 256,
      serviceAccountTokens: o.serviceAccountTokens,
      onError: o.onError,
    });
    const stoppers: Array<() => Promise<void>> = [() => node.stop()];
    const stop = async () => {
      for (const s of stoppers.reverse().splice(0)) {
        try {
          await s();
        } catch (err) {
          o.onError?.(err, `${name}: stop`);
        }
      }
    };
    try {
      await this.startNodeAgents(name, stoppers);
    } catch (err) {
      await stop();
      throw err;
    }
    drivers.set(name, { node: name, controller: node.csiApi.controller, identity: node.csiApi.identity, nodeService: node.csiApi.node });
    this.nodes.push(node);
    return stop;
  }

  /** The node's kube-proxy and network policy agent. */
  private async startNodeAgents(name: string, stoppers: Array<() => Promise<void>>) {
    const o = this.options;
    const proxy = await startNodeProxy({
      store: this.componentStore(KUBE_PROXY, `${name}: kube-proxy`),
      network: this.network,
      nodeName: name,
      podNetwork: this.podNetwork(),
      fast: o.fast ?? false,
      mode: o.proxyMode,
      onError: (e) => o.onError?.(e, `${name}: kube-proxy`),
    });
    stoppers.push(() => proxy.stop());
    // One store for every node's agent: the agents share informers by store (node-informers.ts).
    this.policyStore ??= this.componentStore(addonUser('policyAgent'), 'network policy');
    const policy = await startNodePolicyAgent({
      store: this.policyStore,
      network: this.network,
      nodeName: name,
      fast: o.fast ?? false,
      onError: (e) => o.onError?.(e, `${name}: network policy`),
    });
    stoppers.push(() => policy.stop());
  }

  /** Starts `kemu node` for this node and waits for it to register; its driver joins the router. */
  private async spawnNode(name: string, i: number, drivers: Map<string, NodeDriver>, opts: AddNodeOptions): Promise<() => Promise<void>> {
    const o = this.options;
    const remote = await spawnNodeProcess({
      name,
      ...this.address(i),
      stateDir: o.stateDir,
      apiSocket: o.apiSocket!,
      store: this.store,
      datapath: o.datapath ?? 'sim',
      network: o.network === 'vxlan' ? 'vxlan' : 'bridge',
      podNetwork: this.podNetwork(),
      runtime: o.runtime ?? 'sim',
      storage: storageKind(o),
      durable: (o.store ?? 'memory') !== 'memory',
      fast: o.fast ?? false,
      kubeletConfigFile: o.kubeletConfigs?.[name] ?? o.kubeletConfigs?.['*'],
      devices: o.devices,
      taints: opts.taints,
      labels: opts.labels,
    });
    this.remoteNodes.set(name, remote);
    drivers.set(name, { node: name, controller: remote.csi.controller, identity: remote.csi.identity, nodeService: remote.csi.node });
    // The process restartNodeProcess may have put in its place is the one to stop.
    return async () => {
      const current = this.remoteNodes.get(name);
      if (current) await stopNodeProcess(current);
    };
  }

  private watchJoinedNodes(drivers: Map<string, NodeDriver>) {
    const informer = new SharedInformer(this.store, 'Node', { onError: (e) => this.options.onError?.(e, 'joined nodes') });
    const forget = (name: string) => {
      const j = this.joinedNodes.get(name);
      if (!j) return;
      for (const c of j.clients) c.close();
      this.joinedNodes.delete(name);
      drivers.delete(name);
    };
    const seen = (n: Node) => {
      const name = n.metadata.name ?? '';
      if (this.node(name) || this.remoteNodes.has(name)) return;
      const sockets = joinedNodeSockets(n);
      const known = this.joinedNodes.get(name);
      if (known && sockets && known.criSocket === sockets.criSocket && known.csiSocket === sockets.csiSocket) return;
      forget(name);
      if (!sockets) return;
      const conn = connectNode(sockets.criSocket, sockets.csiSocket);
      this.joinedNodes.set(name, conn);
      drivers.set(name, { node: name, controller: conn.csi.controller, identity: conn.csi.identity, nodeService: conn.csi.node });
    };
    informer.addEventHandler({ onAdd: seen, onUpdate: (_o, n) => seen(n), onDelete: (n) => forget(n.metadata.name ?? '') });
    informer.start();
    this.stoppers.push(async () => {
      informer.stop();
      for (const name of [...this.joinedNodes.keys()]) forget(name);
    });
  }

  /** Kills a node's process (SIGKILL, like a crash) and starts it again with the same state. */
  async restartNodeProcess(name: string): Promise<RemoteNode> {
    const old = this.remoteNodes.get(name);
    if (!old) throw new Error(`${name} does not run in a process of its own`);
    await stopNodeProcess(old, 'SIGKILL');
    const again = await spawnNodeProcess(old.spec);
    this.remoteNodes.set(name, again);
    this.stoppers.push(() => stopNodeProcess(again));
    return again;
  }

  /** The CRI RuntimeService of a node, in process or over its socket. */
  runtimeOf(nodeName: string): PromiseApi<cri.RuntimeServiceMethods> | undefined {
    const local = this.node(nodeName);
    if (local) return inProcessApi(cri.RuntimeServiceService, local.cri.runtimeService);
    return (this.remoteNodes.get(nodeName) ?? this.joinedNodes.get(nodeName))?.runtime;
  }

  private allNodeNames(): string[] {
    return [...this.nodes.map((n) => n.name), ...this.remoteNodes.keys(), ...this.joinedNodes.keys()];
  }

  node(name: string): ClusterNode | undefined {
    return this.nodes.find((n) => n.name === name);
  }

  async stop(): Promise<void> {
    const linux = this.network.onMachine;
    // A memory store forgets the cluster, so on a real datapath nothing it made may outlive it: pods are
    // torn down through their kubelets first (volumes unpublished, CNI DEL, processes stopped).
    const teardown = linux && (this.options.store ?? 'memory') === 'memory';
    if (teardown) await this.drain();
    // Saved first, as it is with the pods running: kubelets and runtimes then stop without tearing pods
    // down, as on a real node, and a restart finds everything where it was.
    const net = this.network;
    this.stoppers.push(async () => net.save());
    for (const s of this.stoppers.reverse().splice(0)) {
      try {
        await s();
      } catch (err) {
        this.options.onError?.(err, 'stop');
      }
    }
    await this.api?.close();
    if (teardown) {
      try {
        await unmountUnder(this.options.stateDir);
        await this.network.destroy();
      } catch (err) {
        this.options.onError?.(err, 'stop: removing network namespaces');
      }
    }
    await this.store.close();
  }

  /** Deletes every pod and waits for the kubelets to tear them down; what is left is removed directly. */
  private async drain(): Promise<void> {
    const runtimes = this.allNodeNames().map((n) => this.runtimeOf(n)!);
    const sandboxes = async () => {
      let n = 0;
      for (const rt of runtimes) n += ((await rt.ListPodSandbox({})).items ?? []).length;
      return n;
    };
    try {
      for (const p of (await this.store.list('Pod')).items) {
        await this.store
          .delete('Pod', p.metadata.namespace ?? 'default', p.metadata.name ?? '', { gracePeriodSeconds: 0 })
          .catch((err) => {
            if (!isNotFound(err)) throw err;
          });
      }
      const end = Date.now() + 30_000;
      while (Date.now() < end && (await sandboxes()) > 0) await new Promise((r) => setTimeout(r, 100));
      for (const rt of runtimes) {
        for (const sb of (await rt.ListPodSandbox({})).items ?? []) {
          await rt.StopPodSandbox({ podSandboxId: sb.id });
          await rt.RemovePodSandbox({ podSandboxId: sb.id });
        }
      }
    } catch (err) {
      this.options.onError?.(err, 'stop: tearing pods down');
    }
  }

  private async container(namespace: string, name: string, container?: string) {
    const pod = await this.store.get('Pod', namespace, name);
    const runtime = pod.spec.nodeName ? this.runtimeOf(pod.spec.nodeName) : undefined;
    if (!runtime) throw new Error(`pod ${namespace}/${name} is not running on a node of this cluster yet`);
    const cname = container ?? pod.spec.containers[0]?.name;
    const list = await runtime.ListContainers({
      filter: {
        labelSelector: {
          'io.kubernetes.pod.uid': pod.metadata.uid ?? '',
          'io.kubernetes.container.name': cname ?? '',
        },
      },
    });
    const latest = [...(list.containers ?? [])].sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0))[0];
    if (!latest) throw new Error(`container ${cname} of pod ${namespace}/${name} has not been created yet`);
    return { pod, runtime, id: latest.id ?? '' };
  }

  /** The API server's extension endpoints: logs, exec and traces need the nodes' runtimes and network. */
  extensions(): ApiExtensions {
    return {
      podLog: async (ns, name, opts) => {
        const { runtime, id } = await this.container(ns, name, opts.container);
        const st = await runtime.ContainerStatus({ containerId: id, verbose: false });
        const file = st.status?.logPath ?? '';
        if (!opts.follow) return readPodLog(file, opts);
        const running = async () =>
          (await runtime.ContainerStatus({ containerId: id, verbose: false }).catch(() => undefined))?.status?.state === cri.ContainerState.CONTAINER_RUNNING;
        return followPodLog(file, opts, running);
      },
      podExec: async (ns, name, opts): Promise<ExecResult> => {
        const { runtime, id } = await this.container(ns, name, opts.container);
        const r = await runtime.ExecSync({ containerId: id, cmd: opts.command, timeout: 30 });
        return {
          stdout: Buffer.from(r.stdout ?? []).toString(),
          stderr: Buffer.from(r.stderr ?? []).toString(),
          exitCode: r.exitCode ?? 0,
        };
      },
      podStreamUrl: async (ns, name, kind, opts) => {
        if (kind === 'portforward') {
          const pod = await this.store.get('Pod', ns, name);
          const runtime = pod.spec.nodeName ? this.runtimeOf(pod.spec.nodeName) : undefined;
          if (!runtime) throw new Error(`pod ${ns}/${name} is not running on a node of this cluster yet`);
          const sandboxes = await runtime.ListPodSandbox({
            filter: { labelSelector: { 'io.kubernetes.pod.uid': pod.metadata.uid ?? '' }, state: { state: cri.PodSandboxState.SANDBOX_READY } },
          });
          const sb = sandboxes.items?.[0];
          if (!sb) throw new Error(`pod ${ns}/${name} has no running sandbox`);
          return (await runtime.PortForward({ podSandboxId: sb.id, port: opts.ports ?? [] })).url ?? '';
        }
        const { runtime, id } = await this.container(ns, name, opts.container);
        const io = { tty: opts.tty ?? false, stdin: opts.stdin ?? false, stdout: opts.stdout ?? false, stderr: opts.stderr ?? false };
        const r = kind === 'exec' ? await runtime.Exec({ containerId: id, cmd: opts.command ?? [], ...io }) : await runtime.Attach({ containerId: id, ...io });
        return r.url ?? '';
      },
      resourceMetrics: async () => {
        const m = await metricsOfNodes((await this.store.list('Node')).items as Node[]);
        return { nodes: [...m.nodeMetrics.values()] as unknown as KubeObject[], pods: m.podMetrics as unknown as KubeObject[] };
      },
      trace: async (from, to) => this.trace(from, to),
      nodes: {
        add: async (req) => ({ names: await this.addNodes(req.count ?? 1, nodeAddOptions(req)) }),
        remove: (name) => this.removeNode(name),
      },
      info: async () => ({
        ready: this.ready,
        dns: this.dns?.address(),
        nodes: [
          ...this.nodes.map((n) => ({ name: n.name, ip: n.ip, podCIDR: n.podCIDR, criSocket: n.criSocket, netns: n.netns })),
          ...[...this.remoteNodes.values()].map((n) => ({
            name: n.spec.name,
            ip: n.spec.ip,
            podCIDR: n.spec.podCIDR,
            criSocket: n.criSocket,
            pid: n.child.pid,
          })),
        ],
        options: { ...this.options, onProgress: undefined, onError: undefined },
      }),
    };
  }

  /** The pod's network namespace, as its node's runtime reports it. */
  private async podNetns(pod: Pod): Promise<string> {
    const runtime = pod.spec.nodeName ? this.runtimeOf(pod.spec.nodeName) : undefined;
    const name = `${pod.metadata.namespace}/${pod.metadata.name}`;
    if (!runtime) throw new Error(`pod ${name} is not running on a node of this cluster yet`);
    const list = await runtime.ListPodSandbox({
      filter: {
        labelSelector: { 'io.kubernetes.pod.uid': pod.metadata.uid ?? '' },
        state: { state: cri.PodSandboxState.SANDBOX_READY },
      },
    });
    const sb = list.items?.[0];
    if (!sb) throw new Error(`pod ${name} has no running sandbox`);
    const st = await runtime.PodSandboxStatus({ podSandboxId: sb.id, verbose: true });
    const netns = JSON.parse(st.info?.info ?? '{}').netNamespacePath as string | undefined;
    if (!netns) throw new Error(`pod ${name} shares the node's network namespace`);
    return netns;
  }

  /** A DNS name looked up from inside `pod` as its resolv.conf says, through the cluster network where it can. */
  private async lookupAsPod(pod: Pod, netns: string, name: string): Promise<PodLookup> {
    if (!this.dns) throw new Error('the cluster DNS server is not running');
    return lookupFromPod({ network: this.network, netns, pod, clusterDNS: [CLUSTER_DNS_IP], resolver: this.dns.resolver, name });
  }

  /** A probe from one pod to another pod (by name), a Service, a DNS name or an IP, with the hop-by-hop trace. */
  async trace(from: string, to: string) {
    const split = (s: string) =>
      s.includes('/') ? (s.split('/', 2) as [string, string]) : (['default', s] as [string, string]);
    const [fns, fname] = split(from);
    const src = await this.store.get('Pod', fns, fname);
    const target = parseTraceTarget(to);
    if (this.network.probesNeedLocalNodes && (this.remoteNodes.size || this.joinedNodes.size))
      throw new Error('hop-by-hop traces need all nodes in one simulated network: run the cluster without node processes');
    const netns = await this.podNetns(src);
    let ip: string;
    let port: number | undefined;
    let lookup: PodLookup | undefined;
    if (target.kind === 'lookup' || target.kind === 'dns') {
      lookup = await this.lookupAsPod(src, netns, target.name);
      const dns = { queries: lookup.queries.map((q) => ({ ...q, trace: q.trace as unknown[] })) };
      const addresses = lookup.result?.addresses ?? [];
      if (target.kind === 'lookup') {
        const error = lookup.error ?? (lookup.result && addresses.length === 0 ? `${target.name}: ${lookup.result.name} is an alias for ${lookup.result.cnames.at(-1)}, outside the cluster` : undefined);
        return {
          from: `${fns}/${fname}`,
          to,
          ip: addresses[0] ?? '',
          reachable: addresses.length > 0,
          transmitted: lookup.queries.length,
          received: lookup.queries.filter((q) => q.rcode !== undefined).length,
          error: error ? { message: error } : undefined,
          trace: lookup.queries.flatMap((q) => q.trace) as unknown[],
          text: lookupText(lookup),
          dns,
        };
      }
      if (!lookup.result) throw new Error(lookup.error);
      if (addresses.length === 0) throw new Error(`${target.name}: ${lookup.result.name} is an alias for ${lookup.result.cnames.at(-1)}, outside the cluster`);
      ip = addresses[0]!;
      port = target.kind === 'dns' ? target.port : undefined;
    } else if (target.kind === 'ip') ({ ip, port } = target);
    else if (target.kind === 'pod') {
      const name = `${target.namespace}/${target.name}`;
      try {
        ip = (await this.store.get('Pod', target.namespace, target.name)).status?.podIP ?? '';
      } catch (err) {
        if (isNotFound(err)) throw new Error(`pod ${name} not found`);
        throw err;
      }
      if (!ip) throw new Error(`pod ${name} has no IP yet`);
    } else {
      const name = `${target.namespace}/${target.name}`;
      let svc: Service;
      try {
        svc = await this.store.get('Service', target.namespace, target.name);
      } catch (err) {
        if (isNotFound(err)) throw new Error(`service ${name} not found`);
        throw err;
      }
      ip = svc.spec.clusterIP ?? '';
      if (!ip || ip === 'None') throw new Error(`service ${name} has no cluster IP (headless or ExternalName): trace one of its pods`);
      const ports = svc.spec.ports ?? [];
      const p = target.port === undefined ? ports[0] : ports.find((x) => x.name === target.port || String(x.port) === target.port);
      if (!p) throw new Error(`service ${name} has no port ${target.port ?? ''}`.trimEnd());
      port = p.port;
    }
    const r = await this.network.probe(netns, ip, port);
    const dnsText = lookup ? lookupText(lookup) : '';
    return {
      from: `${fns}/${fname}`,
      to,
      ip,
      port,
      ...r,
      text: dnsText ? `${dnsText}\n${r.text}` : r.text,
      trace: r.trace as unknown[],
      ...(lookup?.viaDatapath ? { dns: { queries: lookup.queries.map((q) => ({ ...q, trace: q.trace as unknown[] })) } } : {}),
    };
  }
}
