import { csi } from '@kemu/proto';
import { toSnapshot, toTimestamp } from './convert.js';
import type { Driver } from './driver.js';
import { type CallLogger, wrapService } from './logging.js';
import type { UnaryService } from './service-types.js';
import type { GroupSnapshotRecord, SnapshotRecord } from './types.js';

export type GroupControllerServer = UnaryService<csi.GroupControllerMethods>;

function toGroup(g: GroupSnapshotRecord, snaps: SnapshotRecord[]): csi.VolumeGroupSnapshot {
  return {
    groupSnapshotId: g.id,
    snapshots: snaps.map(toSnapshot),
    creationTime: toTimestamp(g.createdAt),
    readyToUse: g.readyToUse,
  };
}

export function createGroupControllerServer(driver: Driver, logger?: CallLogger): GroupControllerServer {
  const server: GroupControllerServer = {
    async GroupControllerGetCapabilities() {
      const type = csi.GroupControllerServiceCapability_RPC_Type.CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT;
      return { capabilities: [{ type: 'rpc', rpc: { type } }] };
    },
    async CreateVolumeGroupSnapshot(req) {
      const { group, snapshots } = await driver.createGroupSnapshot({
        name: req.name,
        sourceVolumeIds: req.sourceVolumeIds,
        parameters: req.parameters,
      });
      return { groupSnapshot: toGroup(group, snapshots) };
    },
    async DeleteVolumeGroupSnapshot(req) {
      await driver.deleteGroupSnapshot({
        groupSnapshotId: req.groupSnapshotId,
        snapshotIds: req.snapshotIds,
      });
      return {};
    },
    async GetVolumeGroupSnapshot(req) {
      const { group, snapshots } = driver.getGroupSnapshot({
        groupSnapshotId: req.groupSnapshotId,
        snapshotIds: req.snapshotIds,
      });
      return { groupSnapshot: toGroup(group, snapshots) };
    },
  };
  return wrapService('csi.v1.GroupController', server, logger);
}
