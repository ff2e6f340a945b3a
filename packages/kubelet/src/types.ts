// The kubelet's view of its collaborators: a store, a CRI runtime and image service, CSI node plugins.
// Each is a promise API (see @kemu/proto) so the same kubelet runs against sockets or in-process services.
import type { Store } from '@kemu/core';
import type { cri, csi, PromiseApi } from '@kemu/proto';
import type { CgroupManager } from './cgroup-manager.js';
import type { KubeletConfiguration } from './kubelet-config.js';
import type { TokenSource } from './volume-sources.js';

export type RuntimeApi = PromiseApi<cri.RuntimeServiceMethods>;
export type ImageApi = PromiseApi<cri.ImageServiceMethods>;
export type CsiNodeApi = PromiseApi<csi.NodeMethods>;

/** Finds the node plugin of a CSI driver by name (from plugin registration or configuration). */
export interface CsiPluginRegistry {
  get(driverName: string): CsiNodeApi | undefined;
  names(): string[];
}

export interface BackoffSettings {
  /** First CrashLoopBackOff delay (upstream 10 s). */
  initialMs: number;
  /** Cap (upstream 5 min). */
  maxMs: number;
  /** A container that ran at least this long resets its back-off (upstream 10 min). */
  resetAfterMs: number;
}

export interface ProbeTransport {
  /** HTTP GET; resolves to the status code, rejects on connection failure or timeout. */
  httpGet(url: string, timeoutMs: number, headers?: Record<string, string>): Promise<number>;
  /** Resolves when a TCP connection succeeds within the timeout. */
  tcpConnect(host: string, port: number, timeoutMs: number): Promise<void>;
}

export interface KubeletOptions {
  store: Store;
  /** A decoded KubeletConfiguration file: reserved resources, eviction, maxPods, cgroups, DNS. */
  config?: KubeletConfiguration;
  /** Where pod and QoS cgroups go: real files for a real runtime; default recorded only (sim). */
  cgroups?: CgroupManager;
  /** How often the eviction manager looks at the signals (upstream 10 s). */
  evictionMonitoringPeriodMs?: number;
  /** How often image garbage collection runs (upstream 5 min). */
  imageGCPeriodMs?: number;
  /** Serve the device-plugin Registration service in this directory (upstream <root>/device-plugins). */
  devicePluginDir?: string;
  /** Serve /stats/summary and /metrics/{resource,cadvisor} on HOST:PORT (port 0: any free one). */
  serverAddress?: string;
  nodeName: string;
  runtime: RuntimeApi;
  images: ImageApi;
  /** CSI node plugins by driver name. */
  csi?: CsiPluginRegistry;
  /**
   * Server-streaming container events (GetContainerEvents): upstream's evented PLEG. While the stream
   * works, the relist is only a safety net every `eventedRelistPeriodMs`; after five attempts in a row that
   * bring no event, the kubelet falls back to relisting every `relistPeriodMs`, as upstream does.
   */
  containerEvents?: () => AsyncIterable<cri.ContainerEventResponse>;
  /** The relist period while container events flow (upstream eventedPlegRelistPeriod, 300 s). */
  eventedRelistPeriodMs?: number;
  /** Root of kubelet-managed paths: pods/<uid>/volumes, plugins/kubernetes.io/csi (default /var/lib/kubelet). */
  rootDir?: string;
  /** Where sandbox log directories go (default /var/log/pods). */
  podLogsDir?: string;
  nodeIP?: string;
  podCIDR?: string;
  labels?: Record<string, string>;
  capacity?: Record<string, string>;
  /** Subtracted from capacity for allocatable (system/kube reserved). */
  reserved?: Record<string, string>;
  taints?: { key: string; value?: string; effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute' }[];
  clusterDNS?: string[];
  clusterDomain?: string;
  /**
   * The node's resolver file whose settings dnsPolicy Default (and ClusterFirst's search tail) use, as
   * --resolv-conf (default /etc/resolv.conf; "" for none: pods then get nameserver 127.0.0.1, search ".").
   */
  resolvConf?: string;
  /** PLEG relist period (upstream 1 s). */
  relistPeriodMs?: number;
  /**
   * Every pod is synced again this often (upstream syncFrequency, 1 min): the files of configMap, secret,
   * downwardAPI and projected volumes follow their sources at this pace.
   */
  syncFrequencyMs?: number;
  /** Lease renew interval (upstream 10 s) and duration (upstream 40 s). */
  leaseRenewMs?: number;
  leaseDurationSeconds?: number;
  /** Node status update period (upstream nodeStatusUpdateFrequency 10 s). */
  statusUpdateMs?: number;
  backoff?: Partial<BackoffSettings>;
  probeTransport?: ProbeTransport;
  /** Directory of static pod manifests. */
  staticPodPath?: string;
  /** Record Events for pod lifecycle steps (default true). */
  recordEvents?: boolean;
  /**
   * Service account tokens for projected serviceAccountToken volumes: the cluster's TokenRequest API, asked
   * for a token bound to the pod (as kubelet asks kube-apiserver). Without it such volumes fail to mount.
   */
  serviceAccountTokens?: TokenSource;
  /** Called for errors that are retried (default: ignored). */
  onError?: (err: unknown, context: string) => void;
}
