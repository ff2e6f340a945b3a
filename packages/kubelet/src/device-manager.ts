// The kubelet's device manager (upstream pkg/kubelet/cm/devicemanager): serves the device-plugin
// Registration service on <device-plugins>/kubelet.sock, follows each plugin's ListAndWatch stream,
// reports extended resources (capacity: all devices, allocatable: healthy ones), allocates devices to a
// pod's containers at admission (GetPreferredAllocation when the plugin offers it, then Allocate),
// hands the Allocate answers (env, mounts, device nodes, annotations, CDI devices) to the container
// configs, and keeps allocations in a checkpoint file so a restarted kubelet keeps them.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type Container, type Pod } from '@kemu/core';
import { KUBELET_SOCKET, HEALTHY, isExtendedResourceName, SUPPORTED_VERSIONS } from '@kemu/device-plugin';
import {
  type cri,
  decode,
  deviceplugin,
  encode,
  type GrpcServer,
  grpc,
  implementService,
  type PromiseApi,
  promiseClient,
  RpcError,
  serveUnix,
  shutdownServer,
} from '@kemu/proto';

export const CHECKPOINT_FILE = 'kubelet_internal_checkpoint';

/** A pod that cannot be given its devices; the kubelet fails it with reason UnexpectedAdmissionError. */
export class DeviceAdmissionError extends Error {
  override readonly name = 'DeviceAdmissionError';
  readonly reason = 'UnexpectedAdmissionError';
}

interface Endpoint {
  resource: string;
  socket: string;
  client: grpc.Client;
  api: PromiseApi<deviceplugin.DevicePluginMethods>;
  stream?: grpc.ClientReadableStream<deviceplugin.ListAndWatchResponse>;
  options: deviceplugin.DevicePluginOptions;
  stopped: boolean;
  expiry?: NodeJS.Timeout;
}

interface PodDeviceEntry {
  podUID: string;
  containerName: string;
  resourceName: string;
  deviceIDs: string[];
  /** The plugin's ContainerAllocateResponse, protobuf-encoded (base64), as upstream keeps it. */
  allocResp: string;
}

interface CheckpointData {
  podDeviceEntries: PodDeviceEntry[];
  registeredDevices: Record<string, string[]>;
}

const allocateResponseType = () => deviceplugin.root.lookupType('v1beta1.ContainerAllocateResponse');

function extendedRequest(c: Container, resource: string): number {
  const v = c.resources?.limits?.[resource] ?? c.resources?.requests?.[resource];
  return v === undefined ? 0 : Number(v);
}

export interface DeviceManagerOptions {
  /** The device-plugins directory: kubelet.sock, the plugins' sockets and the checkpoint live here. */
  dir: string;
  /** Called when devices or their health change (the kubelet posts node status). */
  onChange?: () => void;
  /** How long a stopped plugin's devices stay in capacity before they go (upstream endpointStopGracePeriod, 5 min). */
  stopGracePeriodMs?: number;
  onError?: (err: unknown, context: string) => void;
}

export class DeviceManager {
  private server?: GrpcServer;
  private readonly endpoints = new Map<string, Endpoint>();
  /** Devices per resource with their health. */
  private readonly devices = new Map<string, Map<string, string>>();
  private entries: PodDeviceEntry[] = [];
  private admitting: Promise<void> = Promise.resolve();

  constructor(private readonly o: DeviceManagerOptions) {}

  get socketPath(): string {
    return path.join(this.o.dir, KUBELET_SOCKET);
  }

  async start(): Promise<void> {
    fs.mkdirSync(this.o.dir, { recursive: true, mode: 0o750 });
    this.readCheckpoint();
    this.server = await serveUnix(
      [[deviceplugin.RegistrationService, implementService(deviceplugin.RegistrationService, { Register: (req) => this.register(req) })]],
      this.socketPath,
      { mode: 0o660 },
    );
  }

  async stop(): Promise<void> {
    for (const e of this.endpoints.values()) this.closeEndpoint(e);
    this.endpoints.clear();
    if (this.server) await shutdownServer(this.server, 1000);
    fs.rmSync(this.socketPath, { force: true });
  }

  /** Registration.Register: checks the request, then connects to the plugin and follows its devices. */
  private register(req: deviceplugin.RegisterRequest): deviceplugin.Empty {
    const version = req.version ?? '';
    if (!SUPPORTED_VERSIONS.includes(version)) {
      throw new RpcError(grpc.status.INVALID_ARGUMENT, `requested API version ${JSON.stringify(version)} is not supported by kubelet. Supported versions are ${JSON.stringify(SUPPORTED_VERSIONS)}`);
    }
    const resource = req.resourceName ?? '';
    if (!isExtendedResourceName(resource)) throw new RpcError(grpc.status.INVALID_ARGUMENT, `the ResourceName ${JSON.stringify(resource)} is invalid`);
    const endpoint = req.endpoint ?? '';
    if (!endpoint || endpoint.includes('/') || endpoint.includes('\0') || endpoint === '.' || endpoint === '..' || endpoint === KUBELET_SOCKET) {
      throw new RpcError(grpc.status.INVALID_ARGUMENT, `the endpoint ${JSON.stringify(endpoint)} must be the name of a socket in ${this.o.dir}`);
    }
    const socket = path.join(this.o.dir, endpoint);
    const st = fs.lstatSync(socket, { throwIfNoEntry: false });
    if (!st?.isSocket()) throw new RpcError(grpc.status.FAILED_PRECONDITION, `the endpoint ${JSON.stringify(endpoint)} is not a socket in ${this.o.dir}`);
    const old = this.endpoints.get(resource);
    if (old) this.closeEndpoint(old);
    const client = new grpc.Client(`unix://${socket}`, grpc.credentials.createInsecure());
    const e: Endpoint = {
      resource,
      socket,
      client,
      api: promiseClient(deviceplugin.DevicePluginService, client as never),
      options: req.options ?? {},
      stopped: false,
    };
    this.endpoints.set(resource, e);
    this.watch(e);
    return {};
  }

  private watch(e: Endpoint) {
    const method = (deviceplugin.DevicePluginService as unknown as Record<string, { path: string; requestSerialize: (v: object) => Buffer; responseDeserialize: (b: Buffer) => unknown }>).ListAndWatch;
    const stream = e.client.makeServerStreamRequest(method.path, method.requestSerialize, method.responseDeserialize as never, {}) as grpc.ClientReadableStream<deviceplugin.ListAndWatchResponse>;
    e.stream = stream;
    stream.on('data', (res: deviceplugin.ListAndWatchResponse) => {
      if (e.stopped) return;
      const m = new Map<string, string>();
      for (const d of res.devices ?? []) if (d.ID) m.set(d.ID, d.health === HEALTHY ? HEALTHY : 'Unhealthy');
      this.devices.set(e.resource, m);
      this.writeCheckpoint();
      this.o.onChange?.();
    });
    const gone = (err?: Error) => {
      if (e.stopped) return;
      e.stopped = true;
      // The plugin went away: its devices stay in capacity but none is allocatable until it registers again.
      const m = this.devices.get(e.resource);
      if (m) for (const id of m.keys()) m.set(id, 'Unhealthy');
      // Unless the plugin registers again within the grace period, its resource leaves capacity too.
      e.expiry = setTimeout(() => {
        if (this.endpoints.get(e.resource) !== e) return;
        this.endpoints.delete(e.resource);
        this.devices.delete(e.resource);
        this.writeCheckpoint();
        this.o.onChange?.();
      }, this.o.stopGracePeriodMs ?? 5 * 60_000);
      e.expiry.unref?.();
      if (err && (err as grpc.ServiceError).code !== grpc.status.CANCELLED) this.o.onError?.(err, `device plugin ${e.resource} ListAndWatch`);
      e.client.close();
      this.o.onChange?.();
    };
    stream.on('error', gone);
    stream.on('end', () => gone());
  }

  private closeEndpoint(e: Endpoint) {
    e.stopped = true;
    if (e.expiry) clearTimeout(e.expiry);
    e.stream?.cancel();
    e.client.close();
  }

  /** Extended resources for node status: capacity counts every device, allocatable the healthy ones. */
  resources(): { capacity: Record<string, string>; allocatable: Record<string, string> } {
    const capacity: Record<string, string> = {};
    const allocatable: Record<string, string> = {};
    for (const [resource, m] of this.devices) {
      capacity[resource] = String(m.size);
      allocatable[resource] = String([...m.values()].filter((h) => h === HEALTHY).length);
    }
    return { capacity, allocatable };
  }

  private allocatedIds(resource: string, exceptPod?: string): Set<string> {
    return new Set(this.entries.filter((x) => x.resourceName === resource && x.podUID !== exceptPod).flatMap((x) => x.deviceIDs));
  }

  /** Whether the pod's device allocations are all in place (or it needs none). */
  admitted(pod: Pod): boolean {
    const uid = pod.metadata.uid ?? '';
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
      for (const resource of this.requestedResources(c)) {
        if (!this.entries.some((x) => x.podUID === uid && x.containerName === c.name && x.resourceName === resource)) return false;
      }
    }
    return true;
  }

  private requestedResources(c: Container): string[] {
    const names = new Set([...Object.keys(c.resources?.limits ?? {}), ...Object.keys(c.resources?.requests ?? {})]);
    return [...names].filter((r) => isExtendedResourceName(r) && (this.devices.has(r) || this.endpoints.has(r)) && extendedRequest(c, r) > 0);
  }

  /**
   * Allocates devices to every container of a pod that asks for a device resource. Throws
   * DeviceAdmissionError (and keeps nothing) when devices are short or the plugin fails.
   */
  allocate(pod: Pod): Promise<void> {
    // One admission at a time, as the kubelet admits pods serially: two pods never see the same free devices.
    const run = this.admitting.then(() => this.allocateNow(pod));
    this.admitting = run.catch(() => {});
    return run;
  }

  private async allocateNow(pod: Pod): Promise<void> {
    if (this.admitted(pod)) return;
    const uid = pod.metadata.uid ?? '';
    const added: PodDeviceEntry[] = [];
    {
      // Init containers run one at a time before the app containers: their devices are reusable by later containers.
      const reusable = new Map<string, Set<string>>();
      for (const [i, c] of [...(pod.spec.initContainers ?? []), ...pod.spec.containers].entries()) {
        const isInit = i < (pod.spec.initContainers ?? []).length;
        for (const resource of this.requestedResources(c)) {
          if (this.entries.some((x) => x.podUID === uid && x.containerName === c.name && x.resourceName === resource)) continue;
          const needed = extendedRequest(c, resource);
          const e = this.endpoints.get(resource);
          const m = this.devices.get(resource);
          if (!e || e.stopped || !m) throw new DeviceAdmissionError(`Allocate failed due to no healthy devices present; cannot allocate unhealthy devices ${resource}, which is unexpected`);
          const taken = new Set([...this.allocatedIds(resource), ...added.filter((x) => x.resourceName === resource).flatMap((x) => x.deviceIDs)]);
          for (const id of reusable.get(resource) ?? []) taken.delete(id);
          const available = [...m].filter(([id, h]) => h === HEALTHY && !taken.has(id)).map(([id]) => id);
          if (available.length < needed) {
            throw new DeviceAdmissionError(
              `Allocate failed due to requested number of devices unavailable for ${resource}. Requested: ${needed}, Available: ${available.length}, which is unexpected`,
            );
          }
          let ids = available.sort().slice(0, needed);
          try {
            if (e.options.getPreferredAllocationAvailable) {
              const pref = await e.api.GetPreferredAllocation(
                { containerRequests: [{ availableDeviceIDs: available, mustIncludeDeviceIDs: [], allocationSize: needed }] },
                { timeoutMs: 10_000 },
              );
              const got = pref.containerResponses?.[0]?.deviceIDs ?? [];
              // A preference that is not a valid choice is ignored, as upstream does.
              if (got.length === needed && got.every((id) => available.includes(id)) && new Set(got).size === needed) ids = got;
            }
            const res = await e.api.Allocate({ containerRequests: [{ devicesIds: ids }] }, { timeoutMs: 30_000 });
            const answer = res.containerResponses?.[0];
            if (!res.containerResponses || res.containerResponses.length !== 1 || !answer) {
              throw new Error(`device plugin ${resource} answered Allocate with ${res.containerResponses?.length ?? 0} container responses for 1 container`);
            }
            added.push({ podUID: uid, containerName: c.name, resourceName: resource, deviceIDs: ids, allocResp: encode(allocateResponseType(), answer).toString('base64') });
            if (isInit) {
              const r = reusable.get(resource) ?? new Set<string>();
              for (const id of ids) r.add(id);
              reusable.set(resource, r);
            } else for (const id of ids) reusable.get(resource)?.delete(id);
          } catch (err) {
            const msg = (err as grpc.ServiceError).code !== undefined ? `rpc error: code = ${grpc.status[(err as grpc.ServiceError).code]} desc = ${(err as grpc.ServiceError).details}` : (err as Error).message;
            throw new DeviceAdmissionError(`Allocate failed due to ${msg}, which is unexpected`);
          }
        }
      }
    }
    // Only a complete admission is kept: a failure above leaves every device free.
    if (added.length) {
      this.entries.push(...added);
      this.writeCheckpoint();
    }
  }

  /** Applies the container's Allocate answers to its CRI config (upstream GetDeviceRunContainerOptions). */
  applyToContainer(pod: Pod, containerName: string, cfg: cri.ContainerConfig): cri.ContainerConfig {
    const uid = pod.metadata.uid ?? '';
    const mine = this.entries.filter((x) => x.podUID === uid && x.containerName === containerName);
    if (!mine.length) return cfg;
    const envs = [...(cfg.envs ?? [])];
    const mounts = [...(cfg.mounts ?? [])];
    const devices = [...(cfg.devices ?? [])];
    const annotations = { ...(cfg.annotations ?? {}) };
    const cdi = [...(cfg.CDIDevices ?? [])];
    for (const entry of mine) {
      const r = decode<deviceplugin.ContainerAllocateResponse>(allocateResponseType(), Buffer.from(entry.allocResp, 'base64'));
      for (const [key, value] of Object.entries(r.envs ?? {})) {
        const at = envs.findIndex((x) => x.key === key);
        if (at >= 0) envs[at] = { key, value };
        else envs.push({ key, value });
      }
      for (const m of r.mounts ?? []) mounts.push({ containerPath: m.containerPath, hostPath: m.hostPath, readonly: m.readOnly ?? false });
      for (const d of r.devices ?? []) devices.push({ containerPath: d.containerPath, hostPath: d.hostPath, permissions: d.permissions });
      Object.assign(annotations, r.annotations ?? {});
      for (const d of r.cdiDevices ?? []) if (d.name) cdi.push({ name: d.name });
    }
    return { ...cfg, envs, mounts, devices, annotations, CDIDevices: cdi };
  }

  /** The devices a pod holds, by container and resource. */
  podDevices(uid: string): { containerName: string; resourceName: string; deviceIDs: string[] }[] {
    return this.entries.filter((x) => x.podUID === uid).map(({ containerName, resourceName, deviceIDs }) => ({ containerName, resourceName, deviceIDs: [...deviceIDs] }));
  }

  /** Frees a pod's devices (it terminated or is gone). */
  release(uid: string): void {
    const before = this.entries.length;
    this.entries = this.entries.filter((x) => x.podUID !== uid);
    if (this.entries.length !== before) this.writeCheckpoint();
  }

  /** PreStartContainer for plugins that ask for it, before each container using their devices starts. */
  async preStart(pod: Pod, containerName: string): Promise<void> {
    for (const entry of this.entries.filter((x) => x.podUID === pod.metadata.uid && x.containerName === containerName)) {
      const e = this.endpoints.get(entry.resourceName);
      if (e?.options.preStartRequired && !e.stopped) await e.api.PreStartContainer({ devicesIds: entry.deviceIDs }, { timeoutMs: 30_000 });
    }
  }

  private checkpointPath() {
    return path.join(this.o.dir, CHECKPOINT_FILE);
  }

  private writeCheckpoint() {
    const data: CheckpointData = {
      podDeviceEntries: this.entries,
      registeredDevices: Object.fromEntries([...this.devices].map(([r, m]) => [r, [...m.keys()]])),
    };
    const body = JSON.stringify(data);
    const file = { Data: data, Checksum: createHash('sha256').update(body).digest('hex') };
    const tmp = `${this.checkpointPath()}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(file), { mode: 0o600 });
    fs.renameSync(tmp, this.checkpointPath());
  }

  /** Allocations survive a restart; devices count as none until their plugin registers again (upstream). */
  private readCheckpoint() {
    let raw: string;
    try {
      raw = fs.readFileSync(this.checkpointPath(), 'utf8');
    } catch {
      return;
    }
    try {
      const file = JSON.parse(raw) as { Data: CheckpointData; Checksum: string };
      if (createHash('sha256').update(JSON.stringify(file.Data)).digest('hex') !== file.Checksum) throw new Error('checksum mismatch');
      this.entries = file.Data.podDeviceEntries ?? [];
      for (const r of Object.keys(file.Data.registeredDevices ?? {})) this.devices.set(r, new Map());
    } catch (err) {
      this.o.onError?.(new Error(`device manager checkpoint ${this.checkpointPath()} is corrupted and was ignored: ${(err as Error).message}`), 'device manager');
    }
  }
}
