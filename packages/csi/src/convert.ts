import type { csi } from '@kemu/proto';
import type {
  AccessMode,
  AccessType,
  Capability,
  ContentSource,
  SnapshotRecord,
  Topology,
  VolumeRecord,
} from './types.js';

/** Wire capability to core capability; structural checks happen in the driver core. */
export function fromCapability(c: csi.VolumeCapability | null | undefined): Capability | undefined {
  if (!c) return undefined;
  const accessType = (c.accessType ?? (c.mount ? 'mount' : c.block ? 'block' : undefined)) as AccessType;
  const cap: Capability = { accessType, accessMode: (c.accessMode?.mode ?? 0) as number as AccessMode };
  if (accessType === 'mount' && c.mount) {
    if (c.mount.fsType) cap.fsType = c.mount.fsType;
    if (c.mount.mountFlags?.length) cap.mountFlags = [...c.mount.mountFlags];
    if (c.mount.volumeMountGroup) cap.volumeMountGroup = c.mount.volumeMountGroup;
  }
  return cap;
}

export function fromCapabilities(list: csi.VolumeCapability[] | undefined): Capability[] {
  return (list ?? []).map((c) => fromCapability(c)!);
}

export function toCapability(c: Capability): csi.VolumeCapability {
  const out: csi.VolumeCapability = {
    accessMode: { mode: c.accessMode as number },
    accessType: c.accessType,
  };
  if (c.accessType === 'block') out.block = {};
  else
    out.mount = {
      fsType: c.fsType ?? '',
      mountFlags: c.mountFlags ?? [],
      volumeMountGroup: c.volumeMountGroup ?? '',
    };
  return out;
}

export function fromContentSource(s: csi.VolumeContentSource | null | undefined): ContentSource | undefined {
  if (!s) return undefined;
  const type = s.type ?? (s.snapshot ? 'snapshot' : s.volume ? 'volume' : undefined);
  if (type === 'snapshot') return { type, id: s.snapshot?.snapshotId ?? '' };
  if (type === 'volume') return { type, id: s.volume?.volumeId ?? '' };
  return undefined;
}

export function toContentSource(s: ContentSource | undefined): csi.VolumeContentSource | null {
  if (!s) return null;
  return s.type === 'snapshot'
    ? { type: 'snapshot', snapshot: { snapshotId: s.id } }
    : { type: 'volume', volume: { volumeId: s.id } };
}

export const fromTopology = (t: csi.Topology | null | undefined): Topology => ({ ...(t?.segments ?? {}) });
export const toTopology = (t: Topology): csi.Topology => ({ segments: { ...t } });

export function volumeContext(v: VolumeRecord, backend: string): Record<string, string> {
  return { 'kemu.csi.k8s.io/backend': backend, 'kemu.csi.k8s.io/access-type': v.accessType };
}

export function toVolume(v: VolumeRecord, backend: string): csi.Volume {
  return {
    volumeId: v.id,
    capacityBytes: v.capacityBytes,
    volumeContext: volumeContext(v, backend),
    contentSource: toContentSource(v.contentSource),
    accessibleTopology: v.accessibleTopology.map(toTopology),
  };
}

export function toTimestamp(ms: number): csi.google_protobuf_Timestamp {
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 };
}

export function toSnapshot(s: SnapshotRecord): csi.Snapshot {
  return {
    snapshotId: s.id,
    sourceVolumeId: s.sourceVolumeId,
    sizeBytes: s.sizeBytes,
    creationTime: toTimestamp(s.createdAt),
    readyToUse: s.readyToUse,
    groupSnapshotId: s.groupSnapshotId ?? '',
  };
}
