// storage.k8s.io/v1 kinds: StorageClass, VolumeAttachment, CSIDriver, CSINode.
import type { NodeSelectorTerm, PersistentVolumeSpec } from './api-core.js';
import type { KubeObject, ObjectMeta } from './api-meta.js';

export interface StorageClass extends KubeObject {
  apiVersion: 'storage.k8s.io/v1';
  kind: 'StorageClass';
  metadata: ObjectMeta;
  provisioner: string;
  parameters?: Record<string, string>;
  reclaimPolicy?: 'Retain' | 'Delete';
  mountOptions?: string[];
  allowVolumeExpansion?: boolean;
  volumeBindingMode?: 'Immediate' | 'WaitForFirstConsumer';
  allowedTopologies?: { matchLabelExpressions?: { key: string; values: string[] }[] }[];
}

export interface VolumeError {
  time?: string;
  message?: string;
}

export interface VolumeAttachment extends KubeObject {
  apiVersion: 'storage.k8s.io/v1';
  kind: 'VolumeAttachment';
  metadata: ObjectMeta;
  spec: {
    attacher: string;
    nodeName: string;
    source: {
      persistentVolumeName?: string;
      inlineVolumeSpec?: PersistentVolumeSpec;
    };
  };
  status?: {
    attached: boolean;
    attachmentMetadata?: Record<string, string>;
    attachError?: VolumeError;
    detachError?: VolumeError;
  };
}

export interface CSIDriver extends KubeObject {
  apiVersion: 'storage.k8s.io/v1';
  kind: 'CSIDriver';
  metadata: ObjectMeta;
  spec: {
    attachRequired?: boolean;
    podInfoOnMount?: boolean;
    volumeLifecycleModes?: ('Persistent' | 'Ephemeral')[];
    storageCapacity?: boolean;
    fsGroupPolicy?: 'None' | 'File' | 'ReadWriteOnceWithFSType';
    requiresRepublish?: boolean;
    seLinuxMount?: boolean;
    tokenRequests?: { audience: string; expirationSeconds?: number }[];
  };
}

export interface CSINodeDriver {
  name: string;
  nodeID: string;
  topologyKeys?: string[] | null;
  allocatable?: { count?: number };
}

export interface CSINode extends KubeObject {
  apiVersion: 'storage.k8s.io/v1';
  kind: 'CSINode';
  metadata: ObjectMeta;
  spec: { drivers: CSINodeDriver[] };
}

export type { NodeSelectorTerm };
