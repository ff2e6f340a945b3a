// What the driver advertises. Capabilities the CSI v1.12 spec marks alpha are off unless enabled one by
// one (`--enable-<name>`, as csi-driver-host-path gates its optional features): sidecars and test suites
// built against an older spec reject enum values they do not know (GET_SNAPSHOT, 15, is newer than
// spec 1.9), and an alpha RPC may still change shape.
import { csi } from '@kemu/proto';
import type { Driver } from './driver.js';

const C = csi.ControllerServiceCapability_RPC_Type;
const N = csi.NodeServiceCapability_RPC_Type;

export const ALPHA_CAPABILITIES = {
  'get-snapshot': {
    controller: [C.GET_SNAPSHOT],
    node: [],
    help: 'GET_SNAPSHOT: the GetSnapshot RPC',
  },
  'get-volume': {
    controller: [C.GET_VOLUME],
    node: [],
    help: 'GET_VOLUME: the ControllerGetVolume RPC',
  },
  'volume-condition': {
    controller: [C.VOLUME_CONDITION],
    node: [N.VOLUME_CONDITION],
    help: 'VOLUME_CONDITION: volume health in ListVolumes, ControllerGetVolume and NodeGetVolumeStats',
  },
  'single-node-multi-writer': {
    controller: [C.SINGLE_NODE_MULTI_WRITER],
    node: [N.SINGLE_NODE_MULTI_WRITER],
    help: 'SINGLE_NODE_MULTI_WRITER: the SINGLE_NODE_SINGLE_WRITER and SINGLE_NODE_MULTI_WRITER access modes',
  },
} as const satisfies Record<
  string,
  {
    controller: readonly csi.ControllerServiceCapability_RPC_Type[];
    node: readonly csi.NodeServiceCapability_RPC_Type[];
    help: string;
  }
>;

export type AlphaCapability = keyof typeof ALPHA_CAPABILITIES;

export const ALPHA_CAPABILITY_NAMES = Object.keys(ALPHA_CAPABILITIES) as AlphaCapability[];

export function isAlphaCapability(name: string): name is AlphaCapability {
  return Object.hasOwn(ALPHA_CAPABILITIES, name);
}

const enabledAlpha = (driver: Driver) => ALPHA_CAPABILITY_NAMES.filter((n) => driver.alphaEnabled(n)).map((n) => ALPHA_CAPABILITIES[n]);

export function controllerCapabilities(driver: Driver): csi.ControllerServiceCapability_RPC_Type[] {
  const caps: csi.ControllerServiceCapability_RPC_Type[] = [
    C.CREATE_DELETE_VOLUME,
    C.LIST_VOLUMES,
    C.GET_CAPACITY,
    C.CREATE_DELETE_SNAPSHOT,
    C.LIST_SNAPSHOTS,
    C.CLONE_VOLUME,
    C.EXPAND_VOLUME,
    C.LIST_VOLUMES_PUBLISHED_NODES,
    C.MODIFY_VOLUME,
  ];
  if (driver.enableAttach) caps.push(C.PUBLISH_UNPUBLISH_VOLUME, C.PUBLISH_READONLY);
  for (const a of enabledAlpha(driver)) caps.push(...a.controller);
  return caps;
}

export function nodeCapabilities(driver: Driver): csi.NodeServiceCapability_RPC_Type[] {
  const caps: csi.NodeServiceCapability_RPC_Type[] = [N.STAGE_UNSTAGE_VOLUME, N.GET_VOLUME_STATS, N.EXPAND_VOLUME, N.VOLUME_MOUNT_GROUP];
  for (const a of enabledAlpha(driver)) caps.push(...a.node);
  return caps;
}
