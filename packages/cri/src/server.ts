// Composition: builds the runtime core from options and serves it on a unix socket, or hands back the
// service objects for in-process use.
import fs from 'node:fs';
import path from 'node:path';
import {
  cri,
  type GrpcEngine,
  type GrpcServer,
  implementService,
  parseGrpcEngine,
  serveUnix,
  shutdownServer,
  socketPathFromEndpoint,
} from '@kemu/proto';
import { SimBackend, type SimBackendOptions } from './backend-sim.js';
import { ImageStore } from './image-store.js';
import { createCniNetwork } from './network-cni.js';
import { NoNetwork } from './network-none.js';
import { PodCidrIpam } from './network-pod-cidr.js';
import { SimDefaultNetwork } from './network-sim.js';
import { CriRuntime } from './runtime.js';
import { createImageService, type ImageServiceHandlers } from './service-image.js';
import { createRuntimeService, type RuntimeServiceHandlers } from './service-runtime.js';
import { FileStateStore, MemoryStateStore } from './state-store.js';
import { StreamingServer } from './streaming-server.js';
import type { Backend, NetworkManager } from './types.js';

export interface CniOptions {
  confDir: string;
  binDirs: string[];
  cacheDir?: string;
}

export interface CriRuntimeConfig {
  backend: 'sim' | 'process' | 'runc' | Backend;
  /** Persist state here (required to recover after a restart); memory only when omitted. */
  stateDir?: string;
  imageDir?: string;
  syntheticImages?: boolean;
  failImages?: string[];
  /**
   * Pull from OCI registries (the default for the `runc` backend): `configPath` is a containerd-style
   * hosts directory; `false` turns registry pulls off.
   */
  registry?: { configPath?: string } | false;
  /** Pod networking: an explicit manager wins; else CNI when `cni` is given; else the backend's default. */
  network?: NetworkManager;
  cni?: CniOptions;
  /** Factory for a CNI-backed network manager (kept pluggable so the core does not load CNI code unless used). */
  cniNetworkFactory?: (opts: CniOptions & { stateDir?: string; backend: string }) => Promise<NetworkManager>;
  /**
   * `sim` with no CNI config: `netsim` (default) runs bridge + host-local in process on a simulated
   * datapath; `ipam` only hands out pod IPs from the pod CIDR (no datapath at all, the cheapest).
   */
  simNetwork?: 'netsim' | 'ipam';
  podCidr?: string;
  runtimeHandlers?: string[];
  allowedLogRoots?: string[];
  sim?: SimBackendOptions;
  process?: import('./backend-process.js').ProcessBackendOptions;
  runc?: import('./backend-runc.js').RuncBackendOptions;
  /** Streaming server bind address (default 127.0.0.1:0); `false` disables Exec/Attach/PortForward. */
  streaming?: { host?: string; port?: number } | false;
}

export interface CriInstance {
  runtime: CriRuntime;
  /** The RuntimeService handlers, callable in process with plain request objects. */
  runtimeService: RuntimeServiceHandlers;
  /** The ImageService handlers, callable in process. */
  imageService: ImageServiceHandlers;
  streaming?: StreamingServer;
  close(): Promise<void>;
}

async function makeBackend(cfg: CriRuntimeConfig, images: ImageStore, simNet?: SimDefaultNetwork): Promise<Backend> {
  if (typeof cfg.backend === 'object') return cfg.backend;
  if (cfg.backend === 'sim') {
    return new SimBackend({
      // Containers' writable layers persist with the rest of the runtime's state.
      ...(cfg.stateDir ? { rootfsDir: path.join(cfg.stateDir, 'sim-rootfs') } : {}),
      ...cfg.sim,
      ...(simNet ? { netns: simNet.netnsHooks(), networkUsage: (p: string) => simNet.networkUsage(p) } : {}),
    });
  }
  if (cfg.backend === 'process') {
    const { ProcessBackend } = await import('./backend-process.js');
    return new ProcessBackend({ stateDir: cfg.stateDir, images, ...cfg.process });
  }
  if (cfg.backend === 'runc') {
    const { RuncBackend } = await import('./backend-runc.js');
    return new RuncBackend({ stateDir: cfg.stateDir, images, ...cfg.runc });
  }
  throw new Error(`unknown backend ${JSON.stringify(cfg.backend)}: use sim, process or runc`);
}

async function makeNetwork(cfg: CriRuntimeConfig, backendName: string, simNet?: SimDefaultNetwork): Promise<NetworkManager> {
  if (cfg.network) return cfg.network;
  if (simNet) return simNet;
  if (cfg.cni) {
    const netState = cfg.stateDir ? path.join(cfg.stateDir, 'network') : undefined;
    if (cfg.cniNetworkFactory) return cfg.cniNetworkFactory({ ...cfg.cni, stateDir: netState, backend: backendName });
    return createCniNetwork(cfg.cni);
  }
  if (backendName === 'sim') return new PodCidrIpam({ podCidr: cfg.podCidr });
  return new NoNetwork();
}

/** Builds a runtime (recovering persisted state) without any socket: the in-process path. */
export async function createCri(cfg: CriRuntimeConfig): Promise<CriInstance> {
  if (cfg.stateDir) fs.mkdirSync(cfg.stateDir, { recursive: true, mode: 0o700 });
  const images = new ImageStore({
    imageDir: cfg.imageDir,
    stateDir: cfg.stateDir,
    syntheticImages: cfg.syntheticImages,
    failImages: cfg.failImages,
    registry: cfg.registry === false ? undefined : (cfg.registry ?? (cfg.backend === 'runc' ? {} : undefined)),
  });
  const simNet =
    cfg.backend === 'sim' && !cfg.network && !cfg.cni && cfg.simNetwork !== 'ipam'
      ? new SimDefaultNetwork({ stateDir: cfg.stateDir ? path.join(cfg.stateDir, 'network') : undefined, podCidr: cfg.podCidr })
      : undefined;
  const backend = await makeBackend(cfg, images, simNet);
  const network = await makeNetwork(cfg, backend.name, simNet);
  const state = cfg.stateDir ? new FileStateStore(cfg.stateDir) : new MemoryStateStore();
  const runtime = new CriRuntime({
    backend,
    network,
    images,
    state,
    runtimeHandlers: cfg.runtimeHandlers,
    allowedLogRoots: cfg.allowedLogRoots,
  });
  await runtime.recover();
  if (cfg.podCidr) await runtime.updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: cfg.podCidr } } });
  let streaming: StreamingServer | undefined;
  if (cfg.streaming !== false) {
    streaming = new StreamingServer(runtime, cfg.streaming ?? {});
    await streaming.start();
    runtime.setStreaming(streaming);
  }
  return {
    runtime,
    runtimeService: createRuntimeService(runtime),
    imageService: createImageService(runtime),
    streaming,
    async close() {
      runtime.events.emit('close');
      await streaming?.close();
      await runtime.close();
    },
  };
}

export interface CriServer extends CriInstance {
  socketPath: string;
  server: GrpcServer;
}

export interface CriServeOptions {
  listen: string;
  /**
   * gRPC server engine: `http2` (default, @kemu/proto's lean node:http2 engine) or `grpc-js`.
   * `KEMU_GRPC_ENGINE` in the environment picks it when this is not set.
   */
  grpcEngine?: GrpcEngine;
}

/** Builds the runtime and serves RuntimeService + ImageService on a unix socket (mode 0660). */
export async function startCriServer(cfg: CriRuntimeConfig & CriServeOptions): Promise<CriServer> {
  const socketPath = socketPathFromEndpoint(cfg.listen);
  const engine = cfg.grpcEngine ?? parseGrpcEngine(process.env.KEMU_GRPC_ENGINE) ?? 'http2';
  const instance = await createCri(cfg);
  let server: GrpcServer;
  try {
    server = await serveUnix(
      [
        [cri.RuntimeServiceService, implementService(cri.RuntimeServiceService, instance.runtimeService)],
        [cri.ImageServiceService, implementService(cri.ImageServiceService, instance.imageService)],
      ],
      socketPath,
      { mode: 0o660, engine, serverOptions: { 'grpc.max_receive_message_length': 16 * 1024 * 1024 } },
    );
  } catch (err) {
    await instance.close();
    throw err;
  }
  return {
    ...instance,
    socketPath,
    server,
    async close() {
      // End event streams first so a watching client does not hold the graceful shutdown open.
      instance.runtime.events.emit('close');
      await shutdownServer(server, 2000);
      await instance.close();
      fs.rmSync(socketPath, { force: true });
    },
  };
}
