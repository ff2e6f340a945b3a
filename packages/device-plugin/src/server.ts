// A device plugin: serves the DevicePlugin service on its socket in the kubelet's device-plugins
// directory, registers with the kubelet's Registration service on kubelet.sock, streams the device list
// (again on every health change) to ListAndWatch, answers Allocate and GetPreferredAllocation, and
// registers again when the kubelet restarts (its kubelet.sock is created anew).
import fs from 'node:fs';
import path from 'node:path';
import {
  deviceplugin,
  type GrpcServer,
  implementService,
  openChannel,
  RpcError,
  serveUnix,
  shutdownServer,
  grpc,
} from '@kemu/proto';
import { HEALTHY, isExtendedResourceName, KUBELET_SOCKET, VERSION } from './constants.js';
import { type AllocateAnswer, defaultAllocateAnswer, type DeviceInfo } from './devices.js';

export interface DevicePluginOptions {
  /** The extended resource, e.g. nvidia.com/gpu. */
  resourceName: string;
  /** The kubelet's device-plugins directory (holds kubelet.sock). */
  pluginDir: string;
  /** This plugin's socket file name in pluginDir (default derived from the resource name). */
  socketName?: string;
  devices: DeviceInfo[];
  allocate?: AllocateAnswer;
  preStartRequired?: boolean;
  /** How often to look for a restarted kubelet (default 1 s). */
  watchMs?: number;
  /** Holds each Allocate this long before answering (failure drills: a plugin dying mid-Allocate). */
  allocateDelayMs?: number;
  /** Registration API version to announce (tests use others to see the kubelet refuse them). */
  version?: string;
  log?: (line: string) => void;
}

type Subscriber = (devices: deviceplugin.Device[] | null) => void;

export class DevicePluginServer {
  readonly socketName: string;
  readonly socketPath: string;
  private devices: DeviceInfo[];
  private server?: GrpcServer;
  private readonly subscribers = new Set<Subscriber>();
  private watchTimer?: NodeJS.Timeout;
  /** Identity of the kubelet.sock registered with (inode and change time: a new kubelet makes a new file). */
  private kubeletKey?: string;
  private readonly answer: AllocateAnswer;
  private registering?: Promise<void>;
  /** Allocate and PreStartContainer requests served, for tests. */
  readonly allocations: string[][] = [];
  readonly preStarts: string[][] = [];

  constructor(private readonly o: DevicePluginOptions) {
    if (!isExtendedResourceName(o.resourceName)) throw new Error(`${JSON.stringify(o.resourceName)} is not an extended resource name (vendor-domain/resource)`);
    this.socketName = o.socketName ?? `${o.resourceName.replace(/[^A-Za-z0-9_.-]/g, '-')}.sock`;
    if (this.socketName.includes('/') || this.socketName === KUBELET_SOCKET || this.socketName.startsWith('.')) {
      throw new Error(`socket name ${JSON.stringify(this.socketName)} must be a plain file name other than ${KUBELET_SOCKET}`);
    }
    this.socketPath = path.join(o.pluginDir, this.socketName);
    this.devices = o.devices.map((d) => ({ ...d }));
    this.answer = o.allocate ?? defaultAllocateAnswer(o.resourceName);
  }

  private wire(): deviceplugin.Device[] {
    return this.devices.map((d) => ({
      ID: d.id,
      health: d.health,
      topology: d.numaNode === undefined ? null : { nodes: [{ ID: d.numaNode }] },
    }));
  }

  list(): DeviceInfo[] {
    return this.devices.map((d) => ({ ...d }));
  }

  /** Changes a device's health (or the whole inventory) and tells every ListAndWatch stream. */
  setHealth(id: string, health: 'Healthy' | 'Unhealthy'): void {
    const d = this.devices.find((x) => x.id === id);
    if (!d) throw new Error(`no device ${JSON.stringify(id)}`);
    if (d.health === health) return;
    d.health = health;
    this.publish();
  }

  setDevices(devices: DeviceInfo[]): void {
    this.devices = devices.map((d) => ({ ...d }));
    this.publish();
  }

  private publish() {
    const list = this.wire();
    for (const s of this.subscribers) s(list);
  }

  private handlers(): deviceplugin.DevicePluginHandlers {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    return {
      GetDevicePluginOptions: () => ({ preStartRequired: !!this.o.preStartRequired, getPreferredAllocationAvailable: true }),
      async *ListAndWatch(_req, call) {
        const queue: (deviceplugin.Device[] | null)[] = [self.wire()];
        let wake: (() => void) | undefined;
        const sub: Subscriber = (devices) => {
          queue.push(devices);
          wake?.();
        };
        self.subscribers.add(sub);
        const done = () => sub(null);
        call.on('cancelled', done);
        call.on('close', done);
        try {
          for (;;) {
            while (queue.length) {
              const next = queue.shift()!;
              if (next === null) return;
              yield { devices: next };
            }
            await new Promise<void>((r) => (wake = r));
            wake = undefined;
          }
        } finally {
          self.subscribers.delete(sub);
        }
      },
      GetPreferredAllocation: (req) => ({
        containerResponses: (req.containerRequests ?? []).map((c) => ({ deviceIDs: this.prefer(c) })),
      }),
      Allocate: async (req) => {
        this.o.log?.(`Allocate ${(req.containerRequests ?? []).map((c) => (c.devicesIds ?? []).join(',')).join(' ')}`);
        if (this.o.allocateDelayMs) await new Promise((r) => setTimeout(r, this.o.allocateDelayMs));
        const containerResponses = (req.containerRequests ?? []).map((c) => {
          const ids = c.devicesIds ?? [];
          const picked = ids.map((id) => {
            const d = this.devices.find((x) => x.id === id);
            if (!d) throw new RpcError(grpc.status.INVALID_ARGUMENT, `invalid allocation request for ${JSON.stringify(this.o.resourceName)}: unknown device: ${id}`);
            if (d.health !== HEALTHY) throw new RpcError(grpc.status.FAILED_PRECONDITION, `invalid allocation request for ${JSON.stringify(this.o.resourceName)}: device ${id} is unhealthy`);
            return d;
          });
          this.allocations.push(ids);
          return this.answer(picked);
        });
        return { containerResponses };
      },
      PreStartContainer: (req) => {
        this.preStarts.push(req.devicesIds ?? []);
        return {};
      },
    };
  }

  /** Preferred devices: the must-include ones, then the NUMA node they are on, then by index. */
  private prefer(c: deviceplugin.ContainerPreferredAllocationRequest): string[] {
    const size = c.allocationSize ?? 0;
    const must = c.mustIncludeDeviceIDs ?? [];
    const byId = new Map(this.devices.map((d) => [d.id, d]));
    const available = (c.availableDeviceIDs ?? []).filter((id) => !must.includes(id) && byId.has(id));
    const numaCount = new Map<number, number>();
    for (const id of available) {
      const n = byId.get(id)!.numaNode ?? 0;
      numaCount.set(n, (numaCount.get(n) ?? 0) + 1);
    }
    const mustNuma = new Set(must.map((id) => byId.get(id)?.numaNode ?? 0));
    const score = (id: string) => {
      const n = byId.get(id)!.numaNode ?? 0;
      // Same NUMA node as the must-include devices first; then the node with the most free devices.
      return [mustNuma.has(n) ? 0 : 1, -(numaCount.get(n) ?? 0), n, byId.get(id)!.index ?? 0];
    };
    const sorted = [...available].sort((a, b) => {
      const sa = score(a);
      const sb = score(b);
      for (let i = 0; i < sa.length; i++) if (sa[i] !== sb[i]) return sa[i] - sb[i];
      return a.localeCompare(b);
    });
    return [...must, ...sorted].slice(0, Math.max(size, must.length));
  }

  /** Serves the plugin socket and registers with the kubelet. */
  async start(): Promise<void> {
    fs.mkdirSync(this.o.pluginDir, { recursive: true, mode: 0o750 });
    this.server = await serveUnix([[deviceplugin.DevicePluginService, implementService(deviceplugin.DevicePluginService, this.handlers())]], this.socketPath, {
      mode: 0o600,
    });
    await this.register();
    this.watchTimer = setInterval(() => this.watchKubelet(), this.o.watchMs ?? 1000);
    this.watchTimer.unref?.();
  }

  /** Registers with the kubelet's Registration service. Throws the kubelet's refusal. */
  async register(): Promise<void> {
    const kubelet = path.join(this.o.pluginDir, KUBELET_SOCKET);
    this.kubeletKey = this.kubeletSocketKey();
    const ch = openChannel(`unix://${kubelet}`);
    try {
      await ch.service(deviceplugin.RegistrationService).Register(
        {
          version: this.o.version ?? VERSION,
          endpoint: this.socketName,
          resourceName: this.o.resourceName,
          options: { preStartRequired: !!this.o.preStartRequired, getPreferredAllocationAvailable: true },
        },
        { timeoutMs: 5000 },
      );
      this.o.log?.(`registered ${this.o.resourceName} (${this.devices.length} devices) with the kubelet at ${kubelet}`);
    } finally {
      ch.close();
    }
  }

  private kubeletSocketKey(): string | undefined {
    const st = fs.statSync(path.join(this.o.pluginDir, KUBELET_SOCKET), { throwIfNoEntry: false });
    return st ? `${st.ino}/${st.ctimeMs}` : undefined;
  }

  /** A new kubelet.sock (the kubelet restarted): register again, as upstream plugins do. */
  private watchKubelet() {
    if (this.registering) return;
    const key = this.kubeletSocketKey();
    if (key === undefined) {
      this.kubeletKey = undefined;
      return;
    }
    if (key === this.kubeletKey) return;
    this.registering = this.register()
      .catch((err) => this.o.log?.(`registration failed: ${(err as Error).message}`))
      .finally(() => (this.registering = undefined));
  }

  async stop(): Promise<void> {
    if (this.watchTimer) clearInterval(this.watchTimer);
    for (const s of this.subscribers) s(null);
    await this.registering;
    if (this.server) await shutdownServer(this.server);
    fs.rmSync(this.socketPath, { force: true });
  }
}
