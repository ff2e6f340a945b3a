import { promises as fs } from 'node:fs';
import path from 'node:path';
import {
  csi,
  type grpc,
  type GrpcEngine,
  implementService,
  parseGrpcEngine,
  serveUnix,
  type ServiceRegistration,
  shutdownServer,
  socketPathFromEndpoint,
} from '@kemu/proto';
import type { Backend } from './backend.js';
import { HostPathBackend } from './backend-hostpath.js';
import { SimBackend, type SimBackendOptions } from './backend-sim.js';
import { type ControllerServer, createControllerServer } from './controller-server.js';
import { Driver, type DriverOptions } from './driver.js';
import { createGroupControllerServer, type GroupControllerServer } from './group-controller-server.js';
import { createIdentityServer, type IdentityServer } from './identity-server.js';
import type { CallLogger } from './logging.js';
import { createNodeServer, type NodeServer } from './node-server.js';
import { serveRegistration } from './registration-server.js';
import { lockStateDir } from './state-lock.js';
import { FileStateStore, MemoryStateStore, type StateStore } from './state-store.js';

export interface CsiDriverOptions extends Omit<DriverOptions, 'backend' | 'store'> {
  /** `hostpath`, `sim`, or a Backend of your own */
  backend: 'hostpath' | 'sim' | Backend;
  /** where state (and for hostpath, the data) lives */
  stateDir?: string;
  sim?: SimBackendOptions;
  /** sim: also keep the driver state in `<stateDir>/state.json` so it survives a restart (default: memory only) */
  simPersist?: boolean;
  /** hostpath: bind-mount (default when root) or fall back to symbolic links */
  useMounts?: boolean;
  logger?: CallLogger;
}

/** The driver and its four service objects, callable in process. */
export interface CsiDriver {
  driver: Driver;
  backend: Backend;
  /** give up the state directory (other processes may then use it) */
  release(): Promise<void>;
  /** the Node service of one of the served nodes (`nodeId`, `extraNodeIds`); `node` is the driver's own */
  nodeServer(nodeId: string): NodeServer;
  identity: IdentityServer;
  controller: ControllerServer;
  node: NodeServer;
  groupController: GroupControllerServer;
}

export async function createCsiDriver(opts: CsiDriverOptions): Promise<CsiDriver> {
  let backend: Backend;
  let store: StateStore;
  let lock: { release(): Promise<void> } | undefined;
  if (opts.backend === 'hostpath') {
    if (!opts.stateDir) throw new Error('the hostpath backend needs a state directory (--state-dir)');
    await fs.mkdir(opts.stateDir, { recursive: true, mode: 0o750 });
    lock = await lockStateDir(opts.stateDir);
    const hp = new HostPathBackend({ dir: opts.stateDir, useMounts: opts.useMounts });
    await hp.init();
    backend = hp;
    store = new FileStateStore(path.join(opts.stateDir, 'state.json'));
  } else {
    backend = opts.backend === 'sim' ? new SimBackend(opts.sim) : opts.backend;
    const persist = opts.backend === 'sim' ? opts.simPersist : true;
    if (opts.stateDir && persist) {
      await fs.mkdir(opts.stateDir, { recursive: true, mode: 0o750 });
      lock = await lockStateDir(opts.stateDir);
      // a simulator's state needs to survive a process kill, not a power cut: skip fsync
      store = new FileStateStore(path.join(opts.stateDir, 'state.json'), opts.backend !== 'sim');
    } else {
      store = new MemoryStateStore();
    }
  }
  let driver: Driver;
  try {
    driver = new Driver({ ...opts, backend, store });
    await driver.start();
  } catch (e) {
    await lock?.release();
    throw e;
  }
  const node = createNodeServer(driver, opts.logger);
  const nodeServers = new Map<string, NodeServer>([[driver.nodeId, node]]);
  return {
    driver,
    backend,
    release: async () => {
      await lock?.release();
    },
    nodeServer(nodeId: string) {
      let s = nodeServers.get(nodeId);
      if (!s) {
        if (!driver.nodeIds.includes(nodeId)) throw new Error(`node ${nodeId} is not served by this driver`);
        s = createNodeServer(driver, opts.logger, nodeId);
        nodeServers.set(nodeId, s);
      }
      return s;
    },
    identity: createIdentityServer(driver, opts.logger),
    controller: createControllerServer(driver, opts.logger),
    node,
    groupController: createGroupControllerServer(driver, opts.logger),
  };
}

/** The four CSI services of a driver, ready to register on a gRPC server of either engine. */
export function csiServices(d: CsiDriver): ServiceRegistration[] {
  return [
    [csi.IdentityService, implementService(csi.IdentityService, d.identity)],
    [csi.ControllerService, implementService(csi.ControllerService, d.controller)],
    [csi.NodeService, implementService(csi.NodeService, d.node)],
    [csi.GroupControllerService, implementService(csi.GroupControllerService, d.groupController)],
  ];
}

/** Registers the four CSI services of a driver on a server (grpc-js or @kemu/proto's http2 engine). */
export function addCsiServices(
  server: { addService(definition: grpc.ServiceDefinition, implementation: grpc.UntypedServiceImplementation): void },
  d: CsiDriver,
): void {
  for (const [definition, implementation] of csiServices(d)) server.addService(definition, implementation);
}

export interface ServeOptions extends CsiDriverOptions {
  /** unix:///path/csi.sock (or a bare absolute path) */
  endpoint: string;
  /** kubelet plugin registry directory; when set, a Registration socket is served there */
  registrationDir?: string;
  /** the CSI socket path as the kubelet sees it (default: the endpoint's path) */
  kubeletRegistrationPath?: string;
  /**
   * gRPC server engine: `http2` (default, @kemu/proto's lean node:http2 engine) or `grpc-js`.
   * `KEMU_GRPC_ENGINE` in the environment picks it when this is not set.
   */
  grpcEngine?: GrpcEngine;
}

export interface RunningCsiDriver extends CsiDriver {
  socketPath: string;
  registrationSocketPath?: string;
  close(): Promise<void>;
}

/** Creates the driver and serves it on a unix socket (mode 0660), plus plugin registration if asked. */
export async function serveCsiDriver(opts: ServeOptions): Promise<RunningCsiDriver> {
  const socketPath = socketPathFromEndpoint(opts.endpoint);
  const engine = opts.grpcEngine ?? parseGrpcEngine(process.env.KEMU_GRPC_ENGINE) ?? 'http2';
  const d = await createCsiDriver(opts);
  let server: Awaited<ReturnType<typeof serveUnix>>;
  try {
    server = await serveUnix(csiServices(d), socketPath, { engine });
  } catch (e) {
    await d.release();
    throw e;
  }
  let reg: Awaited<ReturnType<typeof serveRegistration>> | undefined;
  if (opts.registrationDir) {
    reg = await serveRegistration(
      opts.registrationDir,
      { driverName: d.driver.name, endpoint: opts.kubeletRegistrationPath ?? socketPath },
      opts.logger,
    );
  }
  return {
    ...d,
    socketPath,
    registrationSocketPath: reg?.socketPath,
    async close() {
      await reg?.close();
      await shutdownServer(server, 2000);
      await fs.rm(socketPath, { force: true });
      await d.release();
    },
  };
}
