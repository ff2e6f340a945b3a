// One node of the cluster: its CSI driver, its network, its CRI runtime and its kubelet, wired the way a
// real node wires them. The composed cluster starts these in its own process; `kemu node` starts one in a
// process of its own, serving the runtime and the driver on sockets under the node's directory.
import fs from 'node:fs';
import path from 'node:path';
import type { Store, Taint } from '@kemu/core';
import { createCri, type CriInstance, type CriRuntimeConfig, startCriServer } from '@kemu/cri';
import { ALPHA_CAPABILITY_NAMES, createCsiDriver, type CsiDriver, DEFAULT_DRIVER_NAME, serveCsiDriver } from '@kemu/csi';
import { VxlanAgent } from '@kemu/cni-vxlan';
import { detectCgroupVersion, Kubelet, type KubeletConfiguration, RealCgroupManager, StaticPluginRegistry, type TokenSource } from '@kemu/kubelet';
import { cri, csi, inProcessApi, type PromiseApi } from '@kemu/proto';
import type { ClusterNetwork } from './cluster-network.js';
import { type DeviceRequest, devicePluginDir, startDevicePlugins } from './node-resources.js';

/** Annotations a node process puts on its Node so the control plane can reach its sockets. */
export const CSI_ENDPOINT_ANNOTATION = 'kemu.io/csi-endpoint';
export const CRI_ENDPOINT_ANNOTATION = 'kemu.io/cri-endpoint';

/** The node's CRI runtime backend: simulated, host processes, or runc running real OCI images. */
export type RuntimeKind = 'sim' | 'process' | 'runc';

/** Runtimes whose pods are real processes (they need real network namespaces and real directories). */
export function isRealRuntime(r: RuntimeKind | undefined): boolean {
  return r === 'process' || r === 'runc';
}

export interface NodeSpec {
  name: string;
  ip: string;
  podCIDR: string;
  stateDir: string;
  store: Store;
  network: ClusterNetwork;
  runtime: RuntimeKind;
  storage: 'sim' | 'hostpath';
  /** The store outlives this process (file, etcd), so the runtime must keep its state too. */
  durable: boolean;
  /** Serve CRI and CSI on `<stateDir>/nodes/<name>/{cri,csi}.sock`. */
  serveSockets: boolean;
  /** Run the CRI streaming server on loopback, for exec/attach/port-forward through the API server. */
  streaming?: boolean;
  fast: boolean;
  /** The cluster's pod network (the node's pod CIDR is carved from it); the vxlan overlay routes it. */
  podNetwork?: string;
  /** The kubelet's KubeletConfiguration (reserved resources, eviction, cgroups, maxPods, DNS). */
  kubeletConfig?: KubeletConfiguration;
  /** Simulated devices, each served by a device plugin beside the kubelet. */
  devices?: DeviceRequest[];
  /** Taints and labels the kubelet registers its Node with (--register-with-taints, --node-labels). */
  taints?: Taint[];
  labels?: Record<string, string>;
  /** Serve the kubelet's /stats/summary and /metrics on a loopback port (what `kemu top` reads). */
  kubeletServer?: boolean;
  /** The API server's TokenRequest, for projected service account tokens. */
  serviceAccountTokens?: TokenSource;
  onError?: (err: unknown, context: string) => void;
}

export interface ClusterNode {
  name: string;
  ip: string;
  podCIDR: string;
  cri: CriInstance;
  /** The runtime's CRI socket, when the node serves one (for crictl-style tools). */
  criSocket?: string;
  csiSocket?: string;
  /** The node's network namespace on the linux datapath. */
  netns?: string;
  kubelet: Kubelet;
  csi: CsiDriver;
  csiApi: {
    controller: PromiseApi<csi.ControllerMethods>;
    identity: PromiseApi<csi.IdentityMethods>;
    node: PromiseApi<csi.NodeMethods>;
  };
  podLogsDir: string;
  /** Stops the kubelet, the runtime and the driver (pods stay, as on a real node whose agents stop). */
  stop(): Promise<void>;
}

export function nodeDir(stateDir: string, name: string): string {
  return path.join(stateDir, 'nodes', name);
}

export async function startNode(s: NodeSpec): Promise<ClusterNode> {
  const dir = nodeDir(s.stateDir, s.name);
  const podLogsDir = path.join(dir, 'pods');
  fs.mkdirSync(podLogsDir, { recursive: true, mode: 0o750 });
  const stoppers: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const f of stoppers.reverse().splice(0)) {
      try {
        await f();
      } catch (err) {
        s.onError?.(err, `${s.name}: stop`);
      }
    }
  };
  try {
    const hostpath = s.storage === 'hostpath';
    // Both CSI backends create target paths for real (the SP's duty), so every node gets its own kubelet root.
    const kubeletRoot = path.join(dir, 'kubelet');
    const driverOpts = {
      backend: hostpath ? ('hostpath' as const) : ('sim' as const),
      nodeId: s.name,
      stateDir: path.join(dir, 'csi'),
      enableAttach: true,
      // the cluster's own sidecars and kubelet know CSI v1.12, alpha capabilities included
      alphaCapabilities: ALPHA_CAPABILITY_NAMES,
      pathRoots: [kubeletRoot],
      useMounts: false,
      // A node process can be killed and started again: the simulated driver's volumes must survive it.
      simPersist: s.serveSockets,
    };
    let driver: CsiDriver;
    let csiSocket: string | undefined;
    if (s.serveSockets) {
      csiSocket = path.join(dir, 'csi.sock');
      const served = await serveCsiDriver({ ...driverOpts, endpoint: `unix://${csiSocket}` });
      stoppers.push(() => served.close());
      driver = served;
    } else {
      driver = await createCsiDriver(driverOpts);
      stoppers.push(() => driver.release());
    }
    const csiApi = {
      controller: inProcessApi(csi.ControllerService, driver.controller as never),
      identity: inProcessApi(csi.IdentityService, driver.identity as never),
      node: inProcessApi(csi.NodeService, driver.node as never),
    };

    const net = await s.network.addNode(s.name, s.ip, s.podCIDR);
    const linux = s.network.onMachine;
    const criConfig: CriRuntimeConfig = {
      backend: s.runtime,
      syntheticImages: true,
      network: net.manager,
      sim: { netns: net.netnsHooks },
      process: { netnsPrefix: s.network.podNetnsPrefix },
      // runc pulls real images from registries (loopback ones over plain HTTP, as containerd allows).
      runc: { netnsPrefix: s.network.podNetnsPrefix },
      podCidr: s.podCIDR,
      allowedLogRoots: [podLogsDir],
      streaming: s.streaming || s.serveSockets ? { host: '127.0.0.1', port: 0 } : false,
      // Real processes and namespaces outlive this process, and so does a durable store: then the runtime
      // keeps its state on disk to find its pods again.
      stateDir: s.durable || linux || s.serveSockets ? path.join(dir, 'cri') : undefined,
    };
    let runtime: CriInstance;
    let criSocket: string | undefined;
    if (s.serveSockets || linux) {
      criSocket = path.join(dir, 'cri.sock');
      runtime = await startCriServer({ ...criConfig, listen: `unix://${criSocket}` });
    } else {
      runtime = await createCri(criConfig);
    }
    stoppers.push(() => runtime.close());
    const fast = s.fast;
    const kubelet = new Kubelet({
      store: s.store,
      nodeName: s.name,
      nodeIP: s.ip,
      podCIDR: s.podCIDR,
      runtime: inProcessApi(cri.RuntimeServiceService, runtime.runtimeService, { serialize: false }),
      images: inProcessApi(cri.ImageServiceService, runtime.imageService, { serialize: false }),
      // Evented PLEG: the runtime's event stream wakes the pod's worker at once; relisting only catches up.
      containerEvents: () =>
        runtime.runtimeService.GetContainerEvents!({}, undefined as never) as AsyncIterable<cri.ContainerEventResponse>,
      csi: new StaticPluginRegistry(new Map([[DEFAULT_DRIVER_NAME, csiApi.node]])),
      rootDir: kubeletRoot,
      podLogsDir,
      relistPeriodMs: fast ? 200 : 1000,
      // Mounted ConfigMaps/Secrets follow their sources at this pace (upstream's syncFrequency is 1 min).
      syncFrequencyMs: fast ? 1000 : 60_000,
      leaseRenewMs: fast ? 500 : 10_000,
      statusUpdateMs: fast ? 500 : 10_000,
      // Upstream's CrashLoopBackOff is 10 s doubling to 5 min; fast mode keeps the shape at a smaller scale.
      backoff: fast ? { initialMs: 1000, maxMs: 8000, resetAfterMs: 60_000 } : undefined,
      onError: (e, ctx) => s.onError?.(e, `${s.name}: ${ctx}`),
      config: s.kubeletConfig,
      taints: s.taints,
      labels: s.labels,
      serviceAccountTokens: s.serviceAccountTokens,
      evictionMonitoringPeriodMs: fast ? 500 : 10_000,
      // A Registration socket for device plugins when this node has devices, or is a node of its own (`kemu node`)
      // where plugins may come from outside; not on every node of a large in-process cluster.
      devicePluginDir: s.devices?.length || s.serveSockets ? devicePluginDir(kubeletRoot) : undefined,
      serverAddress: s.kubeletServer ? '127.0.0.1:0' : undefined,
      // The real runtimes put every pod under the cgroup_parent they are given, so the kubelet makes (and
      // removes) the pod cgroups for real there.
      cgroups: isRealRuntime(s.runtime) && detectCgroupVersion() ? new RealCgroupManager() : undefined,
    });
    await kubelet.start();
    if (s.devices?.length) stoppers.push(await startDevicePlugins(devicePluginDir(kubeletRoot), s.name, s.devices));
    if (s.network.overlay === 'vxlan') {
      // flanneld's part: lease (the Node's podCIDR), VTEP device, annotations, and one route, neighbour and
      // FDB entry per remote node, kept in step with the Node objects. No outside world: no masquerade.
      const agent = new VxlanAgent({
        store: s.store,
        datapath: net.datapath,
        node: s.name,
        publicIp: s.ip,
        underlayDevice: 'eth0',
        network: s.podNetwork ?? '10.244.0.0/16',
        subnetFile: path.join(dir, 'cni', 'subnet.env'),
        ipMasq: false,
        onError: (e) => s.onError?.(e, `${s.name}: vxlan`),
      });
      await agent.start();
      stoppers.push(() => agent.stop());
    }
    const node: ClusterNode = {
      name: s.name,
      ip: s.ip,
      podCIDR: s.podCIDR,
      cri: runtime,
      criSocket,
      csiSocket,
      netns: net.netnsPath,
      kubelet,
      csi: driver,
      csiApi,
      podLogsDir,
      stop,
    };
    // The kubelet is replaceable (tests restart it), so stop whichever one the node has by then.
    stoppers.push(() => node.kubelet.stop());
    return node;
  } catch (err) {
    await stop();
    throw err;
  }
}
