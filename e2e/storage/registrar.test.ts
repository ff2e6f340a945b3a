// node-driver-registrar as a process next to the kemu-csi driver process, seen from the kubelet's side of
// the plugin-registration socket.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_DRIVER_NAME as DRIVER } from '@kemu/csi';
import { grpc, pluginregistration, unaryCall } from '@kemu/proto';
import { freePort } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './harness.js';
import { type Proc, runSource } from './processes.js';

describe('kemu-node-driver-registrar', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-reg-'));
  const sock = path.join(dir, 'csi.sock');
  const registry = path.join(dir, 'plugins_registry');
  let driver: Proc;
  let registrar: Proc;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    // The registrar starts first and waits for the driver, as in a pod whose containers start together.
    // biome-ignore format: flag pairs
    registrar = runSource('packages/csi-sidecars/src/registrar-cli.ts', [
      '--csi-address', sock, '--kubelet-registration-path', '/var/lib/kubelet/plugins/kemu/csi.sock',
      '--plugin-registration-path', registry, '--http-endpoint', `127.0.0.1:${port}`,
    ]);
    // biome-ignore format: flag pairs
    driver = runSource('packages/csi/src/cli.ts', [
      '--endpoint', `unix://${sock}`, '--node-id', 'node-1', '--backend', 'sim', '--state-dir', path.join(dir, 'state'),
    ]);
  }, 60_000);
  afterAll(async () => {
    await registrar?.kill();
    await driver?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves GetInfo with the driver name and the kubelet path, reports health, and exits when registration fails', async () => {
    const regSock = path.join(registry, `${DRIVER}-reg.sock`);
    const client = new pluginregistration.RegistrationClient(
      `unix://${regSock}`,
      grpc.credentials.createInsecure(),
    );
    const info = await until(
      'registration socket',
      () => unaryCall(client, 'GetInfo', {}, { timeoutMs: 1000 }),
      60_000,
    );
    expect(info).toMatchObject({
      type: 'CSIPlugin',
      name: DRIVER,
      endpoint: '/var/lib/kubelet/plugins/kemu/csi.sock',
      supportedVersions: ['1.0.0'],
    });
    const health = await until('healthz', async () => {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`);
      return r.status === 200 ? r.text() : undefined;
    });
    expect(health).toBe('ok');
    await unaryCall(client, 'NotifyRegistrationStatus', {
      pluginRegistered: false,
      error: 'incompatible versions',
    }).catch(() => {});
    client.close();
    await until('registrar exited', async () => registrar.proc.exitCode !== null, 20_000);
    expect(registrar.proc.exitCode).toBe(2);
    expect(registrar.output()).toContain(
      'kemu-node-driver-registrar: registration process failed with error: incompatible versions; exiting so the registration is retried',
    );
  }, 120_000);
});
