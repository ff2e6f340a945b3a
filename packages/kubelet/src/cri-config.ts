// Translating a Pod into CRI requests, following kuberuntime's generatePodSandboxConfig and
// generateContainerConfig: the same labels, log layout, DNS, port mappings and Linux resources.
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Container, Pod } from '@kemu/core';
import { cri } from '@kemu/proto';
import { resolveWithin, UnsafePathError } from '@kemu/safe-fs';
import { cgroupParentForCRI, type ContainerResourceOptions, containerLinuxResources, podCgroupName } from './cm-qos.js';
import { ContainerConfigError } from './container-config-error.js';
import { type HostDNSConfig, podDNSConfig } from './dns-config.js';
import { type EnvVarValue, expandCommandAndArgs, expandSubPathExpr } from './container-env.js';
import { determineEffectiveSecurityContext } from './security-context.js';
import {
  CONTAINER_HASH_ANNOTATION,
  CONTAINER_KIND_ANNOTATION,
  CONTAINER_NAME_LABEL,
  POD_NAME_LABEL,
  POD_NAMESPACE_LABEL,
  POD_UID_LABEL,
  RESTART_COUNT_ANNOTATION,
  TERMINATION_GRACE_ANNOTATION,
} from './labels.js';

export interface SandboxContext {
  nodeName: string;
  podLogsDir: string;
  clusterDNS: string[];
  clusterDomain: string;
  /** The node's resolv.conf (kubelet's --resolv-conf), parsed; undefined when that flag is "". */
  hostDNS?: HostDNSConfig;
  /** The node's addresses (with no node resolver, each family's loopback serves DNS). */
  nodeIPs?: () => string[];
  /** A warning event about the pod's DNS settings (limits exceeded, no cluster DNS). */
  onDNSWarning?: (pod: Pod, reason: string, message: string) => void;
  /** The sandbox's cgroup_parent (the container manager's pod cgroup); default: cgroupfs naming. */
  cgroupParent?: (pod: Pod) => string;
}

export function podLogDirectory(podLogsDir: string, pod: Pod): string {
  return path.join(podLogsDir, `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`);
}

const PROTOCOLS: Record<string, cri.Protocol> = { TCP: cri.Protocol.TCP, UDP: cri.Protocol.UDP, SCTP: cri.Protocol.SCTP };

export function sandboxConfig(pod: Pod, attempt: number, ctx: SandboxContext): cri.PodSandboxConfig {
  const { metadata, spec } = pod;
  const hostNetwork = spec.hostNetwork === true;
  const portMappings: cri.PortMapping[] = [];
  // Every declared port, as kuberuntime does: a host port of 0 maps nothing (the CNI layer skips it), but
  // tells the runtime what the pod serves.
  for (const c of spec.containers) {
    for (const p of c.ports ?? []) {
      portMappings.push({
        protocol: PROTOCOLS[p.protocol ?? 'TCP'],
        containerPort: p.containerPort,
        hostPort: p.hostPort ?? 0,
        hostIp: p.hostIP ?? '',
      });
    }
  }
  const ns = metadata.namespace ?? 'default';
  const dns = podDNSConfig(pod, { clusterDNS: ctx.clusterDNS, clusterDomain: ctx.clusterDomain, host: ctx.hostDNS, nodeIPs: ctx.nodeIPs?.() });
  for (const w of dns.warnings) ctx.onDNSWarning?.(pod, w.reason, w.message);
  const dnsConfig = dns.config;
  const mode = (host: boolean | undefined, podLevel: cri.NamespaceMode) => (host ? cri.NamespaceMode.NODE : podLevel);
  return {
    metadata: { name: metadata.name, namespace: ns, uid: metadata.uid ?? '', attempt },
    hostname: hostNetwork ? ctx.nodeName : (spec.hostname ?? metadata.name),
    logDirectory: podLogDirectory(ctx.podLogsDir, pod),
    dnsConfig,
    portMappings,
    labels: {
      ...(metadata.labels ?? {}),
      [POD_NAME_LABEL]: metadata.name ?? '',
      [POD_NAMESPACE_LABEL]: ns,
      [POD_UID_LABEL]: metadata.uid ?? '',
    },
    annotations: { ...(metadata.annotations ?? {}) },
    linux: {
      cgroupParent: ctx.cgroupParent ? ctx.cgroupParent(pod) : cgroupParentForCRI(podCgroupName(pod), 'cgroupfs'),
      securityContext: {
        namespaceOptions: {
          network: mode(hostNetwork, cri.NamespaceMode.POD),
          pid: mode(spec.hostPID, spec.shareProcessNamespace ? cri.NamespaceMode.POD : cri.NamespaceMode.CONTAINER),
          ipc: mode(spec.hostIPC, cri.NamespaceMode.POD),
        },
      },
    },
  };
}

/** A stable hash of a container's spec, recorded so a changed spec can be told apart from a restart. */
export function containerHash(container: Container): string {
  return createHash('sha256').update(JSON.stringify(container)).digest('hex').slice(0, 8);
}

/** A container's CRI resources (the formulas live in cm-qos). */
export function linuxResources(container: Container, pod?: Pod, opts?: ContainerResourceOptions): cri.LinuxContainerResources {
  return containerLinuxResources(pod ?? { apiVersion: 'v1', kind: 'Pod', metadata: {}, spec: { containers: [container] } }, container, opts);
}

export interface ContainerContext {
  /** Host paths of the pod's volumes, by volume name. */
  volumePaths: Map<string, string>;
  kind: 'init' | 'regular';
  /** The container's resolved environment (container-env.ts); literal `env` values when absent. */
  env?: EnvVarValue[];
  /** CFS period, quota enforcement and node memory for oom_score_adj, from the kubelet's configuration. */
  resources?: ContainerResourceOptions;
}

export { ContainerConfigError };

/**
 * The host path of a volume mount with a subPath. A container can put a symbolic link into a volume it
 * shares, so the subPath is resolved on the node and must stay inside the volume (what kubelet's subpath
 * package guards against); the resolved path is what gets mounted.
 */
export function subPathHostPath(volumePath: string, subPath: string, volumeName: string): string {
  if (path.isAbsolute(subPath) || subPath.split('/').includes('..')) {
    throw new ContainerConfigError(`subPath ${JSON.stringify(subPath)} of volume ${volumeName} must be a relative path without ".."`);
  }
  try {
    return resolveWithin(path.join(volumePath, subPath), [volumePath], { allowRoot: true, what: `subPath ${JSON.stringify(subPath)} of volume ${volumeName}` }).real;
  } catch (err) {
    if (err instanceof UnsafePathError) throw new ContainerConfigError(err.message);
    throw err;
  }
}

export function containerConfig(pod: Pod, container: Container, attempt: number, ctx: ContainerContext): cri.ContainerConfig {
  const { metadata } = pod;
  const env = ctx.env ?? (container.env ?? []).filter((e) => e.value !== undefined).map((e) => ({ name: e.name, value: e.value! }));
  const { command, args } = expandCommandAndArgs(container, env);
  const mounts: cri.Mount[] = [];
  for (const m of container.volumeMounts ?? []) {
    const hostPath = ctx.volumePaths.get(m.name);
    if (!hostPath) continue;
    const subPath = m.subPathExpr ? expandSubPathExpr(m.subPathExpr, env) : m.subPath;
    mounts.push({
      containerPath: m.mountPath,
      hostPath: subPath ? subPathHostPath(hostPath, subPath, m.name) : hostPath,
      readonly: m.readOnly ?? false,
      propagation:
        m.mountPropagation === 'Bidirectional'
          ? cri.MountPropagation.PROPAGATION_BIDIRECTIONAL
          : m.mountPropagation === 'HostToContainer'
            ? cri.MountPropagation.PROPAGATION_HOST_TO_CONTAINER
            : cri.MountPropagation.PROPAGATION_PRIVATE,
    });
  }
  const sc = determineEffectiveSecurityContext(pod, container);
  return {
    metadata: { name: container.name, attempt },
    image: { image: container.image ?? '' },
    command,
    args,
    workingDir: container.workingDir ?? '',
    envs: env.map((e) => ({ key: e.name, value: e.value })),
    mounts,
    labels: {
      [CONTAINER_NAME_LABEL]: container.name,
      [POD_NAME_LABEL]: metadata.name ?? '',
      [POD_NAMESPACE_LABEL]: metadata.namespace ?? 'default',
      [POD_UID_LABEL]: metadata.uid ?? '',
    },
    annotations: {
      [CONTAINER_HASH_ANNOTATION]: containerHash(container),
      [RESTART_COUNT_ANNOTATION]: String(attempt),
      [TERMINATION_GRACE_ANNOTATION]: String(pod.spec.terminationGracePeriodSeconds ?? 30),
      [CONTAINER_KIND_ANNOTATION]: ctx.kind === 'init' ? 'init' : 'regular',
    },
    logPath: `${container.name}/${attempt}.log`,
    stdin: container.stdin ?? false,
    tty: container.tty ?? false,
    linux: {
      resources: linuxResources(container, pod, ctx.resources),
      securityContext: {
        privileged: sc?.privileged ?? false,
        readonlyRootfs: sc?.readOnlyRootFilesystem ?? false,
        runAsUser: sc?.runAsUser !== undefined ? { value: sc.runAsUser } : null,
        runAsGroup: sc?.runAsGroup !== undefined ? { value: sc.runAsGroup } : null,
        supplementalGroups: sc.supplementalGroups,
        capabilities: sc?.capabilities ? { addCapabilities: sc.capabilities.add ?? [], dropCapabilities: sc.capabilities.drop ?? [] } : null,
        namespaceOptions: {
          network: pod.spec.hostNetwork ? cri.NamespaceMode.NODE : cri.NamespaceMode.POD,
          pid: pod.spec.hostPID ? cri.NamespaceMode.NODE : pod.spec.shareProcessNamespace ? cri.NamespaceMode.POD : cri.NamespaceMode.CONTAINER,
          ipc: pod.spec.hostIPC ? cri.NamespaceMode.NODE : cri.NamespaceMode.POD,
        },
      },
    },
  };
}
