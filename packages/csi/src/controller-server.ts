import { csi } from '@kemu/proto';
import {
  fromCapabilities,
  fromCapability,
  fromContentSource,
  fromTopology,
  toCapability,
  toSnapshot,
  toVolume,
  volumeContext,
} from './convert.js';
import { type AlphaCapability, controllerCapabilities } from './capabilities.js';
import type { Driver } from './driver.js';
import { unimplemented } from './errors.js';
import { type CallLogger, wrapService } from './logging.js';
import type { UnaryService } from './service-types.js';

export type ControllerServer = UnaryService<csi.ControllerMethods>;

/** An alpha RPC that was not enabled is not advertised, so it answers as the spec asks for those. */
function requireAlpha(driver: Driver, name: AlphaCapability, rpc: string): void {
  if (!driver.alphaEnabled(name)) {
    throw unimplemented(`${rpc} is an alpha CSI capability; start the driver with --enable-${name} to serve it`);
  }
}

export function createControllerServer(driver: Driver, logger?: CallLogger): ControllerServer {
  const backend = driver.backend.name;
  const conditions = driver.alphaEnabled('volume-condition');
  const status = async (id: string) => {
    const { volume, condition } = await driver.controllerGetVolume(id);
    return { publishedNodeIds: Object.keys(volume.published), volumeCondition: conditions ? condition : null };
  };
  const server: ControllerServer = {
    async CreateVolume(req) {
      const v = await driver.createVolume({
        name: req.name,
        capacityRange: req.capacityRange,
        capabilities: fromCapabilities(req.volumeCapabilities),
        parameters: req.parameters,
        mutableParameters: req.mutableParameters,
        contentSource: fromContentSource(req.volumeContentSource),
        requisite: req.accessibilityRequirements?.requisite?.map(fromTopology),
        preferred: req.accessibilityRequirements?.preferred?.map(fromTopology),
      });
      return { volume: toVolume(v, backend) };
    },
    async DeleteVolume(req) {
      await driver.deleteVolume(req.volumeId);
      return {};
    },
    async ControllerPublishVolume(req) {
      const publishContext = await driver.controllerPublish({
        volumeId: req.volumeId,
        nodeId: req.nodeId,
        capability: fromCapability(req.volumeCapability),
        readonly: req.readonly,
      });
      return { publishContext };
    },
    async ControllerUnpublishVolume(req) {
      await driver.controllerUnpublish({ volumeId: req.volumeId, nodeId: req.nodeId });
      return {};
    },
    async ValidateVolumeCapabilities(req) {
      const r = await driver.validateCapabilities({
        volumeId: req.volumeId,
        capabilities: fromCapabilities(req.volumeCapabilities),
        parameters: req.parameters,
        mutableParameters: req.mutableParameters,
      });
      if (!r.confirmed) return { confirmed: null, message: r.message };
      const caps = fromCapabilities(req.volumeCapabilities);
      return {
        confirmed: {
          volumeContext: { ...(req.volumeContext ?? {}), ...volumeContext(r.volume!, backend) },
          volumeCapabilities: caps.map(toCapability),
          parameters: req.parameters ?? {},
          mutableParameters: req.mutableParameters ?? {},
        },
        message: '',
      };
    },
    async ListVolumes(req) {
      const { entries, nextToken } = driver.listVolumes({
        maxEntries: req.maxEntries,
        startingToken: req.startingToken,
      });
      return {
        entries: await Promise.all(
          entries.map(async (v) => ({ volume: toVolume(v, backend), status: await status(v.id) })),
        ),
        nextToken,
      };
    },
    async GetCapacity(req) {
      const c = driver.getCapacity({
        capabilities: fromCapabilities(req.volumeCapabilities),
        topology: req.accessibleTopology ? fromTopology(req.accessibleTopology) : null,
      });
      return {
        availableCapacity: c.available,
        maximumVolumeSize: { value: c.maximumVolumeSize },
        minimumVolumeSize: { value: c.minimumVolumeSize },
      };
    },
    async ControllerGetCapabilities() {
      return {
        capabilities: controllerCapabilities(driver).map((type) => ({ type: 'rpc' as const, rpc: { type } })),
      };
    },
    async CreateSnapshot(req) {
      const s = await driver.createSnapshot({
        name: req.name,
        sourceVolumeId: req.sourceVolumeId,
        parameters: req.parameters,
      });
      return { snapshot: toSnapshot(s) };
    },
    async DeleteSnapshot(req) {
      await driver.deleteSnapshot(req.snapshotId);
      return {};
    },
    async ListSnapshots(req) {
      const { entries, nextToken } = driver.listSnapshots({
        maxEntries: req.maxEntries,
        startingToken: req.startingToken,
        snapshotId: req.snapshotId,
        sourceVolumeId: req.sourceVolumeId,
      });
      return { entries: entries.map((s) => ({ snapshot: toSnapshot(s) })), nextToken };
    },
    async GetSnapshot(req) {
      requireAlpha(driver, 'get-snapshot', 'GetSnapshot');
      return { snapshot: toSnapshot(driver.getSnapshot(req.snapshotId)) };
    },
    async ControllerExpandVolume(req) {
      return driver.controllerExpand({
        volumeId: req.volumeId,
        capacityRange: req.capacityRange,
        capability: fromCapability(req.volumeCapability),
      });
    },
    async ControllerGetVolume(req) {
      requireAlpha(driver, 'get-volume', 'ControllerGetVolume');
      const { volume, condition } = await driver.controllerGetVolume(req.volumeId);
      return {
        volume: toVolume(volume, backend),
        status: { publishedNodeIds: Object.keys(volume.published), volumeCondition: conditions ? condition : null },
      };
    },
    async ControllerModifyVolume(req) {
      await driver.controllerModify({ volumeId: req.volumeId, mutableParameters: req.mutableParameters });
      return {};
    },
  };
  if (!driver.enableAttach) {
    // not advertised without --enable-attach, so answer as the spec asks for unadvertised RPCs
    const no = async () => {
      throw unimplemented('ControllerPublish/UnpublishVolume need the driver started with --enable-attach');
    };
    server.ControllerPublishVolume = no;
    server.ControllerUnpublishVolume = no;
  }
  return wrapService('csi.v1.Controller', server, logger);
}
