// node-driver-registrar: asks the driver its name, then serves the kubelet plugin-registration API at
// `<registry dir>/<driver>-reg.sock`, telling the kubelet where the driver's socket is. A kubelet that
// reports the registration failed gets the error passed on (the CLI exits, as upstream, to be restarted).
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { grpc, implementService, pluginregistration, RpcError, serveUnix, shutdownServer } from '@kemu/proto';
import { type CsiConnection, DriverInfo } from './connection.js';

export interface RegistrarOptions {
  csi: CsiConnection;
  /** The driver's socket as the kubelet sees it (--kubelet-registration-path). */
  kubeletRegistrationPath: string;
  /** The kubelet's plugin registry directory (--plugin-registration-path, default /registration). */
  pluginRegistrationDir?: string;
  /** Deadline of GetPluginInfo (--timeout, default 1 s per try). */
  timeoutMs?: number;
  /** Called with what the kubelet answered. */
  onStatus?(status: { registered: boolean; error: string }): void;
}

export function registrationSocket(dir: string, driverName: string): string {
  return path.join(dir, `${driverName}-reg.sock`);
}

export class NodeDriverRegistrar {
  driverName = '';
  socketPath = '';
  /** The last status the kubelet reported, if any. */
  status: { registered: boolean; error: string } | undefined;
  private server: grpc.Server | undefined;

  constructor(readonly opts: RegistrarOptions) {
    if (!path.isAbsolute(opts.kubeletRegistrationPath) || opts.kubeletRegistrationPath.includes('\0')) {
      throw new Error(
        `--kubelet-registration-path "${opts.kubeletRegistrationPath}" must be an absolute path`,
      );
    }
  }

  /** Waits for the driver (retrying GetPluginInfo), then serves the registration socket. */
  async start(signal?: AbortSignal): Promise<void> {
    const info = new DriverInfo(this.opts.csi, this.opts.timeoutMs ?? 1000);
    for (;;) {
      try {
        this.driverName = await info.driverName();
        break;
      } catch (e) {
        if (signal?.aborted) throw e;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    if (!/^[a-zA-Z0-9][-a-zA-Z0-9_.]*$/.test(this.driverName)) {
      throw new Error(
        `the driver reported the name "${this.driverName}", which cannot name a registration socket`,
      );
    }
    const dir = this.opts.pluginRegistrationDir ?? '/registration';
    await fs.mkdir(dir, { recursive: true, mode: 0o750 });
    this.socketPath = registrationSocket(dir, this.driverName);
    const server = new grpc.Server();
    server.addService(
      pluginregistration.RegistrationService,
      implementService(pluginregistration.RegistrationService, {
        GetInfo: () => ({
          type: 'CSIPlugin',
          name: this.driverName,
          endpoint: this.opts.kubeletRegistrationPath,
          supportedVersions: ['1.0.0'],
        }),
        NotifyRegistrationStatus: (req) => {
          if (req.pluginRegistered === undefined)
            throw new RpcError(grpc.status.INVALID_ARGUMENT, 'plugin_registered is required');
          this.status = { registered: !!req.pluginRegistered, error: req.error ?? '' };
          this.opts.onStatus?.(this.status);
          return {};
        },
      }),
    );
    await serveUnix(server, this.socketPath);
    this.server = server;
  }

  /** The registration socket exists (what --http-endpoint's /healthz reports). */
  async healthy(): Promise<boolean> {
    if (!this.socketPath) return false;
    try {
      return (await fs.stat(this.socketPath)).isSocket();
    } catch {
      return false;
    }
  }

  async stop(): Promise<void> {
    if (this.server) await shutdownServer(this.server, 2000);
    if (this.socketPath) await fs.rm(this.socketPath, { force: true });
  }
}
