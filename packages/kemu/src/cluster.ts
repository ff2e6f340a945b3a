// A whole emulated cluster in one process: the store, the storage controllers, the scheduler, the CSI
// sidecars, and per node a CSI driver, a CRI runtime with CNI networking on the simulated datapath, and a
// kubelet. Everything talks through the same APIs the standalone packages serve on sockets.
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
  type Pod,
  type Store,
} from '@kemu/core';
import { AttachDetachController, PersistentVolumeBinder } from '@kemu/core/controllers';
import { createCri, type CriInstance, type CriRuntimeConfig, parseCriLog, startCriServer } from '@kemu/cri';
import { createCsiDriver, type CsiDriver, DEFAULT_DRIVER_NAME, DEFAULT_TOPOLOGY_KEY } from '@kemu/csi';
import { ExternalAttacher, ExternalProvisioner } from '@kemu/csi-sidecars';
import { Kubelet, NodeLifecycleController, StaticPluginRegistry } from '@kemu/kubelet';
import { formatTrace } from '@kemu/netsim';
import { cri, csi, inProcessApi } from '@kemu/proto';
import { Scheduler } from '@kemu/scheduler';
import type { ApiExtensions, ExecResult } from './api-server.js';
import { CsiRouter, type NodeDriver } from './csi-router.js';
import { LinuxClusterNetwork, linuxUnsupportedReason } from './linux-network.js';
import { SimClusterNetwork } from './sim-network.js';

export type StoreKind = 'memory' | 'file' | 'etcd';

export interface ClusterOptions {
  nodes?: number;
  stateDir: string;
  store?: StoreKind;
  etcdEndpoints?: string[];
  datapath?: 'sim' | 'linux';
  network?: 'bridge' | 'vxlan' | 'bgp';
  storage?: 'sim' | 'hostpath';
  runtime?: 'sim' | 'process';
  /** Pod CIDRs are /24s carved from this (default 10.244.0.0/16, or 10.0.0.0/8 beyond 255 nodes). */
  podSubnet?: string;
  /** Node IPs on the simulated underlay: host 10 + i of this (default 172.18.0.0/16). */
  nodeSubnet?: string;
  /** Shorter periods (PLEG, heartbeats) for tests and demos; the defaults are upstream's. */
  fast?: boolean;
  /** Progress messages for long operations. */
  onProgress?: (step: string, done: number, total: number) => void;
  onError?: (err: unknown, context: string) => void;
}

export interface ClusterNode {
  name: string;
  ip: string;
  podCIDR: string;
  cri: CriInstance;
  /** The runtime's CRI socket, when the node serves one (the linux datapath does, for crictl-style tools). */
  criSocket?: string;
  /** The node's network namespace on the linux datapath. */
  netns?: string;
  kubelet: Kubelet;
  csi: CsiDriver;
  podLogsDir: string;
}

/** What this composition supports today; anything else is refused with a clear message. */
export function checkSupported(o: ClusterOptions): void {
  const unsupported: string[] = [];
  const datapath = o.datapath ?? 'sim';
  if (datapath === 'linux') {
    const why = linuxUnsupportedReason();
    if (why) throw new Error(`--datapath linux cannot run here: ${why}`);
  }
  if ((o.runtime ?? 'sim') === 'process' && datapath !== 'linux')
    unsupported.push('--runtime process on the sim datapath (real processes need real network namespaces: add --datapath linux)');
  if ((o.network ?? 'bridge') !== 'bridge')
    unsupported.push(`--network ${o.network} (only bridge routing between nodes is composed so far)`);
  if (unsupported.length) throw new Error(`not supported by \`kemu up\` yet: ${unsupported.join('; ')}`);
}

/** Real processes need real directories to mount, so the process runtime defaults to hostpath storage. */
export function storageKind(o: Pick<ClusterOptions, 'storage' | 'runtime'>): 'sim' | 'hostpath' {
  return o.storage ?? ((o.runtime ?? 'sim') === 'process' ? 'hostpath' : 'sim');
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
  const [addr, lenText] = base.split('/');
  const o = addr.split('.').map(Number);
  const len = Number(lenText ?? 32);
  if (o.length !== 4 || o.some((x) => !Number.isInteger(x) || x < 0 || x > 255) || !(len >= 0 && len <= 32)) {
    throw new Error(`invalid subnet ${base}`);
  }
  const network = ((o[0] << 24) >>> 0) + (o[1] << 16) + (o[2] << 8) + o[3];
  const size = 2 ** (32 - len);
  const offset = kind === 'pod' ? (i + 1) * 256 : 10 + i;
  if (offset + (kind === 'pod' ? 256 : 1) > size) throw new Error(`${base} is too small for ${i + 1} nodes`);
  const n = network + offset;
  const ip = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  return kind === 'pod' ? `${ip}/24` : ip;
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
  readonly nodes: ClusterNode[] = [];
  readonly network: SimClusterNetwork | LinuxClusterNetwork;
  private readonly stoppers: Array<() => Promise<void>> = [];
  private constructor(
    readonly options: ClusterOptions,
    readonly store: Store,
  ) {
    this.network =
      (options.datapath ?? 'sim') === 'linux'
        ? new LinuxClusterNetwork(options.stateDir)
        : new SimClusterNetwork(options.stateDir, (options.store ?? 'memory') !== 'memory');
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

    for (const ns of ['default', 'kube-system'])
      await ensure(store, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
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
    const binder = new PersistentVolumeBinder({ store, resyncPeriodMs: fast ? 2000 : 15_000 });
    await binder.start();
    this.stoppers.push(() => binder.stop());
    const ad = new AttachDetachController({ store, resyncPeriodMs: fast ? 2000 : 10_000 });
    await ad.start();
    this.stoppers.push(() => ad.stop());
    const scheduler = new Scheduler({ store });
    await scheduler.start();
    this.stoppers.push(() => scheduler.stop());
    const nlc = new NodeLifecycleController({
      store,
      gracePeriodMs: fast ? 4000 : 40_000,
      monitorPeriodMs: fast ? 500 : 5000,
    });
    nlc.start();
    this.stoppers.push(() => nlc.stop());

    // CSI: a driver per node, one controller endpoint in front of them for the sidecars.
    const drivers = new Map<string, NodeDriver>();
    const router = new CsiRouter(drivers, DEFAULT_TOPOLOGY_KEY);
    const provisioner = new ExternalProvisioner({
      store,
      csi: router,
      driverName: DEFAULT_DRIVER_NAME,
      topology: true,
      extraCreateMetadata: true,
      onError: (w, e) => onError(e, `provisioner: ${w}`),
    });
    const attacher = new ExternalAttacher({
      store,
      csi: router,
      driverName: DEFAULT_DRIVER_NAME,
      onError: (w, e) => onError(e, `attacher: ${w}`),
    });

    for (let i = 0; i < n; i++) {
      const name = `kemu-node-${i + 1}`;
      await this.addNode(name, i, drivers);
      this.progress('nodes', i + 1, n);
    }
    await router.rescan();
    await provisioner.start();
    this.stoppers.push(() => provisioner.stop());
    await attacher.start();
    this.stoppers.push(() => attacher.stop());
  }

  private async addNode(name: string, i: number, drivers: Map<string, NodeDriver>) {
    const o = this.options;
    const fast = o.fast ?? false;
    const ip = subnet(o.nodeSubnet ?? '172.18.0.0/16', i, 'node');
    // 10.244.0.0/16 holds 255 nodes' /24s; bigger clusters take theirs from 10.0.0.0/8.
    const podCIDR = subnet(o.podSubnet ?? ((o.nodes ?? 3) > 255 ? '10.0.0.0/8' : '10.244.0.0/16'), i, 'pod');
    const nodeDir = path.join(o.stateDir, 'nodes', name);
    const podLogsDir = path.join(nodeDir, 'pods');
    fs.mkdirSync(podLogsDir, { recursive: true, mode: 0o750 });

    const hostpath = storageKind(o) === 'hostpath';
    const kubeletRoot = hostpath ? path.join(nodeDir, 'kubelet') : '/var/lib/kubelet';
    const driver = await createCsiDriver({
      backend: hostpath ? 'hostpath' : 'sim',
      nodeId: name,
      stateDir: path.join(nodeDir, 'csi'),
      enableAttach: true,
      pathRoots: [kubeletRoot],
      useMounts: false,
    });
    const nodeApi = inProcessApi(csi.NodeService, driver.node as never);
    drivers.set(name, {
      node: name,
      controller: inProcessApi(csi.ControllerService, driver.controller as never),
      identity: inProcessApi(csi.IdentityService, driver.identity as never),
      nodeService: nodeApi,
    });

    const net = await this.network.addNode(name, ip, podCIDR);
    const durable = (o.store ?? 'memory') !== 'memory';
    const linux = this.network instanceof LinuxClusterNetwork;
    const criConfig: CriRuntimeConfig = {
      backend: o.runtime ?? 'sim',
      syntheticImages: true,
      network: net.manager,
      sim: { netns: net.netnsHooks },
      process: { netnsPrefix: `${linux ? (this.network as LinuxClusterNetwork).prefix : 'kemu'}-pod-` },
      podCidr: podCIDR,
      allowedLogRoots: [podLogsDir],
      streaming: false,
      // Real processes and namespaces outlive a crash of this process, so the runtime always keeps its
      // state on a real datapath; the simulated one only with a durable store.
      stateDir: durable || linux ? path.join(nodeDir, 'cri') : undefined,
    };
    let criSocket: string | undefined;
    let runtime: CriInstance;
    if (linux) {
      criSocket = path.join(nodeDir, 'cri.sock');
      runtime = await startCriServer({ ...criConfig, listen: `unix://${criSocket}` });
    } else {
      runtime = await createCri(criConfig);
    }
    this.stoppers.push(() => runtime.close());
    const kubelet = new Kubelet({
      store: this.store,
      nodeName: name,
      nodeIP: ip,
      podCIDR,
      runtime: inProcessApi(cri.RuntimeServiceService, runtime.runtimeService),
      images: inProcessApi(cri.ImageServiceService, runtime.imageService),
      csi: new StaticPluginRegistry(new Map([[DEFAULT_DRIVER_NAME, nodeApi]])),
      rootDir: hostpath ? kubeletRoot : undefined,
      podLogsDir,
      relistPeriodMs: fast ? 200 : 1000,
      leaseRenewMs: fast ? 500 : 10_000,
      statusUpdateMs: fast ? 500 : 10_000,
      // Upstream's CrashLoopBackOff is 10 s doubling to 5 min; fast mode keeps the shape at a smaller scale.
      backoff: fast ? { initialMs: 1000, maxMs: 8000, resetAfterMs: 60_000 } : undefined,
      onError: (e, ctx) => this.options.onError?.(e, `${name}: ${ctx}`),
    });
    await kubelet.start();
    this.stoppers.push(() => kubelet.stop());
    this.nodes.push({
      name,
      ip,
      podCIDR,
      cri: runtime,
      criSocket,
      netns: 'netnsPath' in net ? net.netnsPath : undefined,
      kubelet,
      csi: driver,
      podLogsDir,
    });
  }

  node(name: string): ClusterNode | undefined {
    return this.nodes.find((n) => n.name === name);
  }

  async stop(): Promise<void> {
    const linux = this.network instanceof LinuxClusterNetwork;
    // A memory store forgets the cluster, so on a real datapath nothing it made may outlive it: pods are
    // torn down through their kubelets first (volumes unpublished, CNI DEL, processes stopped).
    const teardown = linux && (this.options.store ?? 'memory') === 'memory';
    if (teardown) await this.drain();
    // Saved first, as it is with the pods running: kubelets and runtimes then stop without tearing pods
    // down, as on a real node, and a restart finds everything where it was.
    if (this.network instanceof SimClusterNetwork) {
      const net = this.network;
      this.stoppers.push(async () => net.save());
    }
    for (const s of this.stoppers.reverse().splice(0)) {
      try {
        await s();
      } catch (err) {
        this.options.onError?.(err, 'stop');
      }
    }
    if (teardown) {
      try {
        await unmountUnder(this.options.stateDir);
        await (this.network as LinuxClusterNetwork).destroy();
      } catch (err) {
        this.options.onError?.(err, 'stop: removing network namespaces');
      }
    }
    await this.store.close();
  }

  /** Deletes every pod and waits for the kubelets to tear them down; what is left is removed directly. */
  private async drain(): Promise<void> {
    const sandboxes = async () => {
      let n = 0;
      for (const node of this.nodes)
        n += ((await node.cri.runtimeService.ListPodSandbox!({}, {} as never)).items ?? []).length;
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
      for (const node of this.nodes) {
        for (const sb of (await node.cri.runtimeService.ListPodSandbox!({}, {} as never)).items ?? []) {
          await node.cri.runtimeService.StopPodSandbox!({ podSandboxId: sb.id }, {} as never);
          await node.cri.runtimeService.RemovePodSandbox!({ podSandboxId: sb.id }, {} as never);
        }
      }
    } catch (err) {
      this.options.onError?.(err, 'stop: tearing pods down');
    }
  }

  private async podAndNode(namespace: string, name: string): Promise<{ pod: Pod; node: ClusterNode }> {
    const pod = await this.store.get('Pod', namespace, name);
    const node = pod.spec.nodeName ? this.node(pod.spec.nodeName) : undefined;
    if (!node) throw new Error(`pod ${namespace}/${name} is not running on a node of this cluster yet`);
    return { pod, node };
  }

  private async container(namespace: string, name: string, container?: string) {
    const { pod, node } = await this.podAndNode(namespace, name);
    const cname = container ?? pod.spec.containers[0]?.name;
    const list = await node.cri.runtimeService.ListContainers!(
      {
        filter: {
          labelSelector: {
            'io.kubernetes.pod.uid': pod.metadata.uid ?? '',
            'io.kubernetes.container.name': cname ?? '',
          },
        },
      },
      {} as never,
    );
    const latest = [...(list.containers ?? [])].sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0))[0];
    if (!latest) throw new Error(`container ${cname} of pod ${namespace}/${name} has not been created yet`);
    return { pod, node, id: latest.id ?? '' };
  }

  /** The API server's extension endpoints: logs, exec and traces need the nodes' runtimes and network. */
  extensions(): ApiExtensions {
    return {
      podLog: async (ns, name, opts) => {
        const { node, id } = await this.container(ns, name, opts.container);
        const st = await node.cri.runtimeService.ContainerStatus!(
          { containerId: id, verbose: false },
          {} as never,
        );
        const file = st.status?.logPath ?? '';
        if (!file || !fs.existsSync(file)) return '';
        const lines = parseCriLog(fs.readFileSync(file, 'utf8'));
        const text: string[] = [];
        let cur = '';
        for (const r of lines) {
          cur += r.text;
          if (!r.partial) {
            text.push(cur);
            cur = '';
          }
        }
        const out = opts.tail !== undefined ? text.slice(-opts.tail) : text;
        return out.length ? `${out.join('\n')}\n` : '';
      },
      podExec: async (ns, name, opts): Promise<ExecResult> => {
        const { node, id } = await this.container(ns, name, opts.container);
        const r = await node.cri.runtimeService.ExecSync!(
          { containerId: id, cmd: opts.command, timeout: 30 },
          {} as never,
        );
        return {
          stdout: Buffer.from(r.stdout ?? []).toString(),
          stderr: Buffer.from(r.stderr ?? []).toString(),
          exitCode: r.exitCode ?? 0,
        };
      },
      trace: async (from, to) => this.trace(from, to),
      info: async () => ({
        nodes: this.nodes.map((n) => ({ name: n.name, ip: n.ip, podCIDR: n.podCIDR, criSocket: n.criSocket, netns: n.netns })),
        options: { ...this.options, onProgress: undefined, onError: undefined },
      }),
    };
  }

  /** A ping from one pod to another pod (by name) or an IP, with the hop-by-hop trace. */
  async trace(from: string, to: string) {
    const split = (s: string) =>
      s.includes('/') ? (s.split('/', 2) as [string, string]) : (['default', s] as [string, string]);
    const [fns, fname] = split(from);
    const src = await this.store.get('Pod', fns, fname);
    let ip = to;
    if (!/^[\d.]+$/.test(to) && !to.includes(':')) {
      const [tns, tname] = split(to);
      try {
        ip = (await this.store.get('Pod', tns, tname)).status?.podIP ?? '';
      } catch (err) {
        if (isNotFound(err)) throw new Error(`pod ${tns}/${tname} not found`);
        throw err;
      }
      if (!ip) throw new Error(`pod ${tns}/${tname} has no IP yet`);
    }
    if (this.network instanceof LinuxClusterNetwork) {
      const r = await this.network.ping(src.metadata.uid ?? '', ip);
      return { from: `${fns}/${fname}`, to, ip, ...r, trace: [] };
    }
    const result = this.network.ping(src.metadata.uid ?? '', ip);
    return {
      from: `${fns}/${fname}`,
      to,
      ip,
      reachable: result.reachable,
      transmitted: result.transmitted,
      received: result.received,
      error: result.error,
      trace: result.trace as unknown[],
      text: formatTrace(result.trace),
    };
  }
}
