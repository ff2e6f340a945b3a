import { csi } from '@kemu/proto';
import type { Driver } from './driver.js';
import { type CallLogger, wrapService } from './logging.js';
import type { UnaryService } from './service-types.js';

export type IdentityServer = UnaryService<csi.IdentityMethods>;

export function createIdentityServer(driver: Driver, logger?: CallLogger): IdentityServer {
  const S = csi.PluginCapability_Service_Type;
  const server: IdentityServer = {
    async GetPluginInfo() {
      return { name: driver.name, vendorVersion: driver.version, manifest: { backend: driver.backend.name } };
    },
    async GetPluginCapabilities() {
      return {
        capabilities: [
          { type: 'service', service: { type: S.CONTROLLER_SERVICE } },
          { type: 'service', service: { type: S.VOLUME_ACCESSIBILITY_CONSTRAINTS } },
          { type: 'service', service: { type: S.GROUP_CONTROLLER_SERVICE } },
          {
            type: 'volumeExpansion',
            volumeExpansion: { type: csi.PluginCapability_VolumeExpansion_Type.ONLINE },
          },
        ],
      };
    },
    async Probe() {
      return { ready: { value: driver.isReady } };
    },
  };
  return wrapService('csi.v1.Identity', server, logger);
}
