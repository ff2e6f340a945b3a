import path from 'node:path';
import { grpc, implementService, pluginregistration, serveUnix, shutdownServer } from '@kemu/proto';
import { invalid } from './errors.js';
import { type CallLogger, wrapService } from './logging.js';
import type { UnaryService } from './service-types.js';

export type RegistrationServer = UnaryService<pluginregistration.RegistrationMethods>;

export interface RegistrationOptions {
  driverName: string;
  /** the CSI socket path as the kubelet sees it */
  endpoint: string;
  /** CSI versions the plugin serves (the kubelet accepts 1.x) */
  supportedVersions?: string[];
  /** called with what the kubelet reported back */
  onStatus?: (status: { registered: boolean; error: string }) => void;
}

/**
 * The kubelet plugin-registration service (GetInfo / NotifyRegistrationStatus), the part of
 * node-driver-registrar that lets the kubelet's plugin watcher discover this driver.
 */
export function createRegistrationServer(opts: RegistrationOptions, logger?: CallLogger): RegistrationServer {
  const server: RegistrationServer = {
    async GetInfo() {
      return {
        type: 'CSIPlugin',
        name: opts.driverName,
        endpoint: opts.endpoint,
        supportedVersions: opts.supportedVersions ?? ['1.0.0'],
      };
    },
    async NotifyRegistrationStatus(req) {
      if (req.pluginRegistered === undefined) throw invalid('plugin_registered is required');
      opts.onStatus?.({ registered: !!req.pluginRegistered, error: req.error ?? '' });
      return {};
    },
  };
  return wrapService('pluginregistration.Registration', server, logger);
}

/** Socket name the kubelet's plugin watcher expects in its registry directory. */
export function registrationSocketPath(registryDir: string, driverName: string): string {
  return path.join(registryDir, `${driverName}-reg.sock`);
}

export async function serveRegistration(
  registryDir: string,
  opts: RegistrationOptions,
  logger?: CallLogger,
): Promise<{ socketPath: string; close(): Promise<void> }> {
  const server = new grpc.Server();
  server.addService(
    pluginregistration.RegistrationService,
    implementService(pluginregistration.RegistrationService, createRegistrationServer(opts, logger)),
  );
  const socketPath = registrationSocketPath(registryDir, opts.driverName);
  await serveUnix(server, socketPath);
  return { socketPath, close: () => shutdownServer(server, 2000) };
}
