// Records -> CRI messages. Kept apart from the runtime so the mapping is easy to audit against the spec.
import { cri } from '@kemu/proto';
import type { ContainerRecord, ImageRecord, SandboxRecord } from './types.js';

export const containerStateEnum: Record<ContainerRecord['state'], cri.ContainerState> = {
  created: cri.ContainerState.CONTAINER_CREATED,
  running: cri.ContainerState.CONTAINER_RUNNING,
  exited: cri.ContainerState.CONTAINER_EXITED,
  unknown: cri.ContainerState.CONTAINER_UNKNOWN,
};

export function sandboxStateEnum(sb: SandboxRecord): cri.PodSandboxState {
  return sb.state === 'ready' ? cri.PodSandboxState.SANDBOX_READY : cri.PodSandboxState.SANDBOX_NOTREADY;
}

export function toPodSandbox(sb: SandboxRecord): cri.PodSandbox {
  return {
    id: sb.id,
    metadata: sb.config.metadata,
    state: sandboxStateEnum(sb),
    createdAt: sb.createdAt,
    labels: sb.config.labels ?? {},
    annotations: sb.config.annotations ?? {},
    runtimeHandler: sb.runtimeHandler,
  };
}

export function namespaceOptions(sb: SandboxRecord): cri.NamespaceOption {
  const o = sb.config.linux?.securityContext?.namespaceOptions;
  return {
    network: o?.network ?? cri.NamespaceMode.POD,
    pid: o?.pid ?? cri.NamespaceMode.POD,
    ipc: o?.ipc ?? cri.NamespaceMode.POD,
    targetId: o?.targetId ?? '',
  };
}

export function toPodSandboxStatus(sb: SandboxRecord): cri.PodSandboxStatus {
  const [ip, ...rest] = sb.state === 'ready' ? sb.ips : [];
  return {
    id: sb.id,
    metadata: sb.config.metadata,
    state: sandboxStateEnum(sb),
    createdAt: sb.createdAt,
    network: { ip: ip ?? '', additionalIps: rest.map((i) => ({ ip: i })) },
    linux: { namespaces: { options: namespaceOptions(sb) } },
    labels: sb.config.labels ?? {},
    annotations: sb.config.annotations ?? {},
    runtimeHandler: sb.runtimeHandler,
  };
}

export function toContainer(c: ContainerRecord): cri.Container {
  return {
    id: c.id,
    podSandboxId: c.sandboxId,
    metadata: c.config.metadata,
    image: { ...(c.config.image ?? {}), image: c.config.image?.image ?? '' },
    imageRef: c.imageRef,
    imageId: c.imageId,
    state: containerStateEnum[c.state],
    createdAt: c.createdAt,
    labels: c.config.labels ?? {},
    annotations: c.config.annotations ?? {},
  };
}

export function toContainerStatus(c: ContainerRecord, image?: ImageRecord): cri.ContainerStatus {
  const sc = c.config.linux?.securityContext;
  const uid = sc?.runAsUser?.value ?? image?.uid ?? 0;
  const gid = sc?.runAsGroup?.value ?? 0;
  return {
    id: c.id,
    metadata: c.config.metadata,
    state: containerStateEnum[c.state],
    createdAt: c.createdAt,
    startedAt: c.startedAt,
    finishedAt: c.finishedAt,
    exitCode: c.exitCode,
    image: { ...(c.config.image ?? {}), image: c.config.image?.image ?? '' },
    imageRef: c.imageRef,
    imageId: c.imageId,
    reason: c.reason,
    message: c.message,
    labels: c.config.labels ?? {},
    annotations: c.config.annotations ?? {},
    mounts: c.config.mounts ?? [],
    logPath: c.logPath,
    resources: { linux: c.resources },
    user: { linux: { uid, gid, supplementalGroups: sc?.supplementalGroups ?? [] } },
  };
}

export function toImage(img: ImageRecord): cri.Image {
  return {
    id: img.id,
    repoTags: img.repoTags,
    repoDigests: img.repoDigests,
    size: img.size,
    uid: img.uid === undefined ? null : { value: img.uid },
    username: img.username,
    spec: { image: img.id, annotations: {} },
    pinned: false,
  };
}
