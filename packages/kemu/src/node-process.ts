// Nodes in processes of their own. `kemu node` runs one node (kubelet, CRI runtime, CSI driver, network)
// against a cluster's API socket, or straight against etcd from another machine, and serves the runtime and
// the driver on sockets under the node's directory. The composed cluster spawns one per node with
// `kemu up --node-processes`, and reaches each node's runtime and driver over those sockets.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Node, SharedInformer, type Store, type Taint } from '@kemu/core';
import { HOST_NETNS } from '@kemu/cni';
import { cri, csi, type GrpcChannel, openChannel, type PromiseApi } from '@kemu/proto';
import { createClusterNetwork } from './cluster-network.js';
import { CRI_ENDPOINT_ANNOTATION, CSI_ENDPOINT_ANNOTATION, type ClusterNode, nodeDir, type RuntimeKind, startNode } from './node.js';
import type { KubeletConfiguration } from '@kemu/kubelet';
import type { DeviceRequest } from './node-resources.js';
import { KUBE_PROXY, nodeUser, RemoteStore, type UserInfo } from '@kemu/apiserver';
import { addonUser } from './component-identities.js';
import { startNodePolicyAgent } from './node-policy.js';
import { startNodeProxy } from './node-proxy.js';
import { formatTaint } from './node-registration.js';

export interface NodeProcessSpec {
  name: string;
  ip: string;
  podCIDR: string;
  stateDir: string;
  apiSocket: string;
  datapath: 'sim' | 'linux';
  network: 'bridge' | 'vxlan';
  podNetwork: string;
  runtime: RuntimeKind;
  storage: 'sim' | 'hostpath';
  durable: boolean;
  fast: boolean;
  /** The node's KubeletConfiguration file, passed on as --kubelet-config. */
  kubeletConfigFile?: string;
  /** Simulated devices, passed on as --device. */
  devices?: DeviceRequest[];
  /** Taints and labels the node registers with, passed on as --register-with-taints and --node-labels. */
  taints?: Taint[];
  labels?: Record<string, string>;
  /** The control plane's store, to wait for the node's registration. */
  store: Store;
}

export interface RemoteNode extends NodeConnection {
  spec: NodeProcessSpec;
  child: ChildProcess;
  exited: Promise<number | null>;
}

/** The built CLI next to this module (dist/cli.js), which `kemu node` children run. */
export function cliPath(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const p of [path.join(here, 'cli.js'), path.join(here, '..', 'dist', 'cli.js')]) if (fs.existsSync(p)) return p;
  throw new Error('the kemu CLI is not built (dist/cli.js): run `npx nx build kemu` first');
}

export function nodeArgs(s: Omit<NodeProcessSpec, 'store'>): string[] {
  return [
    'node',
    '--name', s.name,
    '--node-ip', s.ip,
    '--pod-cidr', s.podCIDR,
    '--state-dir', s.stateDir,
    '--api-socket', s.apiSocket,
    '--datapath', s.datapath,
    '--network', s.network,
    '--pod-network', s.podNetwork,
    '--runtime', s.runtime,
    '--storage', s.storage,
    ...(s.durable ? ['--durable'] : []),
    ...(s.fast ? ['--fast'] : []),
    ...(s.kubeletConfigFile ? ['--kubelet-config', s.kubeletConfigFile] : []),
    ...(s.devices ?? []).flatMap((d) => ['--device', `${d.resource}=${d.count}${d.model ? `:${d.model}` : ''}`]),
    ...(s.taints?.length ? ['--register-with-taints', s.taints.map(formatTaint).join(',')] : []),
    ...(s.labels && Object.keys(s.labels).length ? ['--node-labels', Object.entries(s.labels).map(([k, v]) => `${k}=${v}`).join(',')] : []),
  ];
}

function tail(file: string, lines = 5): string {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** Spawns `kemu node` and resolves once its Node is Ready and its sockets answer. */
export async function spawnNodeProcess(spec: NodeProcessSpec, timeoutMs = 60_000): Promise<RemoteNode> {
  const dir = nodeDir(spec.stateDir, spec.name);
  fs.mkdirSync(dir, { recursive: true, mode: 0o750 });
  const logFile = path.join(dir, 'node.log');
  const log = fs.openSync(logFile, 'a', 0o600);
  const { store: _store, ...rest } = spec;
  const child = spawn(process.execPath, [cliPath(), ...nodeArgs(rest)], { stdio: ['ignore', log, log] });
  fs.closeSync(log);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let gone: number | null | undefined;
  void exited.then((c) => (gone = c));
  const end = Date.now() + timeoutMs;
  const since = Date.now();
  for (;;) {
    if (gone !== undefined)
      throw new Error(`node process ${spec.name} exited with ${gone} before registering: ${tail(logFile)}`);
    if (Date.now() > end) {
      child.kill('SIGKILL');
      throw new Error(`node process ${spec.name} did not become Ready within ${timeoutMs / 1000} s: ${tail(logFile)}`);
    }
    const node = await spec.store.get('Node', '', spec.name).catch(() => undefined);
    const ready = node?.status?.conditions?.find((c) => c.type === 'Ready');
    const annotated = node?.metadata.annotations?.[CRI_ENDPOINT_ANNOTATION];
    // A restarted node finds its old Node object: only a heartbeat from this process counts.
    if (ready?.status === 'True' && annotated && Date.parse(ready.lastHeartbeatTime ?? '') >= since - 1000) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { spec, child, exited, ...connectNode(path.join(dir, 'cri.sock'), path.join(dir, 'csi.sock')) };
}

export interface NodeConnection {
  criSocket: string;
  csiSocket: string;
  runtime: PromiseApi<cri.RuntimeServiceMethods>;
  csi: {
    controller: PromiseApi<csi.ControllerMethods>;
    identity: PromiseApi<csi.IdentityMethods>;
    node: PromiseApi<csi.NodeMethods>;
  };
  clients: GrpcChannel[];
}

/** gRPC channels to a node's runtime and driver sockets (the client is KEMU_GRPC_CLIENT's, else http2). */
export function connectNode(criSocket: string, csiSocket: string): NodeConnection {
  const rtChannel = openChannel(`unix://${criSocket}`);
  const csiChannel = openChannel(`unix://${csiSocket}`);
  return {
    criSocket,
    csiSocket,
    runtime: rtChannel.service(cri.RuntimeServiceService),
    csi: {
      controller: csiChannel.service(csi.ControllerService),
      identity: csiChannel.service(csi.IdentityService),
      node: csiChannel.service(csi.NodeService),
    },
    clients: [rtChannel, csiChannel],
  };
}

/**
 * A node that joined by hand (`kemu node`) announces its sockets on its Node; when they are on this machine
 * the control plane connects to them, so volumes route to its driver and logs/exec reach its runtime.
 */
export function joinedNodeSockets(n: Node): { criSocket: string; csiSocket: string } | undefined {
  const a = n.metadata.annotations ?? {};
  const cri = a[CRI_ENDPOINT_ANNOTATION];
  const csi = a[CSI_ENDPOINT_ANNOTATION];
  if (!cri?.startsWith('unix:///') || !csi?.startsWith('unix:///')) return undefined;
  const criSocket = cri.slice('unix://'.length);
  const csiSocket = csi.slice('unix://'.length);
  for (const p of [criSocket, csiSocket]) if (p.includes('\0') || !fs.statSync(p, { throwIfNoEntry: false })?.isSocket()) return undefined;
  return { criSocket, csiSocket };
}

/** SIGTERM (the node stops its agents, pods keep running) or SIGKILL (a crash); waits for the exit. */
export async function stopNodeProcess(n: RemoteNode, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
  for (const c of n.clients) c.close();
  if (n.child.exitCode !== null || n.child.signalCode !== null) return;
  n.child.kill(signal);
  const timer = setTimeout(() => n.child.kill('SIGKILL'), 10_000);
  await n.exited;
  clearTimeout(timer);
}

export interface RunNodeOptions {
  name: string;
  ip: string;
  podCIDR: string;
  stateDir: string;
  datapath: 'sim' | 'linux';
  network: 'bridge' | 'vxlan';
  podNetwork?: string;
  runtime: RuntimeKind;
  storage: 'sim' | 'hostpath';
  durable: boolean;
  fast: boolean;
  /** The store this node talks to: the cluster API socket, or etcd directly. */
  store: Store;
  /**
   * The store each of the node's components uses as its upstream user (the kubelet as system:node:<name>,
   * kube-proxy as system:kube-proxy, the policy agent as calico-node); default `store` for all.
   */
  storeFor?: (user: UserInfo) => Store;
  kubeletConfig?: KubeletConfiguration;
  devices?: DeviceRequest[];
  taints?: Taint[];
  labels?: Record<string, string>;
  onError?: (err: unknown, context: string) => void;
}

export interface RunningNodeProcess {
  node: ClusterNode;
  stop(): Promise<void>;
}

/**
 * What `kemu node` runs: the node with its sockets served, its Node annotated with their endpoints, on
 * the linux datapath a route to every other node's pod CIDR kept in sync from the Node objects (what a
 * host-gw network daemon does), and beside the kubelet, as a real node runs them (the kube-proxy and
 * policy agent DaemonSets), kube-proxy and the network policy agent programming this node's netfilter.
 */
export async function runNode(o: RunNodeOptions): Promise<RunningNodeProcess> {
  const network = createClusterNetwork({ datapath: o.datapath, stateDir: o.stateDir, overlay: o.network });
  const as = o.storeFor ?? (() => o.store);
  const kubeletStore = as(nodeUser(o.name));
  const node = await startNode({
    name: o.name,
    ip: o.ip,
    podCIDR: o.podCIDR,
    stateDir: o.stateDir,
    store: kubeletStore,
    network,
    runtime: o.runtime,
    storage: o.storage,
    durable: o.durable,
    serveSockets: true,
    fast: o.fast,
    podNetwork: o.podNetwork,
    kubeletConfig: o.kubeletConfig,
    devices: o.devices,
    taints: o.taints,
    labels: o.labels,
    kubeletServer: true,
    onError: o.onError,
  });
  let informer: SharedInformer<'Node', Node> | undefined;
  const agents: Array<() => Promise<void>> = [];
  const stopAgents = async () => {
    for (const stop of agents.reverse().splice(0)) await stop().catch((err) => o.onError?.(err, `${o.name}: stop`));
  };
  try {
    const proxy = await startNodeProxy({
      store: as(KUBE_PROXY),
      network,
      nodeName: o.name,
      podNetwork: o.podNetwork ?? '10.244.0.0/16',
      fast: o.fast,
      onError: (e) => o.onError?.(e, `${o.name}: kube-proxy`),
    });
    agents.push(() => proxy.stop());
    const policy = await startNodePolicyAgent({ store: as(addonUser('policyAgent')), network, nodeName: o.name, fast: o.fast, onError: (e) => o.onError?.(e, `${o.name}: network policy`) });
    agents.push(() => policy.stop());
    await kubeletStore.patch('Node', '', o.name, {
      metadata: {
        annotations: {
          [CRI_ENDPOINT_ANNOTATION]: `unix://${node.criSocket}`,
          [CSI_ENDPOINT_ANNOTATION]: `unix://${node.csiSocket}`,
        },
      },
    });
    // Node processes share the machine's kernel, not a simulated world: only there do routes reach the others.
    if (network.onMachine && o.network === 'bridge') {
      const mine = network.nodes.get(o.name)!;
      const routes = new Map<string, string>();
      const sync = async (n: Node, gone = false) => {
        const name = n.metadata.name ?? '';
        if (name === o.name) return;
        const cidr = n.spec?.podCIDR;
        const via = n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
        const prev = routes.get(name);
        if (prev && (gone || prev !== `${cidr} via ${via}`)) {
          const [dst, , gw] = prev.split(' ');
          await mine.datapath.delRoute(HOST_NETNS, { dst, via: gw, dev: 'eth0' }).catch(() => {});
          routes.delete(name);
        }
        if (gone || !cidr || !via) return;
        await mine.datapath.addRoute(HOST_NETNS, { dst: cidr, via, dev: 'eth0' }, { replace: true });
        routes.set(name, `${cidr} via ${via}`);
      };
      const report = (err: unknown) => o.onError?.(err, `${o.name}: routes`);
      informer = new SharedInformer(kubeletStore, 'Node', { onError: report });
      informer.addEventHandler({
        onAdd: (n) => void sync(n).catch(report),
        onUpdate: (_old, n) => void sync(n).catch(report),
        onDelete: (n) => void sync(n, true).catch(report),
      });
      informer.start();
      await informer.waitForSync();
    }
  } catch (err) {
    informer?.stop();
    await stopAgents();
    await node.stop();
    throw err;
  }
  return {
    node,
    async stop() {
      informer?.stop();
      await stopAgents();
      await node.stop();
    },
  };
}

/**
 * The stores a node process uses: etcd when given (every component on it: etcd knows no users), else the
 * cluster's API socket, where each component acts as its upstream user through its own store.
 */
export async function nodeStores(o: { apiSocket: string; etcdEndpoints?: string[] }): Promise<{ store: Store; storeFor(user: UserInfo): Store; close(): Promise<void> }> {
  if (o.etcdEndpoints?.length) {
    const { createEtcdStore } = await import('@kemu/core');
    const store = await createEtcdStore({ endpoints: o.etcdEndpoints });
    return { store, storeFor: () => store, close: () => store.close() };
  }
  const store = new RemoteStore(o.apiSocket);
  const users = new Map<string, RemoteStore>();
  return {
    store,
    storeFor(user) {
      let s = users.get(user.name);
      if (!s) users.set(user.name, (s = new RemoteStore(o.apiSocket, user)));
      return s;
    },
    async close() {
      for (const s of users.values()) await s.close();
      await store.close();
    },
  };
}
