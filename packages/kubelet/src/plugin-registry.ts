// How the kubelet finds CSI node plugins: a fixed map (in-process clusters), or the plugin watcher that
// scans <root>/plugins_registry for registration sockets, asks each for its info over the kubelet
// plugin-registration API, connects to the advertised endpoint and reports the outcome back.
import fs from 'node:fs';
import path from 'node:path';
import { csi, type GrpcChannel, openChannel, pluginregistration } from '@kemu/proto';
import type { CsiNodeApi, CsiPluginRegistry } from './types.js';

export class StaticPluginRegistry implements CsiPluginRegistry {
  constructor(private readonly plugins: Map<string, CsiNodeApi> = new Map()) {}
  get(name: string) {
    return this.plugins.get(name);
  }
  names() {
    return [...this.plugins.keys()];
  }
  set(name: string, api: CsiNodeApi) {
    this.plugins.set(name, api);
  }
}

/** CSI versions this kubelet speaks, as it answers in registration. */
export const SUPPORTED_CSI_VERSIONS = ['1.0.0'];

interface Registered {
  socket: string;
  endpoint: string;
  api: CsiNodeApi;
  client: GrpcChannel;
}

export class PluginWatcher implements CsiPluginRegistry {
  private plugins = new Map<string, Registered>();
  private seen = new Set<string>();
  private timer?: NodeJS.Timeout;
  private scanning?: Promise<void>;

  constructor(
    readonly registryDir: string,
    private readonly onError: (err: unknown) => void = () => {},
    private readonly periodMs = 1000,
  ) {}

  get(name: string) {
    return this.plugins.get(name)?.api;
  }
  names() {
    return [...this.plugins.keys()];
  }

  start() {
    fs.mkdirSync(this.registryDir, { recursive: true, mode: 0o750 });
    const tick = () => {
      if (!this.scanning) this.scanning = this.scan().catch(this.onError).finally(() => (this.scanning = undefined));
    };
    tick();
    this.timer = setInterval(tick, this.periodMs);
    this.timer.unref?.();
  }

  async stop() {
    if (this.timer) clearInterval(this.timer);
    await this.scanning;
    for (const p of this.plugins.values()) p.client.close();
    this.plugins.clear();
  }

  /** One scan of the registry directory. Exposed for tests. */
  async scan(): Promise<void> {
    const entries = fs.readdirSync(this.registryDir, { withFileTypes: true });
    const present = new Set<string>();
    for (const e of entries) {
      const full = path.join(this.registryDir, e.name);
      if (!e.isSocket()) continue;
      present.add(full);
      if (this.seen.has(full)) continue;
      this.seen.add(full);
      await this.register(full);
    }
    // A plugin whose registration socket went away is deregistered, as upstream.
    for (const [name, p] of this.plugins) {
      if (!present.has(p.socket)) {
        p.client.close();
        this.plugins.delete(name);
      }
    }
    for (const s of [...this.seen]) if (!present.has(s)) this.seen.delete(s);
  }

  private async register(socket: string) {
    const reg = openChannel(`unix://${socket}`);
    const api = reg.service(pluginregistration.RegistrationService);
    try {
      const info = await api.GetInfo({}, { timeoutMs: 5000 });
      const problem =
        info.type !== 'CSIPlugin'
          ? `plugin type ${info.type} is not handled by this kubelet`
          : !info.name
            ? 'plugin name is empty'
            : !(info.supportedVersions ?? []).some((v) => SUPPORTED_CSI_VERSIONS.includes(v) || v.startsWith('1.'))
              ? `none of the versions ${JSON.stringify(info.supportedVersions)} is supported`
              : '';
      if (problem) {
        await api.NotifyRegistrationStatus({ pluginRegistered: false, error: problem }, { timeoutMs: 5000 });
        return;
      }
      const endpoint = info.endpoint?.startsWith('unix://') ? info.endpoint : `unix://${info.endpoint}`;
      const client = openChannel(endpoint);
      const node = client.service(csi.NodeService);
      this.plugins.get(info.name!)?.client.close();
      this.plugins.set(info.name!, { socket, endpoint, api: node, client });
      await api.NotifyRegistrationStatus({ pluginRegistered: true, error: '' }, { timeoutMs: 5000 });
    } finally {
      reg.close();
    }
  }
}
