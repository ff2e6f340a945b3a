// Bad input over the socket: precise status codes, and nothing created or changed on disk.
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import type { csi } from '@kemu/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningCsiDriver, serveCsiDriver } from './server.js';
import {
  blockCap,
  call,
  connect,
  expectCode,
  MiB,
  mountCap,
  type SanityClients,
  tmpDir,
} from './test-support.js';

const IA = 3;
const NODE = 'bad-input-node';

async function tree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await fs.readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      out.push(path.relative(dir, p));
      if (e.isDirectory()) await walk(p);
    }
  };
  await walk(dir);
  return out.sort();
}

describe('bad input (hostpath backend, over the socket)', () => {
  let root: string;
  let kubelet: string;
  let state: string;
  let running: RunningCsiDriver;
  let c: SanityClients;
  let vol: csi.Volume;
  let staging: string;

  beforeAll(async () => {
    root = tmpDir('bad-input');
    kubelet = path.join(root, 'kubelet');
    state = path.join(root, 'state');
    staging = path.join(kubelet, 'staging');
    await fs.mkdir(staging, { recursive: true });
    running = await serveCsiDriver({
      endpoint: `unix://${path.join(root, 'csi.sock')}`,
      nodeId: NODE,
      backend: 'hostpath',
      stateDir: state,
      pathRoots: [kubelet],
      capacityBytes: 2 ** 30,
      maxVolumeSizeBytes: 512 * MiB,
    });
    c = connect(running.socketPath);
    vol = (
      await call(c.controller, 'CreateVolume', {
        name: 'good',
        volumeCapabilities: [mountCap()],
        capacityRange: { requiredBytes: MiB },
      })
    ).volume!;
    await call(c.node, 'NodeStageVolume', {
      volumeId: vol.volumeId,
      stagingTargetPath: staging,
      volumeCapability: mountCap(),
    });
  });

  afterAll(async () => {
    await call(c.node, 'NodeUnstageVolume', { volumeId: vol.volumeId, stagingTargetPath: staging });
    await call(c.controller, 'DeleteVolume', { volumeId: vol.volumeId });
    c.close();
    await running.close();
    await fs.rm(root, { recursive: true, force: true });
  });

  const badIds = ['../../etc', 'a/b', 'a\0b', '..', `v-${'x'.repeat(200)}`];

  type Case = [string, () => Promise<unknown>, number, RegExp];
  const cases = (): Case[] => [
    ...badIds.map(
      (id): Case => [
        `CreateVolume name ${JSON.stringify(id.slice(0, 12))}`,
        () => call(c.controller, 'CreateVolume', { name: id, volumeCapabilities: [mountCap()] }),
        IA,
        /name/,
      ],
    ),
    ...badIds.map(
      (id): Case => [
        `DeleteVolume id ${JSON.stringify(id.slice(0, 12))}`,
        () => call(c.controller, 'DeleteVolume', { volumeId: id }),
        IA,
        /volume_id/,
      ],
    ),
    ...badIds.map(
      (id): Case => [
        `NodeStageVolume id ${JSON.stringify(id.slice(0, 12))}`,
        () =>
          call(c.node, 'NodeStageVolume', {
            volumeId: id,
            stagingTargetPath: staging,
            volumeCapability: mountCap(),
          }),
        IA,
        /volume_id/,
      ],
    ),
    [
      'CreateSnapshot name ..',
      () => call(c.controller, 'CreateSnapshot', { name: '..', sourceVolumeId: vol.volumeId }),
      IA,
      /name/,
    ],
    [
      'CreateSnapshot source a/b',
      () => call(c.controller, 'CreateSnapshot', { name: 's', sourceVolumeId: 'a/b' }),
      IA,
      /source_volume_id/,
    ],
    [
      'CreateVolume from snapshot ../x',
      () =>
        call(c.controller, 'CreateVolume', {
          name: 'n',
          volumeCapabilities: [mountCap()],
          volumeContentSource: { snapshot: { snapshotId: '../x' } },
        }),
      IA,
      /snapshot_id/,
    ],
    [
      'DeleteSnapshot id /etc/passwd',
      () => call(c.controller, 'DeleteSnapshot', { snapshotId: '/etc/passwd' }),
      IA,
      /snapshot_id/,
    ],
    [
      'NodePublishVolume target outside the roots',
      () =>
        call(c.node, 'NodePublishVolume', {
          volumeId: vol.volumeId,
          stagingTargetPath: staging,
          targetPath: path.join(root, 'escape'),
          volumeCapability: mountCap(),
        }),
      IA,
      /outside the allowed roots/,
    ],
    [
      'NodePublishVolume target with ..',
      () =>
        call(c.node, 'NodePublishVolume', {
          volumeId: vol.volumeId,
          stagingTargetPath: staging,
          targetPath: `${kubelet}/../escape`,
          volumeCapability: mountCap(),
        }),
      IA,
      /\.\./,
    ],
    [
      'NodePublishVolume relative target',
      () =>
        call(c.node, 'NodePublishVolume', {
          volumeId: vol.volumeId,
          stagingTargetPath: staging,
          targetPath: 'pods/x',
          volumeCapability: mountCap(),
        }),
      IA,
      /absolute/,
    ],
    [
      'NodePublishVolume target with NUL',
      () =>
        call(c.node, 'NodePublishVolume', {
          volumeId: vol.volumeId,
          stagingTargetPath: staging,
          targetPath: `${kubelet}/a\0b`,
          volumeCapability: mountCap(),
        }),
      IA,
      /NUL/,
    ],
    [
      'NodeStageVolume staging in /etc',
      () =>
        call(c.node, 'NodeStageVolume', {
          volumeId: vol.volumeId,
          stagingTargetPath: '/etc/kemu-evil',
          volumeCapability: mountCap(),
        }),
      IA,
      /outside/,
    ],
    [
      'NodePublishVolume unsupported mount flag',
      () =>
        call(c.node, 'NodePublishVolume', {
          volumeId: vol.volumeId,
          stagingTargetPath: staging,
          targetPath: `${kubelet}/t1`,
          volumeCapability: { accessMode: { mode: 1 }, mount: { mountFlags: ['uid=0'] } },
        }),
      IA,
      /mount flag "uid=0"/,
    ],
    [
      'NodePublishVolume unsupported fs type',
      () =>
        call(c.node, 'NodePublishVolume', {
          volumeId: vol.volumeId,
          stagingTargetPath: staging,
          targetPath: `${kubelet}/t2`,
          volumeCapability: { accessMode: { mode: 1 }, mount: { fsType: 'ntfs' } },
        }),
      IA,
      /fs_type "ntfs"/,
    ],
    [
      'NodePublishVolume non-numeric mount group',
      () =>
        call(c.node, 'NodePublishVolume', {
          volumeId: vol.volumeId,
          stagingTargetPath: staging,
          targetPath: `${kubelet}/t3`,
          volumeCapability: { accessMode: { mode: 1 }, mount: { volumeMountGroup: 'wheel' } },
        }),
      IA,
      /numeric group id/,
    ],
    [
      'NodePublishVolume block capability on a mount volume',
      () =>
        call(c.node, 'NodePublishVolume', {
          volumeId: vol.volumeId,
          stagingTargetPath: staging,
          targetPath: `${kubelet}/t4`,
          volumeCapability: blockCap(),
        }),
      IA,
      /mount volume/,
    ],
    [
      'CreateVolume negative size',
      () =>
        call(c.controller, 'CreateVolume', {
          name: 'neg',
          volumeCapabilities: [mountCap()],
          capacityRange: { requiredBytes: -1 },
        }),
      IA,
      /must not be negative/,
    ],
    [
      'CreateVolume 2^62 bytes',
      () =>
        call(c.controller, 'CreateVolume', {
          name: 'huge',
          volumeCapabilities: [mountCap()],
          capacityRange: { requiredBytes: 2 ** 62 },
        }),
      11,
      /too large/,
    ],
    [
      'CreateVolume above the maximum volume size',
      () =>
        call(c.controller, 'CreateVolume', {
          name: 'big',
          volumeCapabilities: [mountCap()],
          capacityRange: { requiredBytes: 513 * MiB },
        }),
      11,
      /maximum volume size of 512Mi/,
    ],
    [
      'CreateVolume limit below required',
      () =>
        call(c.controller, 'CreateVolume', {
          name: 'inv',
          volumeCapabilities: [mountCap()],
          capacityRange: { requiredBytes: 2 * MiB, limitBytes: MiB },
        }),
      IA,
      /exceeds limit_bytes/,
    ],
    [
      'CreateVolume unknown parameter',
      () =>
        call(c.controller, 'CreateVolume', {
          name: 'p1',
          volumeCapabilities: [mountCap()],
          parameters: { color: 'red' },
        }),
      IA,
      /unknown parameter "color"; supported: tier, iops, throughput/,
    ],
    [
      'CreateVolume bad parameter value',
      () =>
        call(c.controller, 'CreateVolume', {
          name: 'p2',
          volumeCapabilities: [mountCap()],
          parameters: { iops: 'lots' },
        }),
      IA,
      /iops="lots" must be a positive integer/,
    ],
    [
      'CreateVolume immutable key as mutable parameter',
      () =>
        call(c.controller, 'CreateVolume', {
          name: 'p3',
          volumeCapabilities: [mountCap()],
          mutableParameters: { 'csi.storage.k8s.io/pvc/name': 'x' },
        }),
      IA,
      /unknown mutable parameter/,
    ],
    [
      'CreateSnapshot unknown parameter',
      () =>
        call(c.controller, 'CreateSnapshot', {
          name: 's1',
          sourceVolumeId: vol.volumeId,
          parameters: { fast: 'yes' },
        }),
      IA,
      /unknown snapshot parameter/,
    ],
    [
      'CreateVolume access mode UNKNOWN',
      () =>
        call(c.controller, 'CreateVolume', {
          name: 'm0',
          volumeCapabilities: [{ mount: {}, accessMode: { mode: 0 } }],
        }),
      IA,
      /access_mode/,
    ],
    [
      'ListVolumes negative max_entries',
      () => call(c.controller, 'ListVolumes', { maxEntries: -5 }),
      IA,
      /max_entries/,
    ],
    [
      'ListVolumes forged token',
      () => call(c.controller, 'ListVolumes', { startingToken: '../../9' }),
      10,
      /starting_token/,
    ],
    [
      'ListSnapshots token past the end',
      () => call(c.controller, 'ListSnapshots', { startingToken: '999' }),
      10,
      /starting_token/,
    ],
    [
      'ControllerExpandVolume negative size',
      () =>
        call(c.controller, 'ControllerExpandVolume', {
          volumeId: vol.volumeId,
          capacityRange: { requiredBytes: -10 },
        }),
      IA,
      /negative/,
    ],
  ];

  it('answers each with the precise status, a message naming the problem, and no change on disk', async () => {
    const before = await tree(root);
    const stateBefore = await fs.readFile(path.join(state, 'state.json'), 'utf8');
    for (const [what, fn, code, msg] of cases()) {
      const details = await expectCode(fn(), code).catch((e) => {
        throw new Error(`${what}: ${(e as Error).message}`);
      });
      expect(details, what).toMatch(msg);
      expect(details, what).not.toMatch(/\n\s+at /);
    }
    expect(await tree(root)).toEqual(before);
    expect(await fs.readFile(path.join(state, 'state.json'), 'utf8')).toBe(stateBefore);
    expect(existsSync('/etc/kemu-evil')).toBe(false);
    expect((await call(c.controller, 'ListVolumes', {})).entries!.map((e) => e.volume!.volumeId)).toEqual([
      vol.volumeId,
    ]);
  });
});
