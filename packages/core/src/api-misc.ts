// PriorityClass (scheduling.k8s.io/v1), Lease (coordination.k8s.io/v1) and the calico-style IPAM kinds
// (crd.projectcalico.org/v1: IPPool, IPAMBlock, BlockAffinity).
import type { NodeSelector } from './api-core.js';
import type { KubeObject, ObjectMeta } from './api-meta.js';

export interface PriorityClass extends KubeObject {
  apiVersion: 'scheduling.k8s.io/v1';
  kind: 'PriorityClass';
  metadata: ObjectMeta;
  value: number;
  globalDefault?: boolean;
  description?: string;
  preemptionPolicy?: 'PreemptLowerPriority' | 'Never';
}

export interface Lease extends KubeObject {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: ObjectMeta;
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    /** MicroTime: RFC 3339 with microseconds. */
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

export interface IPPool extends KubeObject {
  apiVersion: 'crd.projectcalico.org/v1';
  kind: 'IPPool';
  metadata: ObjectMeta;
  spec: {
    cidr: string;
    /** Prefix length of the per-node blocks carved from the pool (default 26 for IPv4, 122 for IPv6). */
    blockSize?: number;
    ipipMode?: 'Never' | 'Always' | 'CrossSubnet';
    vxlanMode?: 'Never' | 'Always' | 'CrossSubnet';
    natOutgoing?: boolean;
    disabled?: boolean;
    nodeSelector?: string;
    allowedUses?: ('Workload' | 'Tunnel')[];
  };
}

export interface IPAMBlock extends KubeObject {
  apiVersion: 'crd.projectcalico.org/v1';
  kind: 'IPAMBlock';
  metadata: ObjectMeta;
  spec: {
    cidr: string;
    /** `host:<node>` when the block is affine to a node. */
    affinity?: string | null;
    /** One entry per address in the block: index into `attributes`, or null when free. */
    allocations: (number | null)[];
    /** Ordinals of free addresses. */
    unallocated: number[];
    attributes: { handle_id?: string; secondary?: Record<string, string> }[];
    deleted?: boolean;
    strictAffinity?: boolean;
    sequenceNumber?: number;
  };
}

export interface BlockAffinity extends KubeObject {
  apiVersion: 'crd.projectcalico.org/v1';
  kind: 'BlockAffinity';
  metadata: ObjectMeta;
  spec: {
    state: 'pending' | 'confirmed' | 'pendingDeletion';
    node: string;
    cidr: string;
    deleted?: string;
  };
}

export type { NodeSelector };
