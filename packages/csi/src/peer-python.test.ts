// Wire compatibility with an independent gRPC and protobuf implementation: a Python client (gRPC C core,
// Google's protobuf runtime, messages compiled by protoc from our .proto) drives the driver.
import { spawn, spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { serveCsiDriver } from './server.js';
import { tmpDir } from './test-support.js';

// these start real processes; a crowded CI machine can take tens of seconds for that
vi.setConfig({ testTimeout: 180_000 });

const PYTHON = '/usr/bin/python3';
const here = path.dirname(fileURLToPath(import.meta.url));
const protoDir = path.resolve(here, '../../../proto');
const canPython = requirePeers('the Python peer test', [
  peers.pythonGrpc,
  peers.pythonProtobuf,
  peers.protoc,
  peers.protobufIncludes,
]);

describe.runIf(canPython)('an independent Python gRPC client', () => {
  it.each(['hostpath', 'sim'] as const)(
    'drives a full lifecycle on the %s backend and sees the spec codes',
    async (backend) => {
      const root = tmpDir(`peer-${backend}`);
      const gen = path.join(root, 'gen');
      const kubelet = path.join(root, 'kubelet');
      await fs.mkdir(gen);
      const protoc = spawnSync(
        'protoc',
        ['-I', protoDir, `--python_out=${gen}`, 'csi/v1/csi.proto', 'pluginregistration/api.proto'],
        { encoding: 'utf8' },
      );
      expect(protoc.status, protoc.stderr).toBe(0);
      const running = await serveCsiDriver({
        endpoint: `unix://${path.join(root, 'csi.sock')}`,
        nodeId: 'py-node',
        backend,
        stateDir: path.join(root, 'state'),
        enableAttach: true,
        alphaCapabilities: ['volume-condition'],
        pathRoots: [kubelet],
        capacityBytes: 64 * 2 ** 20,
        registrationDir: path.join(root, 'registry'),
      });
      try {
        const py = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
          // asynchronous: the driver answers from this same process
          const child = spawn(PYTHON, [
            path.resolve(here, '../peer/csi_client.py'),
            gen,
            running.socketPath,
            running.registrationSocketPath!,
            kubelet,
            'py-node',
          ]);
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (d: Buffer) => {
            stdout += d;
          });
          child.stderr.on('data', (d: Buffer) => {
            stderr += d;
          });
          child.on('exit', (status: number | null) => resolve({ status, stdout, stderr }));
        });
        expect(py.status, py.stderr).toBe(0);
        const out = JSON.parse(py.stdout);
        const MiB = 2 ** 20;
        expect(out).toMatchObject({
          name: 'kemu.csi.k8s.io',
          plugin_services: [
            'CONTROLLER_SERVICE',
            'GROUP_CONTROLLER_SERVICE',
            'VOLUME_ACCESSIBILITY_CONSTRAINTS',
          ],
          probe_ready: true,
          node_id: 'py-node',
          topology: { 'topology.kemu.csi.k8s.io/node': 'py-node' },
          capacity_bytes: 3 * MiB,
          create_idempotent: true,
          create_incompatible: 'ALREADY_EXISTS',
          publish_context_keys: ['devicePath', 'readonly'],
          condition_abnormal: false,
          listed: [[true, ['py-node']]],
          snapshot: { ready: true, size: 3 * MiB, has_time: true },
          capacity: { available: 61 * MiB, max: 61 * MiB },
          errors: {
            create_without_name: 'INVALID_ARGUMENT',
            list_bad_token: 'ABORTED',
            delete_unknown: 'OK',
            stage_unknown: 'NOT_FOUND',
            unstage_while_published: 'FAILED_PRECONDITION',
            delete_while_published: 'FAILED_PRECONDITION',
            traversal_name: 'INVALID_ARGUMENT',
          },
          restored_from: true,
          target_removed: true,
          left: 0,
          registration: {
            type: 'CSIPlugin',
            name: 'kemu.csi.k8s.io',
            endpoint: running.socketPath,
            versions: ['1.0.0'],
          },
        });
        expect(out.stats.BYTES.total).toBe(3 * MiB);
        if (backend === 'hostpath') {
          expect(out.stats.BYTES.used).toBe(5);
          expect(out.stats.INODES.total).toBeGreaterThan(0);
        }
      } finally {
        await running.close();
        await fs.rm(root, { recursive: true, force: true });
      }
    },
  );
});
