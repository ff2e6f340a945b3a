// The state every CRI RPC group works on (containerd's criService struct): the sandbox and container
// stores with their ID and name indexes, per-object locks, and the backend, network, images and state store.
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { cri } from '@kemu/proto';
import { resolveWithin, UnsafePathError } from '@kemu/safe-fs';
import { containerStateEnum, toContainerStatus, toPodSandboxStatus } from './convert.js';
import { invalidArgument, notFound } from './errors.js';
import { checkIdSyntax, IdIndex } from './ids.js';
import type { ImageStore } from './image-store.js';
import { KeyedMutex } from './keyed-mutex.js';
import { matchesLabels } from './labels.js';
import { NameIndex } from './names.js';
import { RecordIndex } from './record-index.js';
import type { StateStore } from './state-store.js';
import { nowNs } from './time.js';
import type { Backend, ContainerRecord, ExecOptions, NetworkManager, PodNetworkRequest, SandboxRecord } from './types.js';

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

export class RuntimeContext {
  readonly events = new EventEmitter();
  readonly sandboxes = new RecordIndex<SandboxRecord>((sb) => sb.config.labels);
  readonly containers = new RecordIndex<ContainerRecord>((c) => c.config.labels, (c) => c.sandboxId);
  readonly sandboxIds = new IdIndex();
  readonly containerIds = new IdIndex();
  readonly sandboxNames = new NameIndex('sandbox');
  readonly containerNames = new NameIndex('container');
  readonly lock = new KeyedMutex();
  readonly handlers: Set<string>;
  readonly logRoots: string[];
  streaming?: StreamingRegistry;
  podCidr = '';

  readonly backend: Backend;
  readonly network: NetworkManager;
  readonly images: ImageStore;
  readonly state: StateStore;

  constructor(opts: CriRuntimeOptions) {
    this.backend = opts.backend;
    this.network = opts.network;
    this.images = opts.images;
    this.state = opts.state;
    this.handlers = new Set(['', ...(opts.runtimeHandlers ?? [])]);
    this.logRoots = (opts.allowedLogRoots ?? ['/var/log/pods', '/tmp']).map((p) => path.resolve(p));
    this.events.setMaxListeners(0);
  }

  findSandbox(id: string | undefined): SandboxRecord | undefined {
    const full = this.sandboxIds.resolve(checkIdSyntax(id, 'sandbox'));
    return full ? this.sandboxes.get(full) : undefined;
  }

  getSandbox(id: string | undefined): SandboxRecord {
    const sb = this.findSandbox(id);
    if (!sb) throw notFound(`an error occurred when try to find sandbox ${JSON.stringify(id)}: not found`);
    return sb;
  }

  findContainer(id: string | undefined): ContainerRecord | undefined {
    const full = this.containerIds.resolve(checkIdSyntax(id, 'container'));
    return full ? this.containers.get(full) : undefined;
  }

  getContainer(id: string | undefined): ContainerRecord {
    const c = this.findContainer(id);
    if (!c) throw notFound(`an error occurred when try to find container ${JSON.stringify(id)}: not found`);
    return c;
  }

  containersOf(sandboxId: string): ContainerRecord[] {
    return this.containers.inGroup(sandboxId);
  }

  netRequest(sb: SandboxRecord): PodNetworkRequest {
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

  emit(c: ContainerRecord, type: cri.ContainerEventType): void {
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

  containerStatusOf(c: ContainerRecord): cri.ContainerStatus {
    return toContainerStatus(c, this.images.resolve(c.imageId));
  }

  saveSandbox(sb: SandboxRecord) {
    return this.state.save('sandboxes', sb.id, sb);
  }

  saveContainer(c: ContainerRecord) {
    return this.state.save('containers', c.id, c);
  }

  logRootOf(p: string, what: string): string {
    try {
      return resolveWithin(p, this.logRoots, { allowRoot: true, what }).root;
    } catch (err) {
      if (err instanceof UnsafePathError) {
        throw invalidArgument(err.reason === 'outside-root' ? `${what} ${JSON.stringify(p)} is outside the allowed log roots (${this.logRoots.join(', ')})` : err.message);
      }
      throw err;
    }
  }

  filterContainers(f: cri.ContainerFilter | cri.ContainerStatsFilter | null | undefined): ContainerRecord[] {
    const resolveOrNone = (index: IdIndex, id: string) => {
      try {
        return index.resolve(id);
      } catch {
        return undefined;
      }
    };
    // Start from the narrowest index the filter names, then apply every criterion.
    let items: ContainerRecord[];
    if (f?.id) {
      const full = resolveOrNone(this.containerIds, f.id);
      const c = full ? this.containers.get(full) : undefined;
      items = c ? [c] : [];
    } else if (f?.podSandboxId) {
      const full = resolveOrNone(this.sandboxIds, f.podSandboxId);
      items = full ? this.containers.inGroup(full) : [];
    } else {
      items = this.containers.matching(f?.labelSelector);
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
}
