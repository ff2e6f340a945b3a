// The runtime core: sandbox/container state machines, naming, validation, persistence and recovery.
// Transport-agnostic: the gRPC services and in-process callers both drive this class.
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { cri } from '@kemu/proto';
import { isWithin, resolveWithin, UnsafePathError } from '@kemu/safe-fs';
import {
  containerStateEnum,
  toContainer,
  toContainerStatus,
  toImage,
  toPodSandbox,
  toPodSandboxStatus,
} from './convert.js';
import {
  deadlineExceeded,
  errorMessage,
  failedPrecondition,
  invalidArgument,
  isRpcError,
  notFound,
  RpcError,
} from './errors.js';
import { checkIdSyntax, IdIndex, newId } from './ids.js';
import type { ImageStore } from './image-store.js';
import { KeyedMutex } from './keyed-mutex.js';
import { matchesLabels } from './labels.js';
import { openLogFile } from './log-writer.js';
import { checkContainerMetadata, checkSandboxMetadata, containerName, NameIndex, sandboxName } from './names.js';
import { type StateStore, writeFileAtomicSync } from './state-store.js';
import { nowNs } from './time.js';
import type {
  Backend,
  ContainerRecord,
  ExecOptions,
  ExitInfo,
  NetworkManager,
  PodNetworkRequest,
  SandboxRecord,
  StreamSession,
} from './types.js';
import * as grpc from '@grpc/grpc-js';

export const RUNTIME_NAME = 'kemu';
export const RUNTIME_VERSION = '0.1.0';
export const CRI_API_VERSION = 'v1';

export interface CriRuntimeOptions {
  backend: Backend;
  network: NetworkManager;
  images: ImageStore;
  state: StateStore;
  /** Runtime handlers RunPodSandbox accepts besides the default (''). */
  runtimeHandlers?: string[];
  /** Directories under which sandbox log directories may live. */
  allowedLogRoots?: string[];
}

/** Hands Exec/Attach/PortForward requests to the streaming server and gets back the URL to return. */
export interface StreamingRegistry {
  register(kind: 'exec' | 'attach' | 'portforward', payload: StreamRequest): string;
}

export type StreamRequest =
  | { kind: 'exec'; containerId: string; cmd: string[]; opts: ExecOptions }
  | { kind: 'attach'; containerId: string; opts: ExecOptions }
  | { kind: 'portforward'; sandboxId: string; ports: number[] };

const CONTROL = /[\u0000-\u001f\u007f]/;

function checkText(value: string | undefined, what: string, required: boolean): string {
  if (!value) {
    if (required) throw invalidArgument(`${what} must not be empty`);
    return '';
  }
  if (CONTROL.test(value)) throw invalidArgument(`${what} ${JSON.stringify(value)} contains control characters`);
  return value;
}

function checkMap(m: Record<string, string> | undefined, what: string) {
  for (const [k, v] of Object.entries(m ?? {})) {
    if (!k || k.includes('\0') || v.includes('\0')) throw invalidArgument(`${what} key/value ${JSON.stringify(k)} is invalid`);
  }
}

export class CriRuntime {
  readonly events = new EventEmitter();
  private readonly sandboxes = new Map<string, SandboxRecord>();
  private readonly containers = new Map<string, ContainerRecord>();
  private readonly sandboxIds = new IdIndex();
  private readonly containerIds = new IdIndex();
  private readonly sandboxNames = new NameIndex('sandbox');
  private readonly containerNames = new NameIndex('container');
  private readonly lock = new KeyedMutex();
  private readonly handlers: Set<string>;
  private readonly logRoots: string[];
  private streaming?: StreamingRegistry;
  private podCidr = '';

  readonly backend: Backend;
  readonly network: NetworkManager;
  readonly images: ImageStore;
  private readonly state: StateStore;

  constructor(opts: CriRuntimeOptions) {
    this.backend = opts.backend;
    this.network = opts.network;
    this.images = opts.images;
    this.state = opts.state;
    this.handlers = new Set(['', ...(opts.runtimeHandlers ?? [])]);
    this.logRoots = (opts.allowedLogRoots ?? ['/var/log/pods', '/tmp']).map((p) => path.resolve(p));
    this.events.setMaxListeners(0);
    this.backend.setHost({
      containerExited: (id, info) => this.onContainerExit(id, info),
      log: () => {},
    });
  }

  setStreaming(registry: StreamingRegistry): void {
    this.streaming = registry;
  }

  /** Loads every persisted record and lets the backend and network re-attach (the containerd restart path). */
  async recover(): Promise<{ sandboxes: number; containers: number }> {
    await this.images.load();
    const sandboxes = this.state.loadAll<SandboxRecord>('sandboxes');
    const containers = this.state.loadAll<ContainerRecord>('containers').filter((c) => {
      if (sandboxes.some((s) => s.id === c.sandboxId)) return true;
      void this.state.remove('containers', c.id); // orphan of a sandbox removed mid-crash
      return false;
    });
    await this.backend.recover(sandboxes, containers);
    for (const sb of sandboxes) {
      this.sandboxes.set(sb.id, sb);
      this.sandboxIds.add(sb.id);
      this.sandboxNames.reserve(sb.name, sb.id);
      await this.state.save('sandboxes', sb.id, sb);
    }
    for (const c of containers) {
      this.containers.set(c.id, c);
      this.containerIds.add(c.id);
      this.containerNames.reserve(c.name, c.id);
      await this.state.save('containers', c.id, c);
    }
    const saved = this.state.dir ? path.join(this.state.dir, 'runtime-config.json') : undefined;
    if (saved && fs.existsSync(saved)) {
      const { podCidr } = JSON.parse(fs.readFileSync(saved, 'utf8')) as { podCidr?: string };
      if (podCidr) {
        await this.network.updatePodCidr(podCidr);
        this.podCidr = podCidr;
      }
    }
    await this.network.recover?.(sandboxes.filter((s) => s.networkReady).map((s) => this.netRequest(s)));
    return { sandboxes: sandboxes.length, containers: containers.length };
  }

  // ---------------------------------------------------------------- lookups

  private findSandbox(id: string | undefined): SandboxRecord | undefined {
    const full = this.sandboxIds.resolve(checkIdSyntax(id, 'sandbox'));
    return full ? this.sandboxes.get(full) : undefined;
  }

  private getSandbox(id: string | undefined): SandboxRecord {
    const sb = this.findSandbox(id);
    if (!sb) throw notFound(`an error occurred when try to find sandbox ${JSON.stringify(id)}: not found`);
    return sb;
  }

  private findContainer(id: string | undefined): ContainerRecord | undefined {
    const full = this.containerIds.resolve(checkIdSyntax(id, 'container'));
    return full ? this.containers.get(full) : undefined;
  }

  private getContainer(id: string | undefined): ContainerRecord {
    const c = this.findContainer(id);
    if (!c) throw notFound(`an error occurred when try to find container ${JSON.stringify(id)}: not found`);
    return c;
  }

  getSandboxRecord(id: string): SandboxRecord {
    return this.getSandbox(id);
  }

  getContainerRecord(id: string): ContainerRecord {
    return this.getContainer(id);
  }

  private containersOf(sandboxId: string): ContainerRecord[] {
    return [...this.containers.values()].filter((c) => c.sandboxId === sandboxId);
  }

  private netRequest(sb: SandboxRecord): PodNetworkRequest {
    const m = sb.config.metadata ?? {};
    return {
      sandboxId: sb.id,
      name: m.name ?? '',
      namespace: m.namespace ?? '',
      uid: m.uid ?? '',
      netnsPath: sb.netnsPath ?? '',
      portMappings: sb.config.portMappings ?? [],
      labels: sb.config.labels ?? {},
      annotations: sb.config.annotations ?? {},
      ips: sb.ips,
    };
  }

  private emit(c: ContainerRecord, type: cri.ContainerEventType): void {
    if (this.events.listenerCount('event') === 0) return;
    const sb = this.sandboxes.get(c.sandboxId);
    const ev: cri.ContainerEventResponse = {
      containerId: c.id,
      containerEventType: type,
      createdAt: nowNs(),
      podSandboxStatus: sb ? toPodSandboxStatus(sb) : null,
      containersStatuses: sb ? this.containersOf(sb.id).map((x) => this.containerStatusOf(x)) : [],
    };
    this.events.emit('event', ev);
  }

  private containerStatusOf(c: ContainerRecord): cri.ContainerStatus {
    return toContainerStatus(c, this.images.resolve(c.imageId));
  }

  private saveSandbox(sb: SandboxRecord) {
    return this.state.save('sandboxes', sb.id, sb);
  }

  private saveContainer(c: ContainerRecord) {
    return this.state.save('containers', c.id, c);
  }

  // ---------------------------------------------------------------- runtime info

  version(_req: cri.VersionRequest): cri.VersionResponse {
    return { version: '0.1.0', runtimeName: RUNTIME_NAME, runtimeVersion: RUNTIME_VERSION, runtimeApiVersion: CRI_API_VERSION };
  }

  status(req: cri.StatusRequest): cri.StatusResponse {
    const net = this.network.status();
    const res: cri.StatusResponse = {
      status: {
        conditions: [
          { type: 'RuntimeReady', status: true, reason: '', message: '' },
          { type: 'NetworkReady', status: net.ready, reason: net.ready ? '' : net.reason, message: net.ready ? '' : net.message },
        ],
      },
      info: {},
      runtimeHandlers: [...this.handlers].map((name) => ({
        name,
        features: { recursiveReadOnlyMounts: false, userNamespaces: false },
      })),
      features: { supplementalGroupsPolicy: false },
    };
    if (req.verbose) {
      res.info = {
        config: JSON.stringify({
          backend: this.backend.info(),
          network: this.network.name,
          podCidr: this.podCidr,
          runtimeHandlers: [...this.handlers],
          allowedLogRoots: this.logRoots,
          stateDir: this.state.dir ?? null,
        }),
      };
    }
    return res;
  }

  runtimeConfig(): cri.RuntimeConfigResponse {
    return { linux: { cgroupDriver: cri.CgroupDriver.CGROUPFS } };
  }

  async updateRuntimeConfig(req: cri.UpdateRuntimeConfigRequest): Promise<cri.UpdateRuntimeConfigResponse> {
    const cidr = req.runtimeConfig?.networkConfig?.podCidr ?? '';
    if (!cidr) return {};
    for (const one of cidr.split(',')) {
      if (!/^[0-9a-fA-F:.]+\/\d{1,3}$/.test(one.trim())) {
        throw invalidArgument(`invalid pod CIDR ${JSON.stringify(one)}: want an address/prefix such as 10.244.0.0/24`);
      }
    }
    await this.network.updatePodCidr(cidr);
    this.podCidr = cidr;
    // Kept so a restarted shim re-attaches recovered pods in the same range before kubelet calls again.
    if (this.state.dir) writeFileAtomicSync(path.join(this.state.dir, 'runtime-config.json'), JSON.stringify({ podCidr: cidr }));
    return {};
  }

  // ---------------------------------------------------------------- sandboxes

  private checkSandboxConfig(config: cri.PodSandboxConfig | null | undefined, handler: string): cri.PodSandboxConfig {
    if (!config) throw invalidArgument('sandbox config must not be empty');
    const m = config.metadata;
    if (!m) throw invalidArgument('sandbox config must include metadata');
    checkSandboxMetadata(m);
    checkText(config.hostname, 'hostname', false);
    checkMap(config.labels, 'label');
    checkMap(config.annotations, 'annotation');
    if (!this.handlers.has(handler)) {
      throw invalidArgument(`no runtime for ${JSON.stringify(handler)} is configured (known: ${[...this.handlers].map((h) => JSON.stringify(h)).join(', ')})`);
    }
    if (config.logDirectory) this.logRootOf(config.logDirectory, 'log directory');
    for (const pm of config.portMappings ?? []) {
      const cp = pm.containerPort ?? 0;
      const hp = pm.hostPort ?? 0;
      if (cp < 1 || cp > 65535) throw invalidArgument(`port mapping container port ${cp} is out of range 1-65535`);
      if (hp < 0 || hp > 65535) throw invalidArgument(`port mapping host port ${hp} is out of range 0-65535`);
    }
    return config;
  }

  /** The allowed log root a log directory or file lies under, following the links of what exists. */
  private logRootOf(p: string, what: string): string {
    try {
      return resolveWithin(p, this.logRoots, { allowRoot: true, what }).root;
    } catch (err) {
      if (err instanceof UnsafePathError) {
        throw invalidArgument(err.reason === 'outside-root' ? `${what} ${JSON.stringify(p)} is outside the allowed log roots (${this.logRoots.join(', ')})` : err.message);
      }
      throw err;
    }
  }

  async runPodSandbox(req: cri.RunPodSandboxRequest): Promise<cri.RunPodSandboxResponse> {
    const handler = req.runtimeHandler ?? '';
    const config = this.checkSandboxConfig(req.config, handler);
    const name = sandboxName(config.metadata!);
    const id = newId();
    this.sandboxNames.reserve(name, id);
    const hostNetwork = config.linux?.securityContext?.namespaceOptions?.network === cri.NamespaceMode.NODE;
    const sb: SandboxRecord = {
      id,
      name,
      config,
      runtimeHandler: handler,
      state: 'notready',
      createdAt: nowNs(),
      hostNetwork,
      ips: [],
      networkReady: false,
      backend: {},
    };
    let created = false;
    let networkTried = false;
    try {
      if (!hostNetwork) {
        const net = this.network.status();
        if (!net.ready) throw failedPrecondition(`failed to setup network for sandbox ${JSON.stringify(id)}: ${net.message}`);
      }
      created = true;
      await this.backend.createSandbox(sb);
      if (!hostNetwork) {
        networkTried = true;
        try {
          const result = await this.network.setUp(this.netRequest(sb));
          sb.ips = result.ips;
        } catch (err) {
          if (isRpcError(err)) throw err;
          throw new RpcError(grpc.status.UNKNOWN, `failed to setup network for sandbox ${JSON.stringify(id)}: ${errorMessage(err)}`);
        }
        sb.networkReady = true;
      }
      sb.state = 'ready';
      this.sandboxes.set(id, sb);
      this.sandboxIds.add(id);
      await this.saveSandbox(sb);
      return { podSandboxId: id };
    } catch (err) {
      // Roll back everything so a failed RunPodSandbox leaves no namespace, IP or name behind.
      this.sandboxes.delete(id);
      this.sandboxIds.delete(id);
      if (networkTried) await this.network.tearDown(this.netRequest(sb)).catch(() => {});
      if (created) {
        await this.backend.stopSandbox(sb).catch(() => {});
        await this.backend.removeSandbox(sb).catch(() => {});
      }
      await this.state.remove('sandboxes', id).catch(() => {});
      this.sandboxNames.release(name, id);
      throw err;
    }
  }

  async stopPodSandbox(req: cri.StopPodSandboxRequest): Promise<cri.StopPodSandboxResponse> {
    const sb = this.findSandbox(req.podSandboxId);
    if (!sb) return {};
    await this.lock.run(sb.id, () => this.stopSandboxLocked(sb));
    return {};
  }

  private async stopSandboxLocked(sb: SandboxRecord): Promise<void> {
    for (const c of this.containersOf(sb.id)) {
      if (c.state === 'running') await this.lock.run(c.id, () => this.stopContainerLocked(c, 0));
    }
    if (sb.networkReady) {
      try {
        await this.network.tearDown(this.netRequest(sb));
      } catch (err) {
        throw new RpcError(grpc.status.UNKNOWN, `failed to destroy network for sandbox ${JSON.stringify(sb.id)}: ${errorMessage(err)}`);
      }
      sb.networkReady = false;
    }
    await this.backend.stopSandbox(sb);
    sb.state = 'notready';
    await this.saveSandbox(sb);
  }

  async removePodSandbox(req: cri.RemovePodSandboxRequest): Promise<cri.RemovePodSandboxResponse> {
    const sb = this.findSandbox(req.podSandboxId);
    if (!sb) return {};
    await this.lock.run(sb.id, async () => {
      if (!this.sandboxes.has(sb.id)) return;
      if (sb.state === 'ready' || sb.networkReady) await this.stopSandboxLocked(sb);
      for (const c of this.containersOf(sb.id)) await this.lock.run(c.id, () => this.removeContainerLocked(c));
      await this.backend.removeSandbox(sb);
      this.sandboxes.delete(sb.id);
      this.sandboxIds.delete(sb.id);
      this.sandboxNames.release(sb.name, sb.id);
      await this.state.remove('sandboxes', sb.id);
    });
    return {};
  }

  podSandboxStatus(req: cri.PodSandboxStatusRequest): cri.PodSandboxStatusResponse {
    const sb = this.getSandbox(req.podSandboxId);
    const res: cri.PodSandboxStatusResponse = {
      status: toPodSandboxStatus(sb),
      info: {},
      // What kubelet's evented PLEG reads, so one call gives the pod and its containers.
      containersStatuses: this.containersOf(sb.id).map((c) => this.containerStatusOf(c)),
      timestamp: nowNs(),
    };
    if (req.verbose) {
      res.info = {
        info: JSON.stringify({
          pid: sb.backend.pausePid ?? 0,
          netNamespacePath: sb.netnsPath ?? '',
          hostNetwork: sb.hostNetwork,
          ips: sb.ips,
          runtimeHandler: sb.runtimeHandler,
          backend: this.backend.name,
          config: sb.config,
        }),
      };
    }
    return res;
  }

  listPodSandbox(req: cri.ListPodSandboxRequest): cri.ListPodSandboxResponse {
    const f = req.filter;
    let items = [...this.sandboxes.values()];
    if (f?.id) {
      let full: string | undefined;
      try {
        full = this.sandboxIds.resolve(f.id);
      } catch {
        full = undefined;
      }
      items = full ? items.filter((s) => s.id === full) : [];
    }
    if (f?.state) items = items.filter((s) => (s.state === 'ready' ? 0 : 1) === f.state!.state);
    if (f?.labelSelector) items = items.filter((s) => matchesLabels(s.config.labels, f.labelSelector));
    return { items: items.map(toPodSandbox) };
  }

  // ---------------------------------------------------------------- containers

  async createContainer(req: cri.CreateContainerRequest): Promise<cri.CreateContainerResponse> {
    const config = req.config;
    if (!config) throw invalidArgument('container config must not be empty');
    if (!config.metadata) throw invalidArgument('container config must include metadata');
    checkContainerMetadata(config.metadata);
    if (!config.image?.image) throw invalidArgument('container config must name an image');
    checkMap(config.labels, 'label');
    checkMap(config.annotations, 'annotation');
    for (const e of config.envs ?? []) {
      if (!e.key || e.key.includes('=') || e.key.includes('\0') || (e.value ?? '').includes('\0')) {
        throw invalidArgument(`invalid environment variable ${JSON.stringify(e.key)}`);
      }
    }
    for (const m of config.mounts ?? []) {
      if (!m.containerPath || !path.isAbsolute(m.containerPath) || m.containerPath.includes('\0')) {
        throw invalidArgument(`mount container path ${JSON.stringify(m.containerPath)} must be absolute`);
      }
      if (!m.hostPath || !path.isAbsolute(m.hostPath) || m.hostPath.includes('\0')) {
        throw invalidArgument(`mount host path ${JSON.stringify(m.hostPath)} must be absolute`);
      }
    }
    const sb = this.getSandbox(req.podSandboxId);
    if (sb.state !== 'ready') {
      throw failedPrecondition(`sandbox ${JSON.stringify(sb.id)} is not ready (state SANDBOX_NOTREADY): cannot create containers in it`);
    }
    let logPath = '';
    let logRoot: string | undefined;
    if (config.logPath) {
      if (!sb.config.logDirectory) {
        throw invalidArgument(`container log path ${JSON.stringify(config.logPath)} needs a sandbox log directory, and sandbox ${sb.id} has none`);
      }
      const joined = path.resolve(sb.config.logDirectory, config.logPath);
      if (config.logPath.includes('\0') || path.isAbsolute(config.logPath) || !isWithin(joined, path.resolve(sb.config.logDirectory))) {
        throw invalidArgument(`container log path ${JSON.stringify(config.logPath)} must be relative and stay inside the sandbox log directory`);
      }
      logRoot = this.logRootOf(joined, 'container log path');
      logPath = joined;
    }
    const image = this.images.resolve(config.image.image);
    if (!image) throw notFound(`failed to resolve image ${JSON.stringify(config.image.image)}: not found; pull it first`);
    const name = containerName(config.metadata, sb.config.metadata!);
    const id = newId();
    this.containerNames.reserve(name, id);
    const c: ContainerRecord = {
      id,
      sandboxId: sb.id,
      name,
      config,
      imageRef: image.id,
      imageId: image.id,
      state: 'created',
      createdAt: nowNs(),
      startedAt: 0,
      finishedAt: 0,
      exitCode: 0,
      reason: '',
      message: '',
      logPath,
      logRoot,
      resources: config.linux?.resources ?? {},
      backend: {},
    };
    try {
      await this.lock.run(sb.id, async () => {
        if (sb.state !== 'ready') throw failedPrecondition(`sandbox ${JSON.stringify(sb.id)} is not ready`);
        await this.backend.createContainer(sb, c, image);
        this.containers.set(id, c);
        this.containerIds.add(id);
        await this.saveContainer(c);
      });
    } catch (err) {
      this.containers.delete(id);
      this.containerIds.delete(id);
      await this.backend.removeContainer(c).catch(() => {});
      await this.state.remove('containers', id).catch(() => {});
      this.containerNames.release(name, id);
      throw err;
    }
    this.emit(c, cri.ContainerEventType.CONTAINER_CREATED_EVENT);
    return { containerId: id };
  }

  async startContainer(req: cri.StartContainerRequest): Promise<cri.StartContainerResponse> {
    const c = this.getContainer(req.containerId);
    await this.lock.run(c.id, async () => {
      if (c.state !== 'created') {
        throw failedPrecondition(`container ${JSON.stringify(c.id)} is in ${cri.ContainerState[containerStateEnum[c.state]]} state; only a CONTAINER_CREATED container can be started`);
      }
      const sb = this.getSandbox(c.sandboxId);
      if (sb.state !== 'ready') throw failedPrecondition(`sandbox ${JSON.stringify(sb.id)} of container ${c.id} is not ready`);
      try {
        // Like containerd, the log file exists once StartContainer returns: kubelet reads it right away.
        if (c.logPath) this.createLogFile(c);
        await this.backend.startContainer(sb, c);
      } catch (err) {
        // Like containerd: the container ends up exited with the start error recorded in its status.
        c.state = 'exited';
        c.exitCode = 128;
        c.reason = 'StartError';
        c.message = errorMessage(err);
        c.finishedAt = nowNs();
        await this.saveContainer(c);
        this.emit(c, cri.ContainerEventType.CONTAINER_STOPPED_EVENT);
        if (isRpcError(err)) throw err;
        throw new RpcError(grpc.status.UNKNOWN, `failed to start container ${JSON.stringify(c.id)}: ${errorMessage(err)}`);
      }
      if (c.state === 'created') {
        c.state = 'running';
        c.startedAt = c.startedAt || nowNs();
      }
      await this.saveContainer(c);
    });
    this.emit(c, cri.ContainerEventType.CONTAINER_STARTED_EVENT);
    return {};
  }

  private createLogFile(c: ContainerRecord): void {
    try {
      fs.closeSync(openLogFile(c.logPath, c.logRoot));
    } catch (err) {
      if (err instanceof UnsafePathError) throw invalidArgument(`failed to create container log: ${err.message}`);
      throw err;
    }
  }

  private onContainerExit(id: string, info: ExitInfo): void {
    const c = this.containers.get(id);
    if (!c || c.state === 'exited') return;
    c.state = 'exited';
    c.exitCode = info.exitCode;
    c.reason = info.reason;
    c.message = info.message ?? '';
    c.finishedAt = info.finishedAt ?? nowNs();
    if (!c.startedAt) c.startedAt = c.finishedAt;
    void this.saveContainer(c).catch(() => {});
    this.emit(c, cri.ContainerEventType.CONTAINER_STOPPED_EVENT);
  }

  async stopContainer(req: cri.StopContainerRequest): Promise<cri.StopContainerResponse> {
    const timeout = req.timeout ?? 0;
    if (timeout < 0) throw invalidArgument(`timeout ${timeout} must not be negative`);
    const c = this.findContainer(req.containerId);
    if (!c) return {};
    await this.lock.run(c.id, () => this.stopContainerLocked(c, timeout));
    return {};
  }

  private async stopContainerLocked(c: ContainerRecord, timeoutSec: number): Promise<void> {
    if (c.state === 'running') await this.backend.stopContainer(c, timeoutSec);
    if (c.state === 'running') this.onContainerExit(c.id, { exitCode: 137, reason: 'Error' });
    await this.saveContainer(c);
  }

  async removeContainer(req: cri.RemoveContainerRequest): Promise<cri.RemoveContainerResponse> {
    const c = this.findContainer(req.containerId);
    if (!c) return {};
    await this.lock.run(c.id, () => this.removeContainerLocked(c));
    return {};
  }

  private async removeContainerLocked(c: ContainerRecord): Promise<void> {
    if (!this.containers.has(c.id)) return;
    if (c.state === 'running') await this.stopContainerLocked(c, 0);
    await this.backend.removeContainer(c);
    this.containers.delete(c.id);
    this.containerIds.delete(c.id);
    this.containerNames.release(c.name, c.id);
    await this.state.remove('containers', c.id);
    this.emit(c, cri.ContainerEventType.CONTAINER_DELETED_EVENT);
  }

  listContainers(req: cri.ListContainersRequest): cri.ListContainersResponse {
    return { containers: this.filterContainers(req.filter).map(toContainer) };
  }

  private filterContainers(f: cri.ContainerFilter | cri.ContainerStatsFilter | null | undefined): ContainerRecord[] {
    let items = [...this.containers.values()];
    const resolveOrNone = (index: IdIndex, id: string) => {
      try {
        return index.resolve(id);
      } catch {
        return undefined;
      }
    };
    if (f?.id) {
      const full = resolveOrNone(this.containerIds, f.id);
      items = full ? items.filter((c) => c.id === full) : [];
    }
    if (f?.podSandboxId) {
      const full = resolveOrNone(this.sandboxIds, f.podSandboxId);
      items = full ? items.filter((c) => c.sandboxId === full) : [];
    }
    const st = (f as cri.ContainerFilter | undefined)?.state;
    if (st) items = items.filter((c) => containerStateEnum[c.state] === st.state);
    if (f?.labelSelector) items = items.filter((c) => matchesLabels(c.config.labels, f.labelSelector));
    return items;
  }

  containerStatus(req: cri.ContainerStatusRequest): cri.ContainerStatusResponse {
    const c = this.getContainer(req.containerId);
    const res: cri.ContainerStatusResponse = { status: this.containerStatusOf(c), info: {} };
    if (req.verbose) {
      const sb = this.sandboxes.get(c.sandboxId);
      res.info = {
        info: JSON.stringify({
          sandboxID: c.sandboxId,
          pid: c.backend.pid ?? 0,
          backend: this.backend.name,
          netNamespacePath: sb?.netnsPath ?? '',
          config: c.config,
          runtimeSpec: { process: c.backend.process ?? null, root: c.backend.rootfs ?? null },
          cgroup: c.backend.cgroupFiles ?? null,
        }),
      };
    }
    return res;
  }

  async updateContainerResources(req: cri.UpdateContainerResourcesRequest): Promise<cri.UpdateContainerResourcesResponse> {
    const c = this.getContainer(req.containerId);
    const r = req.linux ?? {};
    for (const [k, v] of Object.entries(r)) {
      if (typeof v === 'number' && v < 0 && k !== 'oomScoreAdj' && k !== 'cpuQuota' && k !== 'memorySwapLimitInBytes') {
        throw invalidArgument(`resource ${k} must not be negative (got ${v})`);
      }
    }
    await this.lock.run(c.id, async () => {
      if (c.state !== 'created' && c.state !== 'running') {
        throw failedPrecondition(`container ${JSON.stringify(c.id)} is in ${cri.ContainerState[containerStateEnum[c.state]]} state; resources can only be updated while created or running`);
      }
      const previous = c.resources;
      c.resources = { ...previous, ...r };
      try {
        await this.backend.updateResources(c);
      } catch (err) {
        c.resources = previous;
        throw err;
      }
      await this.saveContainer(c);
    });
    return {};
  }

  async reopenContainerLog(req: cri.ReopenContainerLogRequest): Promise<cri.ReopenContainerLogResponse> {
    const c = this.getContainer(req.containerId);
    if (c.state !== 'running') throw failedPrecondition(`container ${JSON.stringify(c.id)} is not running`);
    await this.backend.reopenLog(c);
    return {};
  }

  // ---------------------------------------------------------------- exec and streaming

  private runningContainer(id: string | undefined): { c: ContainerRecord; sb: SandboxRecord } {
    const c = this.getContainer(id);
    if (c.state !== 'running') throw failedPrecondition(`container ${JSON.stringify(c.id)} is not running (state ${cri.ContainerState[containerStateEnum[c.state]]})`);
    return { c, sb: this.getSandbox(c.sandboxId) };
  }

  async execSync(req: cri.ExecSyncRequest): Promise<cri.ExecSyncResponse> {
    const cmd = req.cmd ?? [];
    if (cmd.length === 0 || !cmd[0]) throw invalidArgument('exec command must not be empty');
    if (cmd.some((a) => a.includes('\0'))) throw invalidArgument('exec command arguments must not contain NUL');
    const timeout = req.timeout ?? 0;
    if (timeout < 0) throw invalidArgument(`timeout ${timeout} must not be negative`);
    const { c, sb } = this.runningContainer(req.containerId);
    const res = await this.backend.execSync(sb, c, cmd, timeout > 0 ? timeout * 1000 : 0);
    if (res.exitCode === -1) throw deadlineExceeded(`command ${JSON.stringify(cmd)} timed out after ${timeout}s`);
    return { stdout: res.stdout, stderr: res.stderr, exitCode: res.exitCode };
  }

  private needStreaming(): StreamingRegistry {
    if (!this.streaming) throw failedPrecondition('the streaming server is not running');
    return this.streaming;
  }

  exec(req: cri.ExecRequest): cri.ExecResponse {
    const cmd = req.cmd ?? [];
    if (cmd.length === 0 || !cmd[0]) throw invalidArgument('exec command must not be empty');
    if (!req.stdin && !req.stdout && !req.stderr) throw invalidArgument('one of stdin, stdout, or stderr must be set');
    if (req.tty && req.stderr) throw invalidArgument('tty and stderr cannot both be true');
    const { c } = this.runningContainer(req.containerId);
    const opts: ExecOptions = { tty: !!req.tty, stdin: !!req.stdin, stdout: !!req.stdout, stderr: !!req.stderr };
    return { url: this.needStreaming().register('exec', { kind: 'exec', containerId: c.id, cmd, opts }) };
  }

  attach(req: cri.AttachRequest): cri.AttachResponse {
    if (!req.stdin && !req.stdout && !req.stderr) throw invalidArgument('one of stdin, stdout, or stderr must be set');
    if (req.tty && req.stderr) throw invalidArgument('tty and stderr cannot both be true');
    const { c } = this.runningContainer(req.containerId);
    const opts: ExecOptions = { tty: !!req.tty, stdin: !!req.stdin, stdout: !!req.stdout, stderr: !!req.stderr };
    return { url: this.needStreaming().register('attach', { kind: 'attach', containerId: c.id, opts }) };
  }

  portForward(req: cri.PortForwardRequest): cri.PortForwardResponse {
    for (const p of req.port ?? []) if (p < 1 || p > 65535) throw invalidArgument(`port ${p} is out of range 1-65535`);
    const sb = this.getSandbox(req.podSandboxId);
    if (sb.state !== 'ready') throw failedPrecondition(`sandbox ${JSON.stringify(sb.id)} is not ready`);
    return { url: this.needStreaming().register('portforward', { kind: 'portforward', sandboxId: sb.id, ports: req.port ?? [] }) };
  }

  /** Used by the streaming server once a client connects with a valid token. */
  openExec(containerId: string, cmd: string[], opts: ExecOptions): StreamSession {
    const { c, sb } = this.runningContainer(containerId);
    return this.backend.exec(sb, c, cmd, opts);
  }

  openAttach(containerId: string, opts: ExecOptions): StreamSession {
    const { c, sb } = this.runningContainer(containerId);
    return this.backend.attach(sb, c, opts);
  }

  openPortForward(sandboxId: string, port: number) {
    const sb = this.getSandbox(sandboxId);
    if (sb.state !== 'ready') throw failedPrecondition(`sandbox ${JSON.stringify(sb.id)} is not ready`);
    return this.backend.portForward(sb, port);
  }

  // ---------------------------------------------------------------- stats and metrics

  /**
   * A container without a process (created or exited) has no CPU or memory figures: like containerd 1.6's
   * ListContainerStats, its entry carries the attributes and the writable layer only.
   */
  private async statsOf(c: ContainerRecord): Promise<cri.ContainerStats> {
    const ts = nowNs();
    const u = c.state === 'running' ? await this.backend.containerUsage(c) : undefined;
    return {
      attributes: { id: c.id, metadata: c.config.metadata, labels: c.config.labels ?? {}, annotations: c.config.annotations ?? {} },
      cpu: u ? { timestamp: ts, usageCoreNanoSeconds: { value: u.cpuCoreNanoSeconds }, usageNanoCores: { value: 0 } } : null,
      memory: u
        ? {
            timestamp: ts,
            workingSetBytes: { value: u.memoryWorkingSetBytes },
            usageBytes: { value: u.memoryUsageBytes },
            rssBytes: { value: u.rssBytes },
            availableBytes: { value: 0 },
            pageFaults: { value: 0 },
            majorPageFaults: { value: 0 },
          }
        : null,
      writableLayer: {
        timestamp: ts,
        fsId: { mountpoint: this.images.fsInfo().mountpoint },
        usedBytes: { value: 0 },
        inodesUsed: { value: 0 },
      },
    };
  }

  // containerd 1.6 fails ContainerStats for a container without a task ("unexpected metrics response: []");
  // this shim answers it with the same entry ListContainerStats gives.
  async containerStats(req: cri.ContainerStatsRequest): Promise<cri.ContainerStatsResponse> {
    return { stats: await this.statsOf(this.getContainer(req.containerId)) };
  }

  async listContainerStats(req: cri.ListContainerStatsRequest): Promise<cri.ListContainerStatsResponse> {
    // Like containerd, every container in the store reports stats; one without a process reports zero usage.
    const items = this.filterContainers(req.filter);
    return { stats: await Promise.all(items.map((c) => this.statsOf(c))) };
  }

  private async sandboxStatsOf(sb: SandboxRecord): Promise<cri.PodSandboxStats> {
    const ts = nowNs();
    const containers = await Promise.all(
      this.containersOf(sb.id)
        .filter((c) => c.state === 'running')
        .map((c) => this.statsOf(c)),
    );
    const usage = await Promise.all(
      this.containersOf(sb.id)
        .filter((c) => c.state === 'running')
        .map((c) => this.backend.containerUsage(c)),
    );
    const sum = (f: (u: (typeof usage)[number]) => number) => usage.reduce((a, u) => a + f(u), 0);
    const nets = sb.state === 'ready' ? await this.backend.networkUsage(sb) : [];
    const toIface = (n: (typeof nets)[number]) => ({
      name: n.name,
      rxBytes: { value: n.rxBytes },
      rxErrors: { value: n.rxErrors },
      txBytes: { value: n.txBytes },
      txErrors: { value: n.txErrors },
    });
    return {
      attributes: { id: sb.id, metadata: sb.config.metadata, labels: sb.config.labels ?? {}, annotations: sb.config.annotations ?? {} },
      linux: {
        cpu: { timestamp: ts, usageCoreNanoSeconds: { value: sum((u) => u.cpuCoreNanoSeconds) }, usageNanoCores: { value: 0 } },
        memory: {
          timestamp: ts,
          workingSetBytes: { value: sum((u) => u.memoryWorkingSetBytes) },
          usageBytes: { value: sum((u) => u.memoryUsageBytes) },
          rssBytes: { value: sum((u) => u.rssBytes) },
          availableBytes: { value: 0 },
          pageFaults: { value: 0 },
          majorPageFaults: { value: 0 },
        },
        network: {
          timestamp: ts,
          defaultInterface: nets.length ? toIface(nets.find((n) => n.name === 'eth0') ?? nets[0]) : null,
          interfaces: nets.map(toIface),
        },
        process: { timestamp: ts, processCount: { value: sum((u) => u.processCount) } },
        containers,
      },
    };
  }

  async podSandboxStats(req: cri.PodSandboxStatsRequest): Promise<cri.PodSandboxStatsResponse> {
    return { stats: await this.sandboxStatsOf(this.getSandbox(req.podSandboxId)) };
  }

  async listPodSandboxStats(req: cri.ListPodSandboxStatsRequest): Promise<cri.ListPodSandboxStatsResponse> {
    const f = req.filter;
    let items = [...this.sandboxes.values()].filter((s) => s.state === 'ready');
    if (f?.id) {
      let full: string | undefined;
      try {
        full = this.sandboxIds.resolve(f.id);
      } catch {
        full = undefined;
      }
      items = items.filter((s) => s.id === full);
    }
    if (f?.labelSelector) items = items.filter((s) => matchesLabels(s.config.labels, f.labelSelector));
    return { stats: await Promise.all(items.map((s) => this.sandboxStatsOf(s))) };
  }

  listMetricDescriptors(): cri.ListMetricDescriptorsResponse {
    return { descriptors: METRICS.map(({ name, help }) => ({ name, help, labelKeys: ['container', 'pod', 'namespace'] })) };
  }

  async listPodSandboxMetrics(): Promise<cri.ListPodSandboxMetricsResponse> {
    const podMetrics: cri.PodSandboxMetrics[] = [];
    const ts = nowNs();
    for (const sb of this.sandboxes.values()) {
      if (sb.state !== 'ready') continue;
      const m = sb.config.metadata ?? {};
      const containerMetrics: cri.ContainerMetrics[] = [];
      for (const c of this.containersOf(sb.id)) {
        if (c.state !== 'running') continue;
        const u = await this.backend.containerUsage(c);
        const labelValues = [c.config.metadata?.name ?? '', m.name ?? '', m.namespace ?? ''];
        containerMetrics.push({
          containerId: c.id,
          metrics: METRICS.map((d) => ({
            name: d.name,
            timestamp: ts,
            metricType: d.type,
            labelValues,
            value: { value: d.value(c, u) },
          })),
        });
      }
      podMetrics.push({ podSandboxId: sb.id, metrics: [], containerMetrics });
    }
    return { podMetrics };
  }

  // ---------------------------------------------------------------- images

  listImages(req: cri.ListImagesRequest): cri.ListImagesResponse {
    const want = req.filter?.image?.image;
    let images = this.images.list();
    if (want) {
      const one = this.images.resolve(want);
      images = one ? [one] : [];
    }
    return { images: images.map(toImage) };
  }

  imageStatus(req: cri.ImageStatusRequest): cri.ImageStatusResponse {
    const ref = req.image?.image;
    if (!ref) throw invalidArgument('image spec must name an image');
    const img = this.images.resolve(ref);
    if (!img) return { image: null, info: {} };
    const info: Record<string, string> = {};
    if (req.verbose) {
      info.info = JSON.stringify({
        imageSpec: { config: img.config },
        source: img.source,
        sourcePath: img.sourcePath ?? '',
        manifestDigest: img.manifestDigest ?? '',
        layers: img.layers.length,
      });
    }
    return { image: toImage(img), info };
  }

  async pullImage(req: cri.PullImageRequest): Promise<cri.PullImageResponse> {
    const ref = req.image?.image;
    if (!ref) throw invalidArgument('image spec must name an image');
    const img = await this.images.pull(ref);
    return { imageRef: img.id };
  }

  async removeImage(req: cri.RemoveImageRequest): Promise<cri.RemoveImageResponse> {
    const ref = req.image?.image;
    if (!ref) throw invalidArgument('image spec must name an image');
    await this.images.remove(ref);
    return {};
  }

  imageFsInfo(): cri.ImageFsInfoResponse {
    const fsi = this.images.fsInfo();
    const usage = {
      timestamp: nowNs(),
      fsId: { mountpoint: fsi.mountpoint },
      usedBytes: { value: fsi.usedBytes },
      inodesUsed: { value: fsi.inodesUsed },
    };
    return { imageFilesystems: [usage], containerFilesystems: [usage] };
  }

  async close(): Promise<void> {
    await this.backend.close();
    await this.network.close?.();
    await this.state.close?.();
  }
}

const METRICS: {
  name: string;
  help: string;
  type: cri.MetricType;
  value: (c: ContainerRecord, u: Awaited<ReturnType<Backend['containerUsage']>>) => number;
}[] = [
  {
    name: 'container_cpu_usage_seconds_total',
    help: 'Cumulative cpu time consumed in seconds.',
    type: cri.MetricType.COUNTER,
    value: (_c, u) => Math.floor(u.cpuCoreNanoSeconds / 1e9),
  },
  {
    name: 'container_memory_working_set_bytes',
    help: 'Current working set in bytes.',
    type: cri.MetricType.GAUGE,
    value: (_c, u) => u.memoryWorkingSetBytes,
  },
  {
    name: 'container_start_time_seconds',
    help: 'Start time of the container since unix epoch in seconds.',
    type: cri.MetricType.GAUGE,
    value: (c) => Math.floor(c.startedAt / 1e9),
  },
];
