// The shapes shared by the runtime core, its backends and its network managers.
import type { Duplex, Readable, Writable } from 'node:stream';
import type { cri } from '@kemu/proto';

export type SandboxState = 'ready' | 'notready';
export type ContainerStateName = 'created' | 'running' | 'exited' | 'unknown';

export interface SandboxRecord {
  id: string;
  name: string;
  config: cri.PodSandboxConfig;
  runtimeHandler: string;
  state: SandboxState;
  createdAt: number;
  hostNetwork: boolean;
  /** Path of the pod network namespace (a file under /run/netns in `process`, a netsim name in `sim`). */
  netnsPath?: string;
  ips: string[];
  networkReady: boolean;
  /** The allowed log root RunPodSandbox found the log directory under; its containers' logs are opened within it. */
  logRoot?: string;
  /** Backend-private state that must survive a restart (pause pid, netns name, ...). */
  backend: Record<string, unknown>;
}

export interface ContainerRecord {
  id: string;
  sandboxId: string;
  name: string;
  config: cri.ContainerConfig;
  imageRef: string;
  imageId: string;
  state: ContainerStateName;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  /** Absolute log path (sandbox log directory + container log path), '' when logging is off. */
  logPath: string;
  /** The allowed log root `logPath` was checked against; the log is only ever created below it. */
  logRoot?: string;
  resources: cri.LinuxContainerResources;
  backend: Record<string, unknown>;
}

export interface ImageRecord {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  uid?: number;
  username: string;
  /** Directory holding the unpacked root filesystem, when the image has layers we can unpack. */
  layers: string[];
  source: 'oci-layout' | 'docker-archive' | 'synthetic' | 'registry';
  sourcePath?: string;
  config: {
    env?: string[];
    entrypoint?: string[];
    cmd?: string[];
    workingDir?: string;
    user?: string;
    exposedPorts?: string[];
    labels?: Record<string, string>;
    stopSignal?: string;
  };
  manifestDigest?: string;
  /** Content-store blobs this image holds (manifests, config, layers): what GC keeps while the image exists. */
  contentDigests?: string[];
}

export interface ExitInfo {
  exitCode: number;
  reason: string;
  message?: string;
  finishedAt?: number;
}

export interface ExecResult {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

/** A running exec or attach session, as the streaming server drives it. */
export interface StreamSession {
  stdin?: Writable;
  stdout?: Readable;
  stderr?: Readable;
  /** Resolves with the exit code when the command ends (attach: when the client detaches or the container exits). */
  exit: Promise<number>;
  resize?(cols: number, rows: number): void;
  kill(): void;
}

export interface ExecOptions {
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

export interface UsageSample {
  cpuCoreNanoSeconds: number;
  memoryWorkingSetBytes: number;
  memoryUsageBytes: number;
  rssBytes: number;
  processCount: number;
}

export interface NetworkUsageSample {
  name: string;
  rxBytes: number;
  txBytes: number;
  rxErrors: number;
  txErrors: number;
}

export interface BackendHost {
  /** Called by a backend when a container's process ends on its own (or after a stop). */
  containerExited(id: string, info: ExitInfo): void;
  /** Emitted for each line a container writes, so attach sessions can follow output. */
  log(message: string): void;
}

export interface Backend {
  readonly name: string;
  setHost(host: BackendHost): void;
  /** Creates the sandbox's namespaces; returns the netns path handed to CNI (undefined for host network). */
  createSandbox(sb: SandboxRecord): Promise<void>;
  /** Called after network setup; hostname, DNS files and the like. */
  stopSandbox(sb: SandboxRecord): Promise<void>;
  removeSandbox(sb: SandboxRecord): Promise<void>;
  createContainer(sb: SandboxRecord, c: ContainerRecord, image: ImageRecord): Promise<void>;
  startContainer(sb: SandboxRecord, c: ContainerRecord): Promise<void>;
  /** Stops a running container: signal, wait `timeoutSec`, then kill; resolves once it has exited. */
  stopContainer(c: ContainerRecord, timeoutSec: number): Promise<void>;
  removeContainer(c: ContainerRecord): Promise<void>;
  execSync(sb: SandboxRecord, c: ContainerRecord, cmd: string[], timeoutMs: number): Promise<ExecResult>;
  exec(sb: SandboxRecord, c: ContainerRecord, cmd: string[], opts: ExecOptions): StreamSession;
  attach(sb: SandboxRecord, c: ContainerRecord, opts: ExecOptions): StreamSession;
  /** Opens a TCP connection to `port` inside the sandbox's network namespace. */
  portForward(sb: SandboxRecord, port: number): Promise<Duplex>;
  updateResources(c: ContainerRecord): Promise<void>;
  reopenLog(c: ContainerRecord): Promise<void>;
  containerUsage(c: ContainerRecord): Promise<UsageSample>;
  networkUsage(sb: SandboxRecord): Promise<NetworkUsageSample[]>;
  /** Re-attaches to whatever survived a restart; updates records in place (e.g. marks lost containers exited). */
  recover(sandboxes: SandboxRecord[], containers: ContainerRecord[]): Promise<void>;
  info(): Record<string, unknown>;
  close(): Promise<void>;
}

export interface PodNetworkRequest {
  sandboxId: string;
  name: string;
  namespace: string;
  uid: string;
  netnsPath: string;
  portMappings: cri.PortMapping[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** IPs recorded when the network was set up (for teardown after a restart). */
  ips?: string[];
  /** Ask the IPAM for these addresses (the CNI `ips` capability), e.g. to re-attach a recovered pod. */
  requestIps?: string[];
}

export interface PodNetworkResult {
  ips: string[];
}

export interface NetworkStatus {
  ready: boolean;
  reason: string;
  message: string;
}

/** What RunPodSandbox/StopPodSandbox need from pod networking (CNI or a built-in fallback). */
export interface NetworkManager {
  readonly name: string;
  status(): NetworkStatus;
  setUp(req: PodNetworkRequest): Promise<PodNetworkResult>;
  /** Idempotent: tearing down a pod whose network is already gone succeeds. */
  tearDown(req: PodNetworkRequest): Promise<void>;
  updatePodCidr(cidr: string): Promise<void>;
  /** After a restart: the IPs still held by sandboxes that were recovered. */
  recover?(held: PodNetworkRequest[]): Promise<void>;
  close?(): Promise<void>;
}
