// Kinds the sidecars read or write that the core registry does not define: Secrets (provisioner and
// publish secrets), VolumeSnapshot/VolumeSnapshotContent (restore sources) and CSIStorageCapacity.
// Registered on first use, and only when nobody registered them before.
import { type KubeObject, type LabelSelector, lookupKind, type ObjectMeta, registerKind } from '@kemu/core';

export interface Secret extends KubeObject {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: ObjectMeta;
  type?: string;
  /** base64 values */
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

export interface VolumeSnapshot extends KubeObject {
  apiVersion: 'snapshot.storage.k8s.io/v1';
  kind: 'VolumeSnapshot';
  metadata: ObjectMeta;
  spec: {
    source: { persistentVolumeClaimName?: string; volumeSnapshotContentName?: string };
    volumeSnapshotClassName?: string;
  };
  status?: {
    boundVolumeSnapshotContentName?: string;
    readyToUse?: boolean;
    restoreSize?: string;
    creationTime?: string;
    error?: { message?: string; time?: string };
  };
}

export interface VolumeSnapshotContent extends KubeObject {
  apiVersion: 'snapshot.storage.k8s.io/v1';
  kind: 'VolumeSnapshotContent';
  metadata: ObjectMeta;
  spec: {
    driver: string;
    deletionPolicy: 'Delete' | 'Retain';
    source: { volumeHandle?: string; snapshotHandle?: string };
    volumeSnapshotRef: {
      apiVersion?: string;
      kind?: string;
      namespace?: string;
      name?: string;
      uid?: string;
    };
    volumeSnapshotClassName?: string;
    sourceVolumeMode?: 'Filesystem' | 'Block';
  };
  status?: { snapshotHandle?: string; readyToUse?: boolean; restoreSize?: number; creationTime?: number };
}

export interface CSIStorageCapacity extends KubeObject {
  apiVersion: 'storage.k8s.io/v1';
  kind: 'CSIStorageCapacity';
  metadata: ObjectMeta;
  storageClassName: string;
  nodeTopology?: LabelSelector;
  capacity?: string;
  maximumVolumeSize?: string;
}

let done = false;

export function registerSidecarKinds(): void {
  if (done) return;
  done = true;
  if (!lookupKind('Secret'))
    registerKind({
      kind: 'Secret',
      apiVersion: 'v1',
      resource: 'secrets',
      namespaced: true,
      hasStatus: false,
    });
  if (!lookupKind('VolumeSnapshot')) {
    registerKind({
      kind: 'VolumeSnapshot',
      apiVersion: 'snapshot.storage.k8s.io/v1',
      resource: 'volumesnapshots',
      namespaced: true,
      hasStatus: true,
    });
  }
  if (!lookupKind('VolumeSnapshotContent')) {
    registerKind({
      kind: 'VolumeSnapshotContent',
      apiVersion: 'snapshot.storage.k8s.io/v1',
      resource: 'volumesnapshotcontents',
      namespaced: false,
      hasStatus: true,
    });
  }
  if (!lookupKind('CSIStorageCapacity')) {
    registerKind({
      kind: 'CSIStorageCapacity',
      apiVersion: 'storage.k8s.io/v1',
      resource: 'csistoragecapacities',
      namespaced: true,
      hasStatus: false,
    });
  }
}
