import { csi } from '@kemu/proto';
import { nodeCapabilities } from './capabilities.js';
import { fromCapability, toTopology } from './convert.js';
import type { Driver } from './driver.js';
import { type CallLogger, wrapService } from './logging.js';
import type { UnaryService } from './service-types.js';

export type NodeServer = UnaryService<csi.NodeMethods>;

/**
 * The Node service of one node. A driver serving several nodes (`extraNodeIds`) has one of these per
 * node; without `nodeId` it is the driver's own node.
 */
export function createNodeServer(driver: Driver, logger?: CallLogger, nodeId = driver.nodeId): NodeServer {
  const U = csi.VolumeUsage_Unit;
  const server: NodeServer = {
    async NodeStageVolume(req) {
      await driver.nodeStage({
        nodeId,
        volumeId: req.volumeId,
        stagingPath: req.stagingTargetPath,
        capability: fromCapability(req.volumeCapability),
        publishContext: req.publishContext,
      });
      return {};
    },
    async NodeUnstageVolume(req) {
      await driver.nodeUnstage({ nodeId, volumeId: req.volumeId, stagingPath: req.stagingTargetPath });
      return {};
    },
    async NodePublishVolume(req) {
      await driver.nodePublish({
        nodeId,
        volumeId: req.volumeId,
        targetPath: req.targetPath,
        stagingPath: req.stagingTargetPath,
        capability: fromCapability(req.volumeCapability),
        readonly: req.readonly,
      });
      return {};
    },
    async NodeUnpublishVolume(req) {
      await driver.nodeUnpublish({ nodeId, volumeId: req.volumeId, targetPath: req.targetPath });
      return {};
    },
    async NodeGetVolumeStats(req) {
      const { usage, condition } = await driver.nodeStats({
        nodeId,
        volumeId: req.volumeId,
        volumePath: req.volumePath,
      });
      const out: csi.VolumeUsage[] = [{ unit: U.BYTES, ...usage.bytes }];
      if (usage.inodes) out.push({ unit: U.INODES, ...usage.inodes });
      return { usage: out, volumeCondition: driver.alphaEnabled('volume-condition') ? condition : null };
    },
    async NodeExpandVolume(req) {
      return driver.nodeExpand({
        nodeId,
        volumeId: req.volumeId,
        volumePath: req.volumePath,
        capacityRange: req.capacityRange,
        capability: fromCapability(req.volumeCapability),
      });
    },
    async NodeGetCapabilities() {
      return { capabilities: nodeCapabilities(driver).map((type) => ({ type: 'rpc' as const, rpc: { type } })) };
    },
    async NodeGetInfo() {
      const info = driver.nodeInfo(nodeId);
      return {
        nodeId: info.nodeId,
        maxVolumesPerNode: info.maxVolumesPerNode,
        accessibleTopology: toTopology(info.topology),
      };
    },
  };
  return wrapService('csi.v1.Node', server, logger);
}
