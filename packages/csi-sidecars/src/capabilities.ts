// Kubernetes access modes and volume modes as CSI volume capabilities, mapped as the upstream sidecars map them.
import type { PersistentVolumeAccessMode } from '@kemu/core';
import { csi } from '@kemu/proto';

const Mode = csi.VolumeCapability_AccessMode_Mode;

export function accessModeToCsi(
  m: PersistentVolumeAccessMode,
  singleNodeMultiWriter: boolean,
): csi.VolumeCapability_AccessMode_Mode {
  switch (m) {
    case 'ReadWriteOnce':
      return singleNodeMultiWriter ? Mode.SINGLE_NODE_MULTI_WRITER : Mode.SINGLE_NODE_WRITER;
    case 'ReadWriteOncePod':
      return singleNodeMultiWriter ? Mode.SINGLE_NODE_SINGLE_WRITER : Mode.SINGLE_NODE_WRITER;
    case 'ReadOnlyMany':
      return Mode.MULTI_NODE_READER_ONLY;
    case 'ReadWriteMany':
      return Mode.MULTI_NODE_MULTI_WRITER;
    default:
      return Mode.UNKNOWN;
  }
}

export function capability(
  mode: csi.VolumeCapability_AccessMode_Mode,
  volumeMode: 'Filesystem' | 'Block' | undefined,
  fsType: string,
  mountFlags: string[],
): csi.VolumeCapability {
  return volumeMode === 'Block'
    ? { block: {}, accessMode: { mode } }
    : { mount: { fsType, mountFlags, volumeMountGroup: '' }, accessMode: { mode } };
}

/** One capability per requested access mode (CreateVolume). */
export function claimCapabilities(
  modes: PersistentVolumeAccessMode[],
  volumeMode: 'Filesystem' | 'Block' | undefined,
  fsType: string,
  mountFlags: string[],
  singleNodeMultiWriter: boolean,
): csi.VolumeCapability[] {
  return modes.map((m) =>
    capability(accessModeToCsi(m, singleNodeMultiWriter), volumeMode, fsType, mountFlags),
  );
}

/** The one capability a published volume gets: the widest mode the PV offers (ControllerPublish, Expand). */
export function pvCapability(
  modes: PersistentVolumeAccessMode[],
  volumeMode: 'Filesystem' | 'Block' | undefined,
  fsType: string,
  mountFlags: string[],
  singleNodeMultiWriter: boolean,
): csi.VolumeCapability {
  let mode: csi.VolumeCapability_AccessMode_Mode;
  if (modes.includes('ReadWriteMany')) mode = Mode.MULTI_NODE_MULTI_WRITER;
  else if (modes.includes('ReadOnlyMany') && !modes.includes('ReadWriteOnce'))
    mode = Mode.MULTI_NODE_READER_ONLY;
  else if (modes.includes('ReadWriteOncePod'))
    mode = accessModeToCsi('ReadWriteOncePod', singleNodeMultiWriter);
  else mode = accessModeToCsi('ReadWriteOnce', singleNodeMultiWriter);
  return capability(mode, volumeMode, fsType, mountFlags);
}
