// Container RPCs: CreateContainer, StartContainer, StopContainer, RemoveContainer, ListContainers,
// ContainerStatus, UpdateContainerResources, ReopenContainerLog, and the exit a backend reports.
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { cri } from '@kemu/proto';
import { isWithin, UnsafePathError } from '@kemu/safe-fs';
import { containerStateEnum, toContainer } from './convert.js';
import { errorMessage, failedPrecondition, invalidArgument, isRpcError, notFound, RpcError } from './errors.js';
import { newId } from './ids.js';
import { createLogFileAsync } from './log-writer.js';
import { checkContainerMetadata, containerName } from './names.js';
import { checkMap } from './request-checks.js';
import type { RuntimeContext } from './runtime-context.js';
import { nowNs } from './time.js';
import type { ContainerRecord, ExitInfo } from './types.js';

export async function createContainer(ctx: RuntimeContext, req: cri.CreateContainerRequest): Promise<cri.CreateContainerResponse> {
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
  const sb = ctx.getSandbox(req.podSandboxId);
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
    // Inside the sandbox's log directory, so under the root RunPodSandbox resolved it to; links on the way
    // are refused when StartContainer creates the file within that root.
    logRoot = sb.logRoot ?? ctx.logRootOf(joined, 'container log path');
    logPath = joined;
  }
  const image = ctx.images.resolve(config.image.image);
  if (!image) throw notFound(`failed to resolve image ${JSON.stringify(config.image.image)}: not found; pull it first`);
  const name = containerName(config.metadata, sb.config.metadata!);
  const id = newId();
  ctx.containerNames.reserve(name, id);
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
    await ctx.lock.run(sb.id, async () => {
      if (sb.state !== 'ready') throw failedPrecondition(`sandbox ${JSON.stringify(sb.id)} is not ready`);
      await ctx.backend.createContainer(sb, c, image);
      ctx.containers.set(id, c);
      ctx.containerIds.add(id);
      await ctx.saveContainer(c);
    });
  } catch (err) {
    ctx.containers.delete(id);
    ctx.containerIds.delete(id);
    await ctx.backend.removeContainer(c).catch(() => {});
    await ctx.state.remove('containers', id).catch(() => {});
    ctx.containerNames.release(name, id);
    throw err;
  }
  ctx.emit(c, cri.ContainerEventType.CONTAINER_CREATED_EVENT);
  return { containerId: id };
}

export async function startContainer(ctx: RuntimeContext, req: cri.StartContainerRequest): Promise<cri.StartContainerResponse> {
  const c = ctx.getContainer(req.containerId);
  await ctx.lock.run(c.id, async () => {
    if (c.state !== 'created') {
      throw failedPrecondition(`container ${JSON.stringify(c.id)} is in ${cri.ContainerState[containerStateEnum[c.state]]} state; only a CONTAINER_CREATED container can be started`);
    }
    const sb = ctx.getSandbox(c.sandboxId);
    if (sb.state !== 'ready') throw failedPrecondition(`sandbox ${JSON.stringify(sb.id)} of container ${c.id} is not ready`);
    try {
      // Like containerd, the log file exists once StartContainer returns: kubelet reads it right away.
      if (c.logPath) await createLogFile(c);
      await ctx.backend.startContainer(sb, c);
    } catch (err) {
      // Like containerd: the container ends up exited with the start error recorded in its status.
      c.state = 'exited';
      c.exitCode = 128;
      c.reason = 'StartError';
      c.message = errorMessage(err);
      c.finishedAt = nowNs();
      await ctx.saveContainer(c);
      ctx.emit(c, cri.ContainerEventType.CONTAINER_STOPPED_EVENT);
      if (isRpcError(err)) throw err;
      throw new RpcError(grpc.status.UNKNOWN, `failed to start container ${JSON.stringify(c.id)}: ${errorMessage(err)}`);
    }
    if (c.state === 'created') {
      c.state = 'running';
      c.startedAt = c.startedAt || nowNs();
    }
    await ctx.saveContainer(c);
  });
  ctx.emit(c, cri.ContainerEventType.CONTAINER_STARTED_EVENT);
  return {};
}

async function createLogFile(c: ContainerRecord): Promise<void> {
  try {
    // One of these per StartContainer: off the event loop (a synchronous mkdir/open on a disk stalls every RPC in flight).
    await createLogFileAsync(c.logPath, c.logRoot);
  } catch (err) {
    if (err instanceof UnsafePathError) throw invalidArgument(`failed to create container log: ${err.message}`);
    throw err;
  }
}

export function onContainerExit(ctx: RuntimeContext, id: string, info: ExitInfo): void {
  const c = ctx.containers.get(id);
  if (!c || c.state === 'exited') return;
  c.state = 'exited';
  c.exitCode = info.exitCode;
  c.reason = info.reason;
  c.message = info.message ?? '';
  c.finishedAt = info.finishedAt ?? nowNs();
  if (!c.startedAt) c.startedAt = c.finishedAt;
  void ctx.saveContainer(c).catch(() => {});
  ctx.emit(c, cri.ContainerEventType.CONTAINER_STOPPED_EVENT);
}

export async function stopContainer(ctx: RuntimeContext, req: cri.StopContainerRequest): Promise<cri.StopContainerResponse> {
  const timeout = req.timeout ?? 0;
  if (timeout < 0) throw invalidArgument(`timeout ${timeout} must not be negative`);
  const c = ctx.findContainer(req.containerId);
  if (!c) return {};
  await ctx.lock.run(c.id, () => stopContainerLocked(ctx, c, timeout));
  return {};
}

export async function stopContainerLocked(ctx: RuntimeContext, c: ContainerRecord, timeoutSec: number): Promise<void> {
  if (c.state === 'running') await ctx.backend.stopContainer(c, timeoutSec);
  if (c.state === 'running') onContainerExit(ctx, c.id, { exitCode: 137, reason: 'Error' });
  await ctx.saveContainer(c);
}

export async function removeContainer(ctx: RuntimeContext, req: cri.RemoveContainerRequest): Promise<cri.RemoveContainerResponse> {
  const c = ctx.findContainer(req.containerId);
  if (!c) return {};
  await ctx.lock.run(c.id, () => removeContainerLocked(ctx, c));
  return {};
}

export async function removeContainerLocked(ctx: RuntimeContext, c: ContainerRecord): Promise<void> {
  if (!ctx.containers.has(c.id)) return;
  if (c.state === 'running') await stopContainerLocked(ctx, c, 0);
  await ctx.backend.removeContainer(c);
  ctx.containers.delete(c.id);
  ctx.containerIds.delete(c.id);
  ctx.containerNames.release(c.name, c.id);
  await ctx.state.remove('containers', c.id);
  ctx.emit(c, cri.ContainerEventType.CONTAINER_DELETED_EVENT);
}

export function listContainers(ctx: RuntimeContext, req: cri.ListContainersRequest): cri.ListContainersResponse {
  return { containers: ctx.filterContainers(req.filter).map(toContainer) };
}

export function containerStatus(ctx: RuntimeContext, req: cri.ContainerStatusRequest): cri.ContainerStatusResponse {
  const c = ctx.getContainer(req.containerId);
  const res: cri.ContainerStatusResponse = { status: ctx.containerStatusOf(c), info: {} };
  if (req.verbose) {
    const sb = ctx.sandboxes.get(c.sandboxId);
    res.info = {
      info: JSON.stringify({
        sandboxID: c.sandboxId,
        pid: c.backend.pid ?? 0,
        backend: ctx.backend.name,
        netNamespacePath: sb?.netnsPath ?? '',
        config: c.config,
        runtimeSpec: { process: c.backend.process ?? null, root: c.backend.rootfs ?? null },
        cgroup: c.backend.cgroupFiles ?? null,
      }),
    };
  }
  return res;
}

export async function updateContainerResources(ctx: RuntimeContext, req: cri.UpdateContainerResourcesRequest): Promise<cri.UpdateContainerResourcesResponse> {
  const c = ctx.getContainer(req.containerId);
  const r = req.linux ?? {};
  for (const [k, v] of Object.entries(r)) {
    if (typeof v === 'number' && v < 0 && k !== 'oomScoreAdj' && k !== 'cpuQuota' && k !== 'memorySwapLimitInBytes') {
      throw invalidArgument(`resource ${k} must not be negative (got ${v})`);
    }
  }
  await ctx.lock.run(c.id, async () => {
    if (c.state !== 'created' && c.state !== 'running') {
      throw failedPrecondition(`container ${JSON.stringify(c.id)} is in ${cri.ContainerState[containerStateEnum[c.state]]} state; resources can only be updated while created or running`);
    }
    const previous = c.resources;
    c.resources = { ...previous, ...r };
    try {
      await ctx.backend.updateResources(c);
    } catch (err) {
      c.resources = previous;
      throw err;
    }
    await ctx.saveContainer(c);
  });
  return {};
}

export async function reopenContainerLog(ctx: RuntimeContext, req: cri.ReopenContainerLogRequest): Promise<cri.ReopenContainerLogResponse> {
  const c = ctx.getContainer(req.containerId);
  if (c.state !== 'running') throw failedPrecondition(`container ${JSON.stringify(c.id)} is not running`);
  await ctx.backend.reopenLog(c);
  return {};
}
