/** Core types of the driver, independent of the wire encoding. */

export type AccessType = 'mount' | 'block';

/** CSI access modes, numbered as in csi.v1 VolumeCapability.AccessMode.Mode. */
export enum AccessMode {
  UNKNOWN = 0,
  SINGLE_NODE_WRITER = 1,
  SINGLE_NODE_READER_ONLY = 2,
  MULTI_NODE_READER_ONLY = 3,
  MULTI_NODE_SINGLE_WRITER = 4,
  MULTI_NODE_MULTI_WRITER = 5,
  SINGLE_NODE_SINGLE_WRITER = 6,
  SINGLE_NODE_MULTI_WRITER = 7,
}

export interface Capability {
  accessType: AccessType;
  accessMode: AccessMode;
  fsType?: string;
  mountFlags?: string[];
  volumeMountGroup?: string;
}

export type Topology = Record<string, string>;

export type ContentSource = { type: 'snapshot'; id: string } | { type: 'volume'; id: string };

export interface VolumeCondition {
  abnormal: boolean;
  message: string;
}

export interface ControllerPublication {
  readonly: boolean;
  capability: Capability;
}

export interface Staging {
  path: string;
  capability: Capability;
}

export interface NodePublication {
  readonly: boolean;
  capability: Capability;
  stagingPath?: string;
}

export interface VolumeRecord {
  id: string;
  name: string;
  capacityBytes: number;
  accessType: AccessType;
  parameters: Record<string, string>;
  mutableParameters: Record<string, string>;
  contentSource?: ContentSource;
  accessibleTopology: Topology[];
  /** the node the volume lives on (absent in state written before multi-node serving: the driver's node) */
  node?: string;
  createdAt: number;
  /** node id -> controller publication */
  published: Record<string, ControllerPublication>;
  /** the (single) staging path on this node, when staged */
  staged?: Staging;
  /** target path -> node publication; more than one target is reference counted */
  targets: Record<string, NodePublication>;
}

export interface SnapshotRecord {
  id: string;
  name: string;
  sourceVolumeId: string;
  sizeBytes: number;
  accessType: AccessType;
  parameters: Record<string, string>;
  /** creation time in milliseconds since the epoch */
  createdAt: number;
  readyToUse: boolean;
  groupSnapshotId?: string;
}

export interface GroupSnapshotRecord {
  id: string;
  name: string;
  sourceVolumeIds: string[];
  snapshotIds: string[];
  parameters: Record<string, string>;
  createdAt: number;
  readyToUse: boolean;
}

/** Everything the driver remembers; persisted as one JSON document by the hostpath backend. */
export interface DriverState {
  version: 1;
  volumes: Record<string, VolumeRecord>;
  snapshots: Record<string, SnapshotRecord>;
  groupSnapshots: Record<string, GroupSnapshotRecord>;
}

export function emptyState(): DriverState {
  return { version: 1, volumes: {}, snapshots: {}, groupSnapshots: {} };
}
