import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deviceplugin, grpc, implementService, promiseClient, serveUnix, shutdownServer, type GrpcServer } from '@kemu/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { simDevices } from './devices-sim.js';
import { DevicePluginServer } from './server.js';

let dir: string;
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A stand-in for the kubelet's Registration service that records what plugins send. */
async function fakeKubelet(): Promise<deviceplugin.RegisterRequest[]> {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-dp-'));
  const got: deviceplugin.RegisterRequest[] = [];
  const server: GrpcServer = await serveUnix(
    [[deviceplugin.RegistrationService, implementService(deviceplugin.RegistrationService, { Register: (r) => (got.push(r), {}) })]],
    path.join(dir, 'kubelet.sock'),
  );
  cleanup.push(() => shutdownServer(server, 100));
  return got;
}

async function started(opts: Partial<ConstructorParameters<typeof DevicePluginServer>[0]> = {}) {
  const plugin = new DevicePluginServer({ resourceName: 'nvidia.com/gpu', pluginDir: dir, devices: simDevices({ count: 4, model: 'H100', numaNodes: 2, seed: 'n1' }), ...opts });
  await plugin.start();
  cleanup.push(() => plugin.stop());
  const client = new grpc.Client(`unix://${plugin.socketPath}`, grpc.credentials.createInsecure());
  cleanup.push(async () => client.close());
  return { plugin, client, api: promiseClient(deviceplugin.DevicePluginService, client as never) };
}

describe('DevicePluginServer', () => {
  it('registers with the kubelet, with its socket 0600 in the plugin dir', async () => {
    const got = await fakeKubelet();
    const { plugin } = await started();
    expect(got).toEqual([{ version: 'v1beta1', endpoint: 'nvidia.com-gpu.sock', resourceName: 'nvidia.com/gpu', options: { preStartRequired: false, getPreferredAllocationAvailable: true } }]);
    expect(fs.statSync(plugin.socketPath).mode & 0o777).toBe(0o600);
  });

  it('streams the device list again when a device turns unhealthy', async () => {
    await fakeKubelet();
    const { plugin, client } = await started();
    const def = deviceplugin.DevicePluginService as unknown as Record<string, { path: string; requestSerialize: (v: object) => Buffer; responseDeserialize: (b: Buffer) => unknown }>;
    const stream = client.makeServerStreamRequest(def.ListAndWatch.path, def.ListAndWatch.requestSerialize, def.ListAndWatch.responseDeserialize as never, {});
    const seen: deviceplugin.ListAndWatchResponse[] = [];
    stream.on('data', (r: deviceplugin.ListAndWatchResponse) => seen.push(r));
    stream.on('error', () => {});
    while (seen.length < 1) await new Promise((r) => setTimeout(r, 10));
    expect(seen[0].devices?.map((d) => [d.health, d.topology?.nodes?.[0]?.ID])).toEqual([
      ['Healthy', 0],
      ['Healthy', 1],
      ['Healthy', 0],
      ['Healthy', 1],
    ]);
    plugin.setHealth(plugin.list()[2].id, 'Unhealthy');
    while (seen.length < 2) await new Promise((r) => setTimeout(r, 10));
    expect(seen[1].devices?.[2].health).toBe('Unhealthy');
    stream.cancel();
  });

  it('prefers devices on the NUMA node of the must-include ones, and refuses unknown or unhealthy devices', async () => {
    await fakeKubelet();
    const { plugin, api } = await started();
    const ids = plugin.list().map((d) => d.id);
    const pref = await api.GetPreferredAllocation({ containerRequests: [{ availableDeviceIDs: ids, mustIncludeDeviceIDs: [ids[1]], allocationSize: 2 }] });
    expect(pref.containerResponses?.[0].deviceIDs).toEqual([ids[1], ids[3]]);
    const res = await api.Allocate({ containerRequests: [{ devicesIds: [ids[0], ids[2]] }] });
    expect(res.containerResponses?.[0].envs).toEqual({ NVIDIA_VISIBLE_DEVICES: `${ids[0]},${ids[2]}` });
    await expect(api.Allocate({ containerRequests: [{ devicesIds: ['GPU-nope'] }] })).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'invalid allocation request for "nvidia.com/gpu": unknown device: GPU-nope',
    });
    plugin.setHealth(ids[3], 'Unhealthy');
    await expect(api.Allocate({ containerRequests: [{ devicesIds: [ids[3]] }] })).rejects.toMatchObject({ code: grpc.status.FAILED_PRECONDITION });
  });

  it('refuses a resource name that is not an extended resource', () => {
    expect(() => new DevicePluginServer({ resourceName: 'gpu', pluginDir: '/tmp', devices: [] })).toThrow(/not an extended resource name/);
  });
});
