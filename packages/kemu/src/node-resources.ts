// What `kemu up` and `kemu node` give each node's kubelet for resources: a KubeletConfiguration file
// (shared, or per node as NODE=FILE) and simulated devices served by a device plugin beside the kubelet
// (`--device nvidia.com/gpu=8`, optionally `=8:H100` for the model).
import path from 'node:path';
import { DevicePluginServer, isExtendedResourceName, simDevices } from '@kemu/device-plugin';
import { type KubeletConfiguration, loadKubeletConfiguration } from '@kemu/kubelet';

export interface DeviceRequest {
  resource: string;
  count: number;
  model?: string;
}

/** Parses `RESOURCE=COUNT[:MODEL]`, e.g. `nvidia.com/gpu=8:H100`. */
export function parseDeviceRequest(text: string): DeviceRequest {
  const m = /^([^=]+)=(\d+)(?::(.+))?$/.exec(text.trim());
  if (!m) throw new Error(`--device ${JSON.stringify(text)}: expected RESOURCE=COUNT[:MODEL], e.g. nvidia.com/gpu=8:H100`);
  const [, resource, count, model] = m;
  if (!isExtendedResourceName(resource)) throw new Error(`--device ${JSON.stringify(text)}: ${JSON.stringify(resource)} is not an extended resource name (vendor-domain/resource)`);
  const n = Number(count);
  if (n < 1 || n > 1024) throw new Error(`--device ${JSON.stringify(text)}: the count must be from 1 to 1024`);
  return { resource, count: n, model };
}

/** `FILE` applies to every node, `NODE=FILE` to one; a node's own file wins over the shared one. */
export function parseKubeletConfigFlags(values: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values) {
    const m = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)=(.+)$/.exec(v);
    if (m && !v.startsWith('/') && !v.startsWith('.')) out[m[1]] = m[3];
    else out['*'] = v;
  }
  return out;
}

/** The decoded configuration for a node (throws KubeletConfigError naming the file and field). */
export function kubeletConfigFor(files: Record<string, string> | undefined, node: string): KubeletConfiguration | undefined {
  const file = files?.[node] ?? files?.['*'];
  return file ? loadKubeletConfiguration(file).config : undefined;
}

/** Starts one simulated device plugin per request, registered with the kubelet in `pluginDir`. */
export async function startDevicePlugins(pluginDir: string, node: string, requests: DeviceRequest[], log?: (line: string) => void): Promise<() => Promise<void>> {
  const plugins: DevicePluginServer[] = [];
  try {
    for (const r of requests) {
      const p = new DevicePluginServer({
        resourceName: r.resource,
        pluginDir,
        devices: simDevices({ count: r.count, model: r.model ?? (r.resource.startsWith('nvidia.com/') ? 'H100' : 'sim'), seed: node }),
        log,
      });
      await p.start();
      plugins.push(p);
    }
  } catch (err) {
    for (const p of plugins) await p.stop();
    throw err;
  }
  return async () => {
    for (const p of plugins) await p.stop();
  };
}

export function devicePluginDir(kubeletRoot: string): string {
  return path.join(kubeletRoot, 'device-plugins');
}
