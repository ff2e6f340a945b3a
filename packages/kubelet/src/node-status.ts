// Node registration and heartbeats: the Node object with capacity/allocatable/labels/podCIDR, its
// conditions (Ready reflects the runtime's RuntimeReady/NetworkReady as upstream reports them), and the
// node Lease in kube-node-lease renewed every leaseRenewMs.
import os from 'node:os';
import {
  type Condition,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isNotFound,
  type Lease,
  microTime,
  type Node,
  type NodeStatus,
  parseQuantity,
  Quantity,
  rfc3339,
  type Store,
} from '@kemu/core';
import type { cri } from '@kemu/proto';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
export const CONTROLLER_MANAGED_ATTACH_DETACH = 'volumes.kubernetes.io/controller-managed-attach-detach';
export const KUBELET_VERSION = 'v1.34.0-kemu';

export interface NodeIdentity {
  nodeName: string;
  nodeIP: string;
  podCIDR?: string;
  labels: Record<string, string>;
  capacity: Record<string, string>;
  reserved: Record<string, string>;
  taints: NonNullable<Node['spec']>['taints'];
}

export const DEFAULT_CAPACITY: Record<string, string> = {
  cpu: '8',
  memory: '32Gi',
  pods: '110',
  'ephemeral-storage': '100Gi',
};

export function allocatable(capacity: Record<string, string>, reserved: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(capacity)) {
    const r = reserved[k];
    if (!r) {
      out[k] = v;
      continue;
    }
    const left = parseQuantity(v).milliValue() - parseQuantity(r).milliValue();
    out[k] = Quantity.fromMilli(Math.max(0, left)).toString();
  }
  return out;
}

function arch(): string {
  return process.arch === 'x64' ? 'amd64' : process.arch;
}

export function baseLabels(nodeName: string): Record<string, string> {
  return {
    'kubernetes.io/hostname': nodeName,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': arch(),
    'beta.kubernetes.io/os': 'linux',
    'beta.kubernetes.io/arch': arch(),
  };
}

/** Node conditions from the runtime's Status, in the wording the kubelet uses. */
export function nodeConditions(
  prev: Condition[] | undefined,
  runtime: cri.RuntimeStatus | null | undefined,
  now: string,
  pressure: Partial<Record<'MemoryPressure' | 'DiskPressure' | 'PIDPressure', boolean>> = {},
): Condition[] {
  const keep = (type: string, status: Condition['status'], reason: string, message: string): Condition => {
    const old = prev?.find((c) => c.type === type);
    return {
      type,
      status,
      reason,
      message,
      lastHeartbeatTime: now,
      lastTransitionTime: old && old.status === status ? (old.lastTransitionTime ?? now) : now,
    };
  };
  const problems: string[] = [];
  for (const t of ['RuntimeReady', 'NetworkReady']) {
    const c = runtime?.conditions?.find((x) => x.type === t);
    if (!c?.status) {
      const label = t === 'RuntimeReady' ? 'container runtime status check may not have completed yet' : 'container runtime network not ready';
      problems.push(`${label}: ${t}=false reason:${c?.reason ?? ''} message:${c?.message ?? ''}`);
    }
  }
  return [
    pressure.MemoryPressure
      ? keep('MemoryPressure', 'True', 'KubeletHasInsufficientMemory', 'kubelet has insufficient memory available')
      : keep('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
    pressure.DiskPressure
      ? keep('DiskPressure', 'True', 'KubeletHasDiskPressure', 'kubelet has disk pressure')
      : keep('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
    pressure.PIDPressure
      ? keep('PIDPressure', 'True', 'KubeletHasInsufficientPID', 'kubelet has insufficient PID available')
      : keep('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
    problems.length
      ? keep('Ready', 'False', 'KubeletNotReady', problems.join(', '))
      : keep('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
  ];
}

export class NodeStatusManager {
  private lastPosted = '';
  private lastPostAt = 0;
  /** The Lease as this kubelet last wrote it (the store's read-only copy). */
  private lease?: Lease;

  constructor(
    private readonly store: Store,
    private readonly id: NodeIdentity,
    private readonly leaseDurationSeconds: number,
  ) {}

  /** Creates the Node if absent (or adopts the existing one), and the kube-node-lease namespace. */
  async register(runtimeVersion: cri.VersionResponse, annotations: Record<string, string> = {}): Promise<Node> {
    const { nodeName, podCIDR } = this.id;
    const node: Node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: nodeName,
        labels: { ...baseLabels(nodeName), ...this.id.labels },
        // As the kubelet does with enableControllerAttachDetach (the default): attach/detach is the
        // controller's job for this node.
        annotations: { [CONTROLLER_MANAGED_ATTACH_DETACH]: 'true', ...annotations },
      },
      spec: { ...(podCIDR ? { podCIDR, podCIDRs: [podCIDR] } : {}), ...(this.id.taints?.length ? { taints: this.id.taints } : {}) },
    };
    let stored: Node;
    try {
      stored = await this.store.create(node);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const cur = await this.store.get('Node', '', nodeName);
      stored = await this.store.update({
        ...cur,
        metadata: {
          ...cur.metadata,
          labels: { ...(cur.metadata.labels ?? {}), ...node.metadata.labels },
          annotations: { ...(cur.metadata.annotations ?? {}), ...node.metadata.annotations },
        },
        spec: { ...(cur.spec ?? {}), ...node.spec },
      });
    }
    try {
      await this.store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NODE_LEASE_NAMESPACE } });
    } catch (err) {
      // A kubelet running as system:node:<name> may not create namespaces: the API server makes this one.
      if (!isAlreadyExists(err) && !isForbidden(err)) throw err;
    }
    this.runtimeVersion = `${runtimeVersion.runtimeName}://${runtimeVersion.runtimeVersion}`;
    return stored;
  }

  private runtimeVersion = '';

  /** Posts node status when it changed, or at least every `reportEveryMs` as a heartbeat. */
  async post(
    runtime: cri.RuntimeStatus | null | undefined,
    extra: Partial<NodeStatus>,
    reportEveryMs: number,
    pressure: Partial<Record<'MemoryPressure' | 'DiskPressure' | 'PIDPressure', boolean>> = {},
  ): Promise<void> {
    const cur = await this.store.get('Node', '', this.id.nodeName);
    const now = rfc3339();
    const status: NodeStatus = {
      ...(cur.status ?? {}),
      capacity: this.id.capacity,
      allocatable: allocatable(this.id.capacity, this.id.reserved),
      conditions: nodeConditions(cur.status?.conditions, runtime, now, pressure),
      addresses: [
        { type: 'InternalIP', address: this.id.nodeIP },
        { type: 'Hostname', address: this.id.nodeName },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: this.id.nodeName,
        systemUUID: this.id.nodeName,
        bootID: this.id.nodeName,
        kernelVersion: os.release(),
        osImage: 'kemu emulated node',
        containerRuntimeVersion: this.runtimeVersion,
        kubeletVersion: KUBELET_VERSION,
        kubeProxyVersion: '',
        operatingSystem: 'linux',
        architecture: arch(),
      },
      ...extra,
    };
    // Compare without heartbeat timestamps: post on change, or when the report period has passed.
    const fingerprint = JSON.stringify({ ...status, conditions: status.conditions?.map(({ lastHeartbeatTime: _h, ...c }) => c) });
    if (fingerprint === this.lastPosted && Date.now() - this.lastPostAt < reportEveryMs) return;
    const { resourceVersion: _rv, ...metadata } = cur.metadata;
    await this.store.updateStatus({ ...cur, metadata, status });
    this.lastPosted = fingerprint;
    this.lastPostAt = Date.now();
  }

  /**
   * Creates or renews the node's Lease. A renewal starts from the Lease this kubelet last wrote, with no
   * read, as upstream's lease controller does; when that copy is stale (someone else wrote the Lease, or it
   * is gone) the renewal reads it afresh in the same call.
   */
  async renewLease(): Promise<void> {
    const now = microTime();
    const last = this.lease;
    this.lease = undefined;
    if (last) {
      try {
        this.lease = await this.store.update(this.renewed(last, now), { readOnlyResult: true });
        return;
      } catch (err) {
        if (!isConflict(err) && !isNotFound(err)) throw err;
      }
    }
    const { nodeName } = this.id;
    try {
      const cur = await this.store.get('Lease', NODE_LEASE_NAMESPACE, nodeName);
      this.lease = await this.store.update(this.renewed(cur, now), { readOnlyResult: true });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      const lease: Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: {
          name: nodeName,
          namespace: NODE_LEASE_NAMESPACE,
          ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: (await this.store.get('Node', '', nodeName)).metadata.uid ?? '' }],
        },
        spec: { holderIdentity: nodeName, leaseDurationSeconds: this.leaseDurationSeconds, acquireTime: now, renewTime: now },
      };
      this.lease = await this.store.create(lease, { readOnlyResult: true });
    }
  }

  private renewed(lease: Lease, now: string): Lease {
    return { ...lease, spec: { ...(lease.spec ?? {}), holderIdentity: this.id.nodeName, leaseDurationSeconds: this.leaseDurationSeconds, renewTime: now } };
  }
}
