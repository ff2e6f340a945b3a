// The runtime core's public face: one method per CRI RPC, each handed to the file of its RPC group (the way
// containerd's CRI server is laid out). Transport-agnostic: the gRPC services and in-process callers both
// drive this class.
import type { EventEmitter } from 'node:events';
import type { cri } from '@kemu/proto';
import type { ImageStore } from './image-store.js';
import * as container from './runtime-container.js';
import { type CriRuntimeOptions, RuntimeContext, type StreamingRegistry } from './runtime-context.js';
import * as image from './runtime-image.js';
import * as info from './runtime-info.js';
import { recover } from './runtime-restart.js';
import * as sandbox from './runtime-sandbox.js';
import * as stats from './runtime-stats.js';
import * as streaming from './runtime-streaming.js';
import type { Backend, ContainerRecord, ExecOptions, NetworkManager, SandboxRecord, StreamSession } from './types.js';

export { CRI_API_VERSION, RUNTIME_NAME, RUNTIME_VERSION } from './runtime-info.js';
export type { CriRuntimeOptions, StreamingRegistry, StreamRequest } from './runtime-context.js';

export class CriRuntime {
  private readonly ctx: RuntimeContext;
  readonly events: EventEmitter;
  readonly backend: Backend;
  readonly network: NetworkManager;
  readonly images: ImageStore;

  constructor(opts: CriRuntimeOptions) {
    this.ctx = new RuntimeContext(opts);
    this.events = this.ctx.events;
    this.backend = opts.backend;
    this.network = opts.network;
    this.images = opts.images;
    this.backend.setHost({
      containerExited: (id, exit) => container.onContainerExit(this.ctx, id, exit),
      log: () => {},
    });
  }

  setStreaming(registry: StreamingRegistry): void {
    this.ctx.streaming = registry;
  }

  /** Loads every persisted record and lets the backend and network re-attach (the containerd restart path). */
  recover(): Promise<{ sandboxes: number; containers: number }> {
    return recover(this.ctx);
  }

  getSandboxRecord(id: string): SandboxRecord {
    return this.ctx.getSandbox(id);
  }

  getContainerRecord(id: string): ContainerRecord {
    return this.ctx.getContainer(id);
  }

  // runtime info
  version(req: cri.VersionRequest) { return info.version(req); }
  status(req: cri.StatusRequest) { return info.status(this.ctx, req); }
  runtimeConfig() { return info.runtimeConfig(); }
  updateRuntimeConfig(req: cri.UpdateRuntimeConfigRequest) { return info.updateRuntimeConfig(this.ctx, req); }

  // sandboxes
  runPodSandbox(req: cri.RunPodSandboxRequest) { return sandbox.runPodSandbox(this.ctx, req); }
  stopPodSandbox(req: cri.StopPodSandboxRequest) { return sandbox.stopPodSandbox(this.ctx, req); }
  removePodSandbox(req: cri.RemovePodSandboxRequest) { return sandbox.removePodSandbox(this.ctx, req); }
  podSandboxStatus(req: cri.PodSandboxStatusRequest) { return sandbox.podSandboxStatus(this.ctx, req); }
  listPodSandbox(req: cri.ListPodSandboxRequest) { return sandbox.listPodSandbox(this.ctx, req); }

  // containers
  createContainer(req: cri.CreateContainerRequest) { return container.createContainer(this.ctx, req); }
  startContainer(req: cri.StartContainerRequest) { return container.startContainer(this.ctx, req); }
  stopContainer(req: cri.StopContainerRequest) { return container.stopContainer(this.ctx, req); }
  removeContainer(req: cri.RemoveContainerRequest) { return container.removeContainer(this.ctx, req); }
  listContainers(req: cri.ListContainersRequest) { return container.listContainers(this.ctx, req); }
  containerStatus(req: cri.ContainerStatusRequest) { return container.containerStatus(this.ctx, req); }
  updateContainerResources(req: cri.UpdateContainerResourcesRequest) { return container.updateContainerResources(this.ctx, req); }
  reopenContainerLog(req: cri.ReopenContainerLogRequest) { return container.reopenContainerLog(this.ctx, req); }

  // exec and streaming
  execSync(req: cri.ExecSyncRequest) { return streaming.execSync(this.ctx, req); }
  exec(req: cri.ExecRequest) { return streaming.exec(this.ctx, req); }
  attach(req: cri.AttachRequest) { return streaming.attach(this.ctx, req); }
  portForward(req: cri.PortForwardRequest) { return streaming.portForward(this.ctx, req); }
  /** Used by the streaming server once a client connects with a valid token. */
  openExec(containerId: string, cmd: string[], opts: ExecOptions): StreamSession { return streaming.openExec(this.ctx, containerId, cmd, opts); }
  openAttach(containerId: string, opts: ExecOptions): StreamSession { return streaming.openAttach(this.ctx, containerId, opts); }
  openPortForward(sandboxId: string, port: number) { return streaming.openPortForward(this.ctx, sandboxId, port); }

  // stats and metrics
  containerStats(req: cri.ContainerStatsRequest) { return stats.containerStats(this.ctx, req); }
  listContainerStats(req: cri.ListContainerStatsRequest) { return stats.listContainerStats(this.ctx, req); }
  podSandboxStats(req: cri.PodSandboxStatsRequest) { return stats.podSandboxStats(this.ctx, req); }
  listPodSandboxStats(req: cri.ListPodSandboxStatsRequest) { return stats.listPodSandboxStats(this.ctx, req); }
  listMetricDescriptors() { return stats.listMetricDescriptors(); }
  listPodSandboxMetrics() { return stats.listPodSandboxMetrics(this.ctx); }

  // images
  listImages(req: cri.ListImagesRequest) { return image.listImages(this.ctx, req); }
  imageStatus(req: cri.ImageStatusRequest) { return image.imageStatus(this.ctx, req); }
  pullImage(req: cri.PullImageRequest) { return image.pullImage(this.ctx, req); }
  removeImage(req: cri.RemoveImageRequest) { return image.removeImage(this.ctx, req); }
  imageFsInfo() { return image.imageFsInfo(this.ctx); }

  async close(): Promise<void> {
    await this.backend.close();
    await this.network.close?.();
    await this.ctx.state.close?.();
  }
}
