// Pod sandbox RPCs: RunPodSandbox, StopPodSandbox, RemovePodSandbox, PodSandboxStatus, ListPodSandbox.
import * as grpc from '@grpc/grpc-js';
import { cri } from '@kemu/proto';
import { toPodSandbox, toPodSandboxStatus } from './convert.js';
import { errorMessage, failedPrecondition, invalidArgument, isRpcError, RpcError } from './errors.js';
import { newId } from './ids.js';
import { matchesLabels } from './labels.js';
import { checkSandboxMetadata, sandboxName } from './names.js';
import { checkMap, checkText } from './request-checks.js';
import { removeContainerLocked, stopContainerLocked } from './runtime-container.js';
import type { RuntimeContext } from './runtime-context.js';
import { nowNs } from './time.js';
import type { SandboxRecord } from './types.js';

/** The checked config, and the log root its log directory lies under (links followed). */
function checkSandboxConfig(ctx: RuntimeContext, config: cri.PodSandboxConfig | null | undefined, handler: string): { config: cri.PodSandboxConfig; logRoot?: string } {
  if (!config) throw invalidArgument('sandbox config must not be empty');
  const m = config.metadata;
  if (!m) throw invalidArgument('sandbox config must include metadata');
  checkSandboxMetadata(m);
  checkText(config.hostname, 'hostname', false);
  checkMap(config.labels, 'label');
  checkMap(config.annotations, 'annotation');
  if (!ctx.handlers.has(handler)) {
    throw invalidArgument(`no runtime for ${JSON.stringify(handler)} is configured (known: ${[...ctx.handlers].map((h) => JSON.stringify(h)).join(', ')})`);
  }
  const logRoot = config.logDirectory ? ctx.logRootOf(config.logDirectory, 'log directory') : undefined;
  for (const pm of config.portMappings ?? []) {
    const cp = pm.containerPort ?? 0;
    const hp = pm.hostPort ?? 0;
    if (cp < 1 || cp > 65535) throw invalidArgument(`port mapping container port ${cp} is out of range 1-65535`);
    if (hp < 0 || hp > 65535) throw invalidArgument(`port mapping host port ${hp} is out of range 0-65535`);
  }
  return { config, logRoot };
}

export async function runPodSandbox(ctx: RuntimeContext, req: cri.RunPodSandboxRequest): Promise<cri.RunPodSandboxResponse> {
  const handler = req.runtimeHandler ?? '';
  const { config, logRoot } = checkSandboxConfig(ctx, req.config, handler);
  const name = sandboxName(config.metadata!);
  const id = newId();
  ctx.sandboxNames.reserve(name, id);
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
    ...(logRoot ? { logRoot } : {}),
    backend: {},
  };
  let created = false;
  let networkTried = false;
  try {
    if (!hostNetwork) {
      const net = ctx.network.status();
      if (!net.ready) throw failedPrecondition(`failed to setup network for sandbox ${JSON.stringify(id)}: ${net.message}`);
    }
    created = true;
    await ctx.backend.createSandbox(sb);
    if (!hostNetwork) {
      networkTried = true;
      try {
        const result = await ctx.network.setUp(ctx.netRequest(sb));
        sb.ips = result.ips;
      } catch (err) {
        if (isRpcError(err)) throw err;
        throw new RpcError(grpc.status.UNKNOWN, `failed to setup network for sandbox ${JSON.stringify(id)}: ${errorMessage(err)}`);
      }
      sb.networkReady = true;
    }
    sb.state = 'ready';
    ctx.sandboxes.set(id, sb);
    ctx.sandboxIds.add(id);
    await ctx.saveSandbox(sb);
    return { podSandboxId: id };
  } catch (err) {
    // Roll back everything so a failed RunPodSandbox leaves no namespace, IP or name behind.
    ctx.sandboxes.delete(id);
    ctx.sandboxIds.delete(id);
    if (networkTried) await ctx.network.tearDown(ctx.netRequest(sb)).catch(() => {});
    if (created) {
      await ctx.backend.stopSandbox(sb).catch(() => {});
      await ctx.backend.removeSandbox(sb).catch(() => {});
    }
    await ctx.state.remove('sandboxes', id).catch(() => {});
    ctx.sandboxNames.release(name, id);
    throw err;
  }
}

export async function stopPodSandbox(ctx: RuntimeContext, req: cri.StopPodSandboxRequest): Promise<cri.StopPodSandboxResponse> {
  const sb = ctx.findSandbox(req.podSandboxId);
  if (!sb) return {};
  await ctx.lock.run(sb.id, () => stopSandboxLocked(ctx, sb));
  return {};
}

async function stopSandboxLocked(ctx: RuntimeContext, sb: SandboxRecord): Promise<void> {
  for (const c of ctx.containersOf(sb.id)) {
    if (c.state === 'running') await ctx.lock.run(c.id, () => stopContainerLocked(ctx, c, 0));
  }
  if (sb.networkReady) {
    try {
      await ctx.network.tearDown(ctx.netRequest(sb));
    } catch (err) {
      throw new RpcError(grpc.status.UNKNOWN, `failed to destroy network for sandbox ${JSON.stringify(sb.id)}: ${errorMessage(err)}`);
    }
    sb.networkReady = false;
  }
  await ctx.backend.stopSandbox(sb);
  sb.state = 'notready';
  await ctx.saveSandbox(sb);
}

export async function removePodSandbox(ctx: RuntimeContext, req: cri.RemovePodSandboxRequest): Promise<cri.RemovePodSandboxResponse> {
  const sb = ctx.findSandbox(req.podSandboxId);
  if (!sb) return {};
  await ctx.lock.run(sb.id, async () => {
    if (!ctx.sandboxes.has(sb.id)) return;
    if (sb.state === 'ready' || sb.networkReady) await stopSandboxLocked(ctx, sb);
    for (const c of ctx.containersOf(sb.id)) await ctx.lock.run(c.id, () => removeContainerLocked(ctx, c));
    await ctx.backend.removeSandbox(sb);
    ctx.sandboxes.delete(sb.id);
    ctx.sandboxIds.delete(sb.id);
    ctx.sandboxNames.release(sb.name, sb.id);
    await ctx.state.remove('sandboxes', sb.id);
  });
  return {};
}

export function podSandboxStatus(ctx: RuntimeContext, req: cri.PodSandboxStatusRequest): cri.PodSandboxStatusResponse {
  const sb = ctx.getSandbox(req.podSandboxId);
  const res: cri.PodSandboxStatusResponse = {
    status: toPodSandboxStatus(sb),
    info: {},
    // What kubelet's evented PLEG reads, so one call gives the pod and its containers.
    containersStatuses: ctx.containersOf(sb.id).map((c) => ctx.containerStatusOf(c)),
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
        backend: ctx.backend.name,
        config: sb.config,
      }),
    };
  }
  return res;
}

export function listPodSandbox(ctx: RuntimeContext, req: cri.ListPodSandboxRequest): cri.ListPodSandboxResponse {
  const f = req.filter;
  let items: SandboxRecord[];
  if (f?.id) {
    let full: string | undefined;
    try {
      full = ctx.sandboxIds.resolve(f.id);
    } catch {
      full = undefined;
    }
    const sb = full ? ctx.sandboxes.get(full) : undefined;
    items = sb ? [sb] : [];
  } else {
    items = ctx.sandboxes.matching(f?.labelSelector);
  }
  if (f?.state) items = items.filter((s) => (s.state === 'ready' ? 0 : 1) === f.state!.state);
  if (f?.labelSelector) items = items.filter((s) => matchesLabels(s.config.labels, f.labelSelector));
  return { items: items.map(toPodSandbox) };
}
