// The project's sanity suite: the ground csi-sanity (kubernetes-csi/csi-test pkg/sanity) covers for
// Identity, Controller, Node and snapshots, plus the spec's state machine, run over the real unix socket
// against both backends.
import { promises as fs, statSync } from 'node:fs';
import path from 'node:path';
import { csi } from '@kemu/proto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { ALPHA_CAPABILITY_NAMES } from './capabilities.js';
import { canMount, isMountPoint, unmount } from './mount.js';
import { type RunningCsiDriver, serveCsiDriver } from './server.js';
import {
  MiB,
  blockCap,
  call,
  connect,
  expectCode,
  mountCap,
  type SanityClients,
  tmpDir,
  unique,
} from './test-support.js';

const S = csi.VolumeCapability_AccessMode_Mode;
const C = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
};
const SIZE = 10 * MiB;
const EXPAND = 20 * MiB;
const NODE = 'sanity-node';

// Without root the hostpath backend publishes with its symlink fallback; the bind-mount checks need root.
const bindMounts = requirePeers('the hostpath sanity bind-mount checks', [peers.root]) && canMount;

describe.each(['sim', 'hostpath'] as const)('sanity: %s backend over the socket', (backend) => {
  let root: string;
  let kubelet: string;
  let running: RunningCsiDriver;
  let c: SanityClients;
  let staging: string;
  let targetDir: string;
  let target: string;

  beforeAll(async () => {
    root = tmpDir(`sanity-${backend}`);
    kubelet = path.join(root, 'kubelet');
    running = await serveCsiDriver({
      endpoint: `unix://${path.join(root, 'csi.sock')}`,
      nodeId: NODE,
      backend,
      stateDir: path.join(root, 'state'),
      enableAttach: true,
      capacityBytes: 4 * 2 ** 30,
      pathRoots: [kubelet],
      // the suite covers the alpha RPCs too
      alphaCapabilities: ALPHA_CAPABILITY_NAMES,
    });
    c = connect(running.socketPath);
  });

  afterAll(async () => {
    c?.close();
    await running?.close();
    await fs.rm(root, { recursive: true, force: true });
  });

  registerCleanup();
  function registerCleanup() {
    // like csi-sanity: undo whatever a test left published, staged or created
    afterEach(async () => {
      const st = running.driver.snapshotState();
      for (const v of Object.values(st.volumes)) {
        for (const t of Object.keys(v.targets))
          await call(c.node, 'NodeUnpublishVolume', { volumeId: v.id, targetPath: t });
        if (v.staged)
          await call(c.node, 'NodeUnstageVolume', { volumeId: v.id, stagingTargetPath: v.staged.path });
        for (const n of Object.keys(v.published))
          await call(c.controller, 'ControllerUnpublishVolume', { volumeId: v.id, nodeId: n });
      }
      for (const g of Object.values(st.groupSnapshots)) {
        await call(c.group, 'DeleteVolumeGroupSnapshot', {
          groupSnapshotId: g.id,
          snapshotIds: g.snapshotIds,
        });
      }
      for (const s of Object.keys(st.snapshots))
        await call(c.controller, 'DeleteSnapshot', { snapshotId: s }).catch(() => {});
      for (const v of Object.keys(st.volumes)) await call(c.controller, 'DeleteVolume', { volumeId: v });
      expect(Object.keys(running.driver.snapshotState().volumes)).toEqual([]);
    });
  }

  const dirs = async () => {
    const base = path.join(kubelet, unique('pod'));
    staging = path.join(base, 'staging');
    targetDir = path.join(base, 'mount');
    target = path.join(targetDir, 'target');
    await fs.mkdir(staging, { recursive: true });
    await fs.mkdir(targetDir, { recursive: true });
  };

  const create = async (name = unique('vol'), extra: Partial<csi.CreateVolumeRequest> = {}) => {
    const r = await call(c.controller, 'CreateVolume', {
      name,
      volumeCapabilities: [mountCap()],
      capacityRange: { requiredBytes: SIZE },
      ...extra,
    });
    return r.volume!;
  };

  const fullPublish = async (vol: csi.Volume, cap = mountCap()) => {
    await dirs();
    const pub = await call(c.controller, 'ControllerPublishVolume', {
      volumeId: vol.volumeId,
      nodeId: NODE,
      volumeCapability: cap,
    });
    await call(c.node, 'NodeStageVolume', {
      volumeId: vol.volumeId,
      stagingTargetPath: staging,
      volumeCapability: cap,
      publishContext: pub.publishContext,
    });
    await call(c.node, 'NodePublishVolume', {
      volumeId: vol.volumeId,
      stagingTargetPath: staging,
      targetPath: target,
      volumeCapability: cap,
      publishContext: pub.publishContext,
    });
  };

  describe('Identity', () => {
    it('GetPluginInfo names the driver and its version', async () => {
      const r = await call(c.identity, 'GetPluginInfo', {});
      expect(r.name).toBe('kemu.csi.k8s.io');
      expect(r.vendorVersion).toMatch(/^\d+\.\d+\.\d+/);
    });
    it('GetPluginCapabilities advertises controller, topology, group controller and online expansion', async () => {
      const r = await call(c.identity, 'GetPluginCapabilities', {});
      const services = r.capabilities!.filter((x) => x.service).map((x) => x.service!.type);
      expect(services.sort()).toEqual([1, 2, 3]);
      expect(r.capabilities!.find((x) => x.volumeExpansion)?.volumeExpansion?.type).toBe(
        csi.PluginCapability_VolumeExpansion_Type.ONLINE,
      );
    });
    it('Probe answers ready', async () => {
      expect((await call(c.identity, 'Probe', {})).ready?.value).toBe(true);
    });
  });

  describe('Controller', () => {
    it('ControllerGetCapabilities lists only known RPC types', async () => {
      const r = await call(c.controller, 'ControllerGetCapabilities', {});
      const types = r.capabilities!.map((x) => x.rpc!.type!);
      for (const t of types) expect(csi.ControllerServiceCapability_RPC_Type[t]).toBeDefined();
      expect(types).toContain(csi.ControllerServiceCapability_RPC_Type.PUBLISH_UNPUBLISH_VOLUME);
      expect(types).toContain(csi.ControllerServiceCapability_RPC_Type.MODIFY_VOLUME);
      expect(types).toContain(csi.ControllerServiceCapability_RPC_Type.GET_SNAPSHOT);
    });

    it('GetCapacity without arguments, per topology segment, and shrinking as volumes are created', async () => {
      const before = await call(c.controller, 'GetCapacity', {});
      expect(before.availableCapacity).toBe(4 * 2 ** 30);
      const ntfs = { accessMode: { mode: S.SINGLE_NODE_WRITER }, mount: { fsType: 'ntfs' } };
      expect(
        (await call(c.controller, 'GetCapacity', { volumeCapabilities: [ntfs] })).availableCapacity,
      ).toBe(0);
      const other = await call(c.controller, 'GetCapacity', {
        accessibleTopology: { segments: { 'topology.kemu.csi.k8s.io/node': 'elsewhere' } },
      });
      expect(other.availableCapacity).toBe(0);
      const mine = await call(c.controller, 'GetCapacity', {
        accessibleTopology: { segments: { 'topology.kemu.csi.k8s.io/node': NODE } },
      });
      expect(mine.availableCapacity).toBe(before.availableCapacity);
      await create();
      const after = await call(c.controller, 'GetCapacity', { volumeCapabilities: [mountCap()] });
      expect(after.availableCapacity).toBe(before.availableCapacity! - SIZE);
      expect(after.maximumVolumeSize?.value).toBe(after.availableCapacity);
    });

    describe('CreateVolume', () => {
      it('fails without a name', async () => {
        await expectCode(
          call(c.controller, 'CreateVolume', { volumeCapabilities: [mountCap()] }),
          C.INVALID_ARGUMENT,
        );
      });
      it('fails without volume capabilities', async () => {
        await expectCode(call(c.controller, 'CreateVolume', { name: unique('v') }), C.INVALID_ARGUMENT);
      });
      it('fails for a capability without access type or access mode', async () => {
        await expectCode(
          call(c.controller, 'CreateVolume', {
            name: unique('v'),
            volumeCapabilities: [{ accessMode: { mode: S.SINGLE_NODE_WRITER } }],
          }),
          C.INVALID_ARGUMENT,
        );
        await expectCode(
          call(c.controller, 'CreateVolume', { name: unique('v'), volumeCapabilities: [{ mount: {} }] }),
          C.INVALID_ARGUMENT,
        );
      });
      it('fails when block and mount are mixed', async () => {
        await expectCode(
          call(c.controller, 'CreateVolume', {
            name: unique('v'),
            volumeCapabilities: [mountCap(), blockCap()],
          }),
          C.INVALID_ARGUMENT,
        );
      });
      it('creates without capacity (default size) and with capacity (at least the requested bytes)', async () => {
        const a = await call(c.controller, 'CreateVolume', {
          name: unique('v'),
          volumeCapabilities: [mountCap()],
        });
        expect(a.volume!.capacityBytes).toBeGreaterThan(0);
        const b = await create();
        expect(b.capacityBytes).toBeGreaterThanOrEqual(SIZE);
        expect(b.accessibleTopology).toEqual([{ segments: { 'topology.kemu.csi.k8s.io/node': NODE } }]);
      });
      it('is idempotent for the same name and capacity', async () => {
        const name = unique('twice');
        const a = await create(name);
        const b = await create(name);
        expect(b.volumeId).toBe(a.volumeId);
        expect(
          (await call(c.controller, 'ListVolumes', {})).entries!.filter(
            (e) => e.volume!.volumeId === a.volumeId,
          ),
        ).toHaveLength(1);
      });
      it('answers ALREADY_EXISTS for the same name with another capacity', async () => {
        const name = unique('twice-diff');
        await create(name, { capacityRange: { requiredBytes: SIZE, limitBytes: SIZE } });
        await expectCode(
          create(name, { capacityRange: { requiredBytes: 2 * SIZE, limitBytes: 2 * SIZE } }),
          C.ALREADY_EXISTS,
        );
      });
      it('accepts a 128-byte name and refuses 129 bytes', async () => {
        const name = `maxlen-${'x'.repeat(121)}`;
        expect(name).toHaveLength(128);
        await create(name);
        await expectCode(create(`${name}y`), C.INVALID_ARGUMENT);
      });
      it('creates a block volume', async () => {
        const v = await create(unique('blk'), { volumeCapabilities: [blockCap()] });
        expect(v.volumeContext!['kemu.csi.k8s.io/access-type']).toBe('block');
      });
      it('restores from a snapshot and fails NOT_FOUND for a missing one', async () => {
        const src = await create();
        const snap = (
          await call(c.controller, 'CreateSnapshot', { name: unique('snap'), sourceVolumeId: src.volumeId })
        ).snapshot!;
        expect(snap.readyToUse).toBe(true);
        const v = await create(unique('from-snap'), {
          volumeContentSource: { snapshot: { snapshotId: snap.snapshotId } },
        });
        expect(v.contentSource?.snapshot?.snapshotId).toBe(snap.snapshotId);
        await expectCode(
          create(unique('x'), {
            volumeContentSource: { snapshot: { snapshotId: 'non-existing-snapshot-id' } },
          }),
          C.NOT_FOUND,
        );
      });
      it('clones a volume and fails NOT_FOUND for a missing source', async () => {
        const src = await create();
        const v = await create(unique('clone'), {
          volumeContentSource: { volume: { volumeId: src.volumeId } },
        });
        expect(v.contentSource?.volume?.volumeId).toBe(src.volumeId);
        await expectCode(
          create(unique('x'), { volumeContentSource: { volume: { volumeId: 'no-such-volume' } } }),
          C.NOT_FOUND,
        );
      });
      it('honours requisite topology', async () => {
        await create(unique('topo'), {
          accessibilityRequirements: { requisite: [{ segments: { 'topology.kemu.csi.k8s.io/node': NODE } }] },
        });
        await expectCode(
          create(unique('topo'), {
            accessibilityRequirements: {
              requisite: [{ segments: { 'topology.kemu.csi.k8s.io/node': 'other' } }],
            },
          }),
          C.RESOURCE_EXHAUSTED,
        );
      });
      it('answers RESOURCE_EXHAUSTED beyond the free capacity', async () => {
        await expectCode(
          create(unique('big'), { capacityRange: { requiredBytes: 5 * 2 ** 30 } }),
          C.OUT_OF_RANGE,
        );
        await create(unique('fill'), { capacityRange: { requiredBytes: 3 * 2 ** 30 } });
        await expectCode(
          create(unique('big'), { capacityRange: { requiredBytes: 2 ** 30 + 1 } }),
          C.RESOURCE_EXHAUSTED,
        );
      });
    });

    describe('DeleteVolume', () => {
      it('fails without a volume id', async () => {
        await expectCode(call(c.controller, 'DeleteVolume', {}), C.INVALID_ARGUMENT);
      });
      it('succeeds for an unknown volume id', async () => {
        await call(c.controller, 'DeleteVolume', { volumeId: 'reallyfakevolumeid' });
      });
      it('deletes, and refuses while the volume is published', async () => {
        const v = await create();
        await fullPublish(v);
        await expectCode(call(c.controller, 'DeleteVolume', { volumeId: v.volumeId }), C.FAILED_PRECONDITION);
        await call(c.node, 'NodeUnpublishVolume', { volumeId: v.volumeId, targetPath: target });
        await call(c.node, 'NodeUnstageVolume', { volumeId: v.volumeId, stagingTargetPath: staging });
        await call(c.controller, 'ControllerUnpublishVolume', { volumeId: v.volumeId, nodeId: NODE });
        await call(c.controller, 'DeleteVolume', { volumeId: v.volumeId });
        await call(c.controller, 'DeleteVolume', { volumeId: v.volumeId });
        await expectCode(call(c.controller, 'ControllerGetVolume', { volumeId: v.volumeId }), C.NOT_FOUND);
      });
    });

    describe('ValidateVolumeCapabilities', () => {
      it('fails without volume id or capabilities', async () => {
        await expectCode(call(c.controller, 'ValidateVolumeCapabilities', {}), C.INVALID_ARGUMENT);
        const v = await create();
        await expectCode(
          call(c.controller, 'ValidateVolumeCapabilities', { volumeId: v.volumeId }),
          C.INVALID_ARGUMENT,
        );
      });
      it('confirms supported capabilities and echoes them', async () => {
        const v = await create();
        const r = await call(c.controller, 'ValidateVolumeCapabilities', {
          volumeId: v.volumeId,
          volumeCapabilities: [mountCap()],
        });
        expect(r.confirmed?.volumeCapabilities).toHaveLength(1);
        const no = await call(c.controller, 'ValidateVolumeCapabilities', {
          volumeId: v.volumeId,
          volumeCapabilities: [blockCap()],
        });
        expect(no.confirmed).toBeNull();
        expect(no.message).toMatch(/mount volume/);
      });
      it('fails NOT_FOUND for an unknown volume', async () => {
        await expectCode(
          call(c.controller, 'ValidateVolumeCapabilities', {
            volumeId: 'no-such',
            volumeCapabilities: [mountCap()],
          }),
          C.NOT_FOUND,
        );
      });
    });

    describe('ListVolumes', () => {
      it('lists with published node ids and condition; an invalid token is ABORTED', async () => {
        const v = await create();
        await call(c.controller, 'ControllerPublishVolume', {
          volumeId: v.volumeId,
          nodeId: NODE,
          volumeCapability: mountCap(),
        });
        const r = await call(c.controller, 'ListVolumes', {});
        const e = r.entries!.find((x) => x.volume!.volumeId === v.volumeId)!;
        expect(e.status!.publishedNodeIds).toEqual([NODE]);
        expect(e.status!.volumeCondition).toEqual({ abnormal: false, message: 'volume is healthy' });
        await expectCode(call(c.controller, 'ListVolumes', { startingToken: 'invalid-token' }), C.ABORTED);
        await expectCode(call(c.controller, 'ListVolumes', { maxEntries: -1 }), C.INVALID_ARGUMENT);
      });
      it('shows new volumes and drops deleted ones', async () => {
        const n0 = (await call(c.controller, 'ListVolumes', {})).entries!.length;
        const v = await create('sanity');
        expect((await call(c.controller, 'ListVolumes', {})).entries).toHaveLength(n0 + 1);
        await call(c.controller, 'DeleteVolume', { volumeId: v.volumeId });
        expect((await call(c.controller, 'ListVolumes', {})).entries).toHaveLength(n0);
      });
      it('paginates with next_token until every volume was seen once', async () => {
        const ids = new Set<string>();
        for (let i = 0; i < 5; i++) ids.add((await create()).volumeId!);
        const seen: string[] = [];
        let token = '';
        do {
          const r = await call(c.controller, 'ListVolumes', { maxEntries: 2, startingToken: token });
          expect(r.entries!.length).toBeLessThanOrEqual(2);
          seen.push(...r.entries!.map((e) => e.volume!.volumeId!));
          token = r.nextToken!;
        } while (token);
        expect(seen.sort()).toEqual([...ids].sort());
      });
    });

    describe('ControllerPublishVolume', () => {
      it('fails without volume id, node id or capability', async () => {
        await expectCode(call(c.controller, 'ControllerPublishVolume', {}), C.INVALID_ARGUMENT);
        await expectCode(
          call(c.controller, 'ControllerPublishVolume', { volumeId: 'x' }),
          C.INVALID_ARGUMENT,
        );
        await expectCode(
          call(c.controller, 'ControllerPublishVolume', { volumeId: 'x', nodeId: NODE }),
          C.INVALID_ARGUMENT,
        );
      });
      it('fails NOT_FOUND for an unknown volume or node', async () => {
        await expectCode(
          call(c.controller, 'ControllerPublishVolume', {
            volumeId: 'no-such',
            nodeId: NODE,
            volumeCapability: mountCap(),
          }),
          C.NOT_FOUND,
        );
        const v = await create();
        await expectCode(
          call(c.controller, 'ControllerPublishVolume', {
            volumeId: v.volumeId,
            nodeId: 'no-such-node',
            volumeCapability: mountCap(),
          }),
          C.NOT_FOUND,
        );
      });
      it('is idempotent, and ALREADY_EXISTS for an incompatible repeat', async () => {
        const v = await create();
        const req = { volumeId: v.volumeId, nodeId: NODE, volumeCapability: mountCap(), readonly: false };
        const a = await call(c.controller, 'ControllerPublishVolume', req);
        const b = await call(c.controller, 'ControllerPublishVolume', req);
        expect(b.publishContext).toEqual(a.publishContext);
        expect(a.publishContext!.devicePath).toBeTruthy();
        await expectCode(
          call(c.controller, 'ControllerPublishVolume', { ...req, readonly: true }),
          C.ALREADY_EXISTS,
        );
      });
      it('ControllerUnpublishVolume fails without volume id and is idempotent', async () => {
        await expectCode(call(c.controller, 'ControllerUnpublishVolume', {}), C.INVALID_ARGUMENT);
        const v = await create();
        await call(c.controller, 'ControllerPublishVolume', {
          volumeId: v.volumeId,
          nodeId: NODE,
          volumeCapability: mountCap(),
        });
        await call(c.controller, 'ControllerUnpublishVolume', { volumeId: v.volumeId, nodeId: NODE });
        await call(c.controller, 'ControllerUnpublishVolume', { volumeId: v.volumeId, nodeId: NODE });
        await call(c.controller, 'ControllerUnpublishVolume', { volumeId: 'gone', nodeId: NODE });
        expect(
          (await call(c.controller, 'ControllerGetVolume', { volumeId: v.volumeId })).status!
            .publishedNodeIds,
        ).toEqual([]);
      });
    });

    describe('snapshots', () => {
      it('CreateSnapshot fails without name or source volume', async () => {
        await expectCode(
          call(c.controller, 'CreateSnapshot', { sourceVolumeId: 'testId' }),
          C.INVALID_ARGUMENT,
        );
        await expectCode(call(c.controller, 'CreateSnapshot', { name: 'name' }), C.INVALID_ARGUMENT);
      });
      it('CreateSnapshot is idempotent; same name with another source is ALREADY_EXISTS; 128-byte names work', async () => {
        const v1 = await create();
        const v2 = await create();
        const name = unique('snap');
        const a = (await call(c.controller, 'CreateSnapshot', { name, sourceVolumeId: v1.volumeId }))
          .snapshot!;
        const b = (await call(c.controller, 'CreateSnapshot', { name, sourceVolumeId: v1.volumeId }))
          .snapshot!;
        expect(b.snapshotId).toBe(a.snapshotId);
        expect(a.sizeBytes).toBe(SIZE);
        expect(a.creationTime!.seconds).toBeGreaterThan(0);
        await expectCode(
          call(c.controller, 'CreateSnapshot', { name, sourceVolumeId: v2.volumeId }),
          C.ALREADY_EXISTS,
        );
        await call(c.controller, 'CreateSnapshot', {
          name: `s-${'y'.repeat(126)}`,
          sourceVolumeId: v1.volumeId,
        });
      });
      it('CreateSnapshot fails NOT_FOUND for an unknown source', async () => {
        await expectCode(
          call(c.controller, 'CreateSnapshot', { name: unique('s'), sourceVolumeId: 'no-such' }),
          C.NOT_FOUND,
        );
      });
      it('DeleteSnapshot fails without id and succeeds for an unknown id', async () => {
        await expectCode(call(c.controller, 'DeleteSnapshot', {}), C.INVALID_ARGUMENT);
        await call(c.controller, 'DeleteSnapshot', { snapshotId: 'reallyfakesnapshotid' });
      });
      it('ListSnapshots filters by snapshot id and source volume, shows new and drops deleted, paginates', async () => {
        const made: csi.Snapshot[] = [];
        for (let i = 0; i < 5; i++) {
          const v = await create();
          made.push(
            (await call(c.controller, 'CreateSnapshot', { name: unique('ls'), sourceVolumeId: v.volumeId }))
              .snapshot!,
          );
        }
        const byId = await call(c.controller, 'ListSnapshots', { snapshotId: made[2]!.snapshotId });
        expect(byId.entries!.map((e) => e.snapshot!.snapshotId)).toEqual([made[2]!.snapshotId]);
        const bySrc = await call(c.controller, 'ListSnapshots', { sourceVolumeId: made[3]!.sourceVolumeId });
        expect(bySrc.entries!.map((e) => e.snapshot!.snapshotId)).toEqual([made[3]!.snapshotId]);
        expect((await call(c.controller, 'ListSnapshots', { snapshotId: 'none-exist-id' })).entries).toEqual(
          [],
        );
        expect(
          (await call(c.controller, 'ListSnapshots', { sourceVolumeId: 'none-exist-id' })).entries,
        ).toEqual([]);
        const total = (await call(c.controller, 'ListSnapshots', {})).entries!.length;
        const first = await call(c.controller, 'ListSnapshots', { maxEntries: 2 });
        expect(first.entries).toHaveLength(2);
        const rest = await call(c.controller, 'ListSnapshots', { startingToken: first.nextToken });
        expect(rest.entries).toHaveLength(total - 2);
        expect(rest.nextToken).toBe('');
        await call(c.controller, 'DeleteSnapshot', { snapshotId: made[0]!.snapshotId });
        expect((await call(c.controller, 'ListSnapshots', {})).entries).toHaveLength(total - 1);
        await expectCode(call(c.controller, 'ListSnapshots', { startingToken: 'bogus' }), C.ABORTED);
      });
      it('GetSnapshot returns a snapshot and NOT_FOUND for an unknown one', async () => {
        const v = await create();
        const s = (
          await call(c.controller, 'CreateSnapshot', { name: unique('g'), sourceVolumeId: v.volumeId })
        ).snapshot!;
        expect(
          (await call(c.controller, 'GetSnapshot', { snapshotId: s.snapshotId })).snapshot!.sourceVolumeId,
        ).toBe(v.volumeId);
        await expectCode(call(c.controller, 'GetSnapshot', { snapshotId: 'nope' }), C.NOT_FOUND);
      });
    });

    describe('ControllerExpandVolume, ControllerGetVolume, ControllerModifyVolume', () => {
      it('expand fails without volume id or capacity range', async () => {
        await expectCode(
          call(c.controller, 'ControllerExpandVolume', { capacityRange: { requiredBytes: EXPAND } }),
          C.INVALID_ARGUMENT,
        );
        await expectCode(call(c.controller, 'ControllerExpandVolume', { volumeId: '' }), C.INVALID_ARGUMENT);
        const v = await create();
        await expectCode(
          call(c.controller, 'ControllerExpandVolume', { volumeId: v.volumeId }),
          C.INVALID_ARGUMENT,
        );
      });
      it('expands to exactly the requested size and never shrinks', async () => {
        const v = await create();
        const r = await call(c.controller, 'ControllerExpandVolume', {
          volumeId: v.volumeId,
          capacityRange: { requiredBytes: EXPAND },
          volumeCapability: mountCap(),
        });
        expect(r.capacityBytes).toBe(EXPAND);
        expect(r.nodeExpansionRequired).toBe(true);
        const again = await call(c.controller, 'ControllerExpandVolume', {
          volumeId: v.volumeId,
          capacityRange: { requiredBytes: SIZE },
        });
        expect(again.capacityBytes).toBe(EXPAND);
        expect(
          (await call(c.controller, 'ControllerGetVolume', { volumeId: v.volumeId })).volume!.capacityBytes,
        ).toBe(EXPAND);
        await expectCode(
          call(c.controller, 'ControllerExpandVolume', {
            volumeId: 'no-such',
            capacityRange: { requiredBytes: EXPAND },
          }),
          C.NOT_FOUND,
        );
        await expectCode(
          call(c.controller, 'ControllerExpandVolume', {
            volumeId: v.volumeId,
            capacityRange: { requiredBytes: 2 ** 40 },
          }),
          C.OUT_OF_RANGE,
        );
      });
      it('expands a block volume without node expansion', async () => {
        const v = await create(unique('blk'), { volumeCapabilities: [blockCap()] });
        const r = await call(c.controller, 'ControllerExpandVolume', {
          volumeId: v.volumeId,
          capacityRange: { requiredBytes: EXPAND },
        });
        expect(r).toEqual({ capacityBytes: EXPAND, nodeExpansionRequired: false });
        if (backend === 'hostpath')
          expect(
            statSync(
              running.backend.devicePath({ id: v.volumeId!, accessType: 'block', capacityBytes: EXPAND }),
            ).size,
          ).toBe(EXPAND);
      });
      it('modifies mutable parameters and refuses unknown ones', async () => {
        const v = await create(unique('mod'), {
          parameters: { tier: 'standard' },
          mutableParameters: { iops: '100' },
        });
        await call(c.controller, 'ControllerModifyVolume', {
          volumeId: v.volumeId,
          mutableParameters: { iops: '500', tier: 'fast' },
        });
        const ok = await call(c.controller, 'ValidateVolumeCapabilities', {
          volumeId: v.volumeId,
          volumeCapabilities: [mountCap()],
          mutableParameters: { iops: '500', tier: 'fast' },
        });
        expect(ok.confirmed).not.toBeNull();
        await expectCode(
          call(c.controller, 'ControllerModifyVolume', {
            volumeId: v.volumeId,
            mutableParameters: { color: 'red' },
          }),
          C.INVALID_ARGUMENT,
        );
        await expectCode(
          call(c.controller, 'ControllerModifyVolume', {
            volumeId: v.volumeId,
            mutableParameters: { iops: '-1' },
          }),
          C.INVALID_ARGUMENT,
        );
        await expectCode(
          call(c.controller, 'ControllerModifyVolume', {
            volumeId: 'no-such',
            mutableParameters: { iops: '5' },
          }),
          C.NOT_FOUND,
        );
      });
    });
  });

  describe('Node', () => {
    it('NodeGetCapabilities lists only known types, including stage/unstage', async () => {
      const r = await call(c.node, 'NodeGetCapabilities', {});
      const types = r.capabilities!.map((x) => x.rpc!.type!);
      for (const t of types) expect(csi.NodeServiceCapability_RPC_Type[t]).toBeDefined();
      expect(types).toContain(csi.NodeServiceCapability_RPC_Type.STAGE_UNSTAGE_VOLUME);
    });
    it('NodeGetInfo reports node id, max volumes and topology', async () => {
      const r = await call(c.node, 'NodeGetInfo', {});
      expect(r).toEqual({
        nodeId: NODE,
        maxVolumesPerNode: 0,
        accessibleTopology: { segments: { 'topology.kemu.csi.k8s.io/node': NODE } },
      });
    });
    it('NodePublishVolume fails without volume id, target path or capability', async () => {
      await dirs();
      await expectCode(call(c.node, 'NodePublishVolume', {}), C.INVALID_ARGUMENT);
      await expectCode(call(c.node, 'NodePublishVolume', { volumeId: 'some-id' }), C.INVALID_ARGUMENT);
      await expectCode(
        call(c.node, 'NodePublishVolume', {
          volumeId: 'some-id',
          targetPath: target,
          stagingTargetPath: staging,
        }),
        C.INVALID_ARGUMENT,
      );
    });
    it('NodeUnpublishVolume fails without volume id or target path', async () => {
      await expectCode(call(c.node, 'NodeUnpublishVolume', {}), C.INVALID_ARGUMENT);
      await expectCode(call(c.node, 'NodeUnpublishVolume', { volumeId: 'some-id' }), C.INVALID_ARGUMENT);
    });
    it('NodeStageVolume fails without volume id, staging path or capability', async () => {
      await dirs();
      await expectCode(
        call(c.node, 'NodeStageVolume', { stagingTargetPath: staging, volumeCapability: mountCap() }),
        C.INVALID_ARGUMENT,
      );
      await expectCode(
        call(c.node, 'NodeStageVolume', { volumeId: 'some-id', volumeCapability: mountCap() }),
        C.INVALID_ARGUMENT,
      );
      const v = await create();
      await expectCode(
        call(c.node, 'NodeStageVolume', { volumeId: v.volumeId, stagingTargetPath: staging }),
        C.INVALID_ARGUMENT,
      );
      await expectCode(
        call(c.node, 'NodeStageVolume', {
          volumeId: 'no-such',
          stagingTargetPath: staging,
          volumeCapability: mountCap(),
        }),
        C.NOT_FOUND,
      );
    });
    it('NodeUnstageVolume fails without volume id or staging path', async () => {
      await dirs();
      await expectCode(call(c.node, 'NodeUnstageVolume', { stagingTargetPath: staging }), C.INVALID_ARGUMENT);
      await expectCode(call(c.node, 'NodeUnstageVolume', { volumeId: 'some-id' }), C.INVALID_ARGUMENT);
    });
    it('NodeUnpublishVolume removes the target path it created', async () => {
      const v = await create();
      await fullPublish(v);
      if (backend === 'hostpath') expect(statSync(target).isDirectory()).toBe(true);
      await call(c.node, 'NodeUnpublishVolume', { volumeId: v.volumeId, targetPath: target });
      await expect(fs.lstat(target)).rejects.toThrow(/ENOENT/);
      await expectCode(
        call(c.node, 'NodeGetVolumeStats', { volumeId: v.volumeId, volumePath: target }),
        C.NOT_FOUND,
      );
    });
    it('NodeGetVolumeStats: missing fields, unknown volume, wrong path, and usage after publish', async () => {
      await expectCode(call(c.node, 'NodeGetVolumeStats', { volumePath: 'some/path' }), C.INVALID_ARGUMENT);
      await expectCode(call(c.node, 'NodeGetVolumeStats', { volumeId: 'some-id' }), C.INVALID_ARGUMENT);
      await expectCode(
        call(c.node, 'NodeGetVolumeStats', { volumeId: 'some-id', volumePath: 'some/path' }),
        C.NOT_FOUND,
      );
      const v = await create();
      await fullPublish(v);
      await expectCode(
        call(c.node, 'NodeGetVolumeStats', { volumeId: v.volumeId, volumePath: 'some/path' }),
        C.NOT_FOUND,
      );
      if (backend === 'hostpath') await fs.writeFile(path.join(target, 'data'), Buffer.alloc(4096, 1));
      const r = await call(c.node, 'NodeGetVolumeStats', { volumeId: v.volumeId, volumePath: target });
      const bytes = r.usage!.find((u) => u.unit === csi.VolumeUsage_Unit.BYTES)!;
      expect(bytes.total).toBe(SIZE);
      expect(bytes.used! + bytes.available!).toBe(SIZE);
      if (backend === 'hostpath') expect(bytes.used).toBe(4096);
      expect(r.usage!.find((u) => u.unit === csi.VolumeUsage_Unit.INODES)!.total).toBeGreaterThan(0);
      expect(r.volumeCondition).toEqual({ abnormal: false, message: 'volume is healthy' });
    });
    it('NodeExpandVolume: missing fields, unknown volume, and growth after controller expansion', async () => {
      await expectCode(
        call(c.node, 'NodeExpandVolume', { volumePath: '/x', volumeCapability: mountCap() }),
        C.INVALID_ARGUMENT,
      );
      const v = await create();
      await expectCode(
        call(c.node, 'NodeExpandVolume', { volumeId: v.volumeId, volumeCapability: mountCap() }),
        C.INVALID_ARGUMENT,
      );
      await expectCode(
        call(c.node, 'NodeExpandVolume', { volumeId: 'no-such', volumePath: 'some/path' }),
        C.NOT_FOUND,
      );
      await call(c.controller, 'ControllerExpandVolume', {
        volumeId: v.volumeId,
        capacityRange: { requiredBytes: EXPAND },
      });
      await fullPublish(v);
      const r = await call(c.node, 'NodeExpandVolume', {
        volumeId: v.volumeId,
        volumePath: target,
        capacityRange: { requiredBytes: EXPAND },
      });
      expect(r.capacityBytes).toBe(EXPAND);
      await expectCode(
        call(c.node, 'NodeExpandVolume', {
          volumeId: v.volumeId,
          volumePath: target,
          capacityRange: { requiredBytes: 2 * EXPAND },
        }),
        C.OUT_OF_RANGE,
      );
    });

    it.each([1, 3])('full lifecycle works with every call repeated %i time(s)', async (count) => {
      const v = await create();
      await dirs();
      const cap = mountCap();
      let ctx: Record<string, string> = {};
      for (let i = 0; i < count; i++)
        ctx = (
          await call(c.controller, 'ControllerPublishVolume', {
            volumeId: v.volumeId,
            nodeId: NODE,
            volumeCapability: cap,
          })
        ).publishContext!;
      for (let i = 0; i < count; i++)
        await call(c.node, 'NodeStageVolume', {
          volumeId: v.volumeId,
          stagingTargetPath: staging,
          volumeCapability: cap,
          publishContext: ctx,
        });
      for (let i = 0; i < count; i++)
        await call(c.node, 'NodePublishVolume', {
          volumeId: v.volumeId,
          stagingTargetPath: staging,
          targetPath: target,
          volumeCapability: cap,
          publishContext: ctx,
        });
      const stats = await call(c.node, 'NodeGetVolumeStats', { volumeId: v.volumeId, volumePath: target });
      expect(stats.usage!.length).toBeGreaterThan(0);
      if (backend === 'hostpath') {
        await fs.writeFile(path.join(target, 'hello'), 'world');
        const data = running.backend.devicePath({
          id: v.volumeId!,
          accessType: 'mount',
          capacityBytes: SIZE,
        });
        expect(await fs.readFile(path.join(data, 'hello'), 'utf8')).toBe('world');
      }
      for (let i = 0; i < count; i++)
        await call(c.node, 'NodeUnpublishVolume', { volumeId: v.volumeId, targetPath: target });
      for (let i = 0; i < count; i++)
        await call(c.node, 'NodeUnstageVolume', { volumeId: v.volumeId, stagingTargetPath: staging });
      for (let i = 0; i < count; i++)
        await call(c.controller, 'ControllerUnpublishVolume', { volumeId: v.volumeId, nodeId: NODE });
      for (let i = 0; i < count; i++) await call(c.controller, 'DeleteVolume', { volumeId: v.volumeId });
      expect(running.driver.snapshotState().volumes[v.volumeId!]).toBeUndefined();
    });

    it('enforces the state machine: attach before stage, stage before publish, unpublish before unstage', async () => {
      const v = await create();
      await dirs();
      const cap = mountCap();
      await expectCode(
        call(c.node, 'NodeStageVolume', {
          volumeId: v.volumeId,
          stagingTargetPath: staging,
          volumeCapability: cap,
        }),
        C.FAILED_PRECONDITION,
      );
      await call(c.controller, 'ControllerPublishVolume', {
        volumeId: v.volumeId,
        nodeId: NODE,
        volumeCapability: cap,
      });
      await expectCode(
        call(c.node, 'NodePublishVolume', {
          volumeId: v.volumeId,
          stagingTargetPath: staging,
          targetPath: target,
          volumeCapability: cap,
        }),
        C.FAILED_PRECONDITION,
      );
      await call(c.node, 'NodeStageVolume', {
        volumeId: v.volumeId,
        stagingTargetPath: staging,
        volumeCapability: cap,
      });
      await expectCode(
        call(c.node, 'NodeStageVolume', {
          volumeId: v.volumeId,
          stagingTargetPath: staging,
          volumeCapability: mountCap(S.MULTI_NODE_MULTI_WRITER),
        }),
        C.ALREADY_EXISTS,
      );
      await call(c.node, 'NodePublishVolume', {
        volumeId: v.volumeId,
        stagingTargetPath: staging,
        targetPath: target,
        volumeCapability: cap,
      });
      await expectCode(
        call(c.node, 'NodePublishVolume', {
          volumeId: v.volumeId,
          stagingTargetPath: staging,
          targetPath: target,
          volumeCapability: cap,
          readonly: true,
        }),
        C.ALREADY_EXISTS,
      );
      await expectCode(
        call(c.node, 'NodeUnstageVolume', { volumeId: v.volumeId, stagingTargetPath: staging }),
        C.FAILED_PRECONDITION,
      );
      await expectCode(
        call(c.controller, 'ControllerUnpublishVolume', { volumeId: v.volumeId, nodeId: NODE }),
        C.FAILED_PRECONDITION,
      );
    });

    it('reference-counts publishes: two targets, unstage only after both are gone', async () => {
      const v = await create(unique('rc'), { volumeCapabilities: [mountCap(S.SINGLE_NODE_MULTI_WRITER)] });
      const cap = mountCap(S.SINGLE_NODE_MULTI_WRITER);
      await fullPublish(v, cap);
      const second = path.join(targetDir, 'second');
      await call(c.node, 'NodePublishVolume', {
        volumeId: v.volumeId,
        stagingTargetPath: staging,
        targetPath: second,
        volumeCapability: cap,
      });
      await call(c.node, 'NodeUnpublishVolume', { volumeId: v.volumeId, targetPath: target });
      await expectCode(
        call(c.node, 'NodeUnstageVolume', { volumeId: v.volumeId, stagingTargetPath: staging }),
        C.FAILED_PRECONDITION,
      );
      await call(c.node, 'NodeUnpublishVolume', { volumeId: v.volumeId, targetPath: second });
      await call(c.node, 'NodeUnstageVolume', { volumeId: v.volumeId, stagingTargetPath: staging });
    });

    it('SINGLE_NODE_SINGLE_WRITER allows one target only', async () => {
      const cap = mountCap(S.SINGLE_NODE_SINGLE_WRITER);
      const v = await create(unique('snsw'), { volumeCapabilities: [cap] });
      await fullPublish(v, cap);
      await expectCode(
        call(c.node, 'NodePublishVolume', {
          volumeId: v.volumeId,
          stagingTargetPath: staging,
          targetPath: path.join(targetDir, 'other'),
          volumeCapability: cap,
        }),
        C.FAILED_PRECONDITION,
      );
    });

    it('publishes block volumes to a file target', async () => {
      const cap = blockCap();
      const v = await create(unique('blk'), { volumeCapabilities: [cap] });
      await fullPublish(v, cap);
      if (backend === 'hostpath') expect((await fs.lstat(target)).isFile()).toBe(true);
      const r = await call(c.node, 'NodeGetVolumeStats', { volumeId: v.volumeId, volumePath: target });
      expect(r.usage!.map((u) => u.unit)).toEqual([csi.VolumeUsage_Unit.BYTES]);
      const atStaging = await call(c.node, 'NodeGetVolumeStats', {
        volumeId: v.volumeId,
        volumePath: staging,
      });
      expect(atStaging.volumeCondition).toEqual({ abnormal: false, message: 'volume is healthy' });
      await call(c.node, 'NodeUnpublishVolume', { volumeId: v.volumeId, targetPath: target });
      await expect(fs.lstat(target)).rejects.toThrow(/ENOENT/);
    });

    if (backend === 'hostpath')
      it.runIf(bindMounts)('read-only publish is enforced by the mount', async () => {
        const v = await create();
        await dirs();
        await call(c.controller, 'ControllerPublishVolume', {
          volumeId: v.volumeId,
          nodeId: NODE,
          volumeCapability: mountCap(),
          readonly: true,
        });
        await call(c.node, 'NodeStageVolume', {
          volumeId: v.volumeId,
          stagingTargetPath: staging,
          volumeCapability: mountCap(),
        });
        await call(c.node, 'NodePublishVolume', {
          volumeId: v.volumeId,
          stagingTargetPath: staging,
          targetPath: target,
          volumeCapability: mountCap(),
          readonly: true,
        });
        await expect(fs.writeFile(path.join(target, 'x'), 'y')).rejects.toThrow(/EROFS/);
        await fs.writeFile(path.join(staging, 'x'), 'y');
        // a mount lost behind the driver's back comes back on the (idempotent) repeat
        await unmount(target);
        expect(await isMountPoint(target)).toBe(false);
        const lost = await call(c.node, 'NodeGetVolumeStats', { volumeId: v.volumeId, volumePath: target });
        expect(lost.volumeCondition).toEqual({ abnormal: true, message: `${target} is not mounted` });
        const again = {
          volumeId: v.volumeId,
          stagingTargetPath: staging,
          targetPath: target,
          volumeCapability: mountCap(),
          readonly: true,
        };
        await call(c.node, 'NodePublishVolume', again);
        expect(await isMountPoint(target)).toBe(true);
        expect(await fs.readFile(path.join(target, 'x'), 'utf8')).toBe('y');
      });
  });

  describe('GroupController', () => {
    it('creates, gets and deletes a volume group snapshot', async () => {
      const caps = await call(c.group, 'GroupControllerGetCapabilities', {});
      expect(caps.capabilities!.map((x) => x.rpc!.type)).toEqual([
        csi.GroupControllerServiceCapability_RPC_Type.CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT,
      ]);
      const a = await create();
      const b = await create();
      const name = unique('group');
      await expectCode(call(c.group, 'CreateVolumeGroupSnapshot', { name }), C.INVALID_ARGUMENT);
      await expectCode(
        call(c.group, 'CreateVolumeGroupSnapshot', { sourceVolumeIds: [a.volumeId!] }),
        C.INVALID_ARGUMENT,
      );
      await expectCode(
        call(c.group, 'CreateVolumeGroupSnapshot', { name, sourceVolumeIds: [a.volumeId!, 'no-such'] }),
        C.NOT_FOUND,
      );
      const g = (
        await call(c.group, 'CreateVolumeGroupSnapshot', {
          name,
          sourceVolumeIds: [a.volumeId!, b.volumeId!],
        })
      ).groupSnapshot!;
      expect(g.snapshots!.map((s) => s.sourceVolumeId).sort()).toEqual([a.volumeId, b.volumeId].sort());
      expect(g.snapshots!.every((s) => s.groupSnapshotId === g.groupSnapshotId && s.readyToUse)).toBe(true);
      const again = (
        await call(c.group, 'CreateVolumeGroupSnapshot', {
          name,
          sourceVolumeIds: [b.volumeId!, a.volumeId!],
        })
      ).groupSnapshot!;
      expect(again.groupSnapshotId).toBe(g.groupSnapshotId);
      await expectCode(
        call(c.group, 'CreateVolumeGroupSnapshot', { name, sourceVolumeIds: [a.volumeId!] }),
        C.ALREADY_EXISTS,
      );
      const ids = g.snapshots!.map((s) => s.snapshotId!);
      expect(
        (
          await call(c.group, 'GetVolumeGroupSnapshot', {
            groupSnapshotId: g.groupSnapshotId,
            snapshotIds: ids,
          })
        ).groupSnapshot!.snapshots,
      ).toHaveLength(2);
      await expectCode(call(c.controller, 'DeleteSnapshot', { snapshotId: ids[0] }), C.FAILED_PRECONDITION);
      const restored = await create(unique('from-group'), {
        volumeContentSource: { snapshot: { snapshotId: ids[0] } },
      });
      expect(restored.capacityBytes).toBe(SIZE);
      await expectCode(
        call(c.group, 'DeleteVolumeGroupSnapshot', {
          groupSnapshotId: g.groupSnapshotId,
          snapshotIds: [ids[0]!],
        }),
        C.INVALID_ARGUMENT,
      );
      await call(c.group, 'DeleteVolumeGroupSnapshot', {
        groupSnapshotId: g.groupSnapshotId,
        snapshotIds: ids,
      });
      await call(c.group, 'DeleteVolumeGroupSnapshot', {
        groupSnapshotId: g.groupSnapshotId,
        snapshotIds: ids,
      });
      await expectCode(
        call(c.group, 'GetVolumeGroupSnapshot', { groupSnapshotId: g.groupSnapshotId, snapshotIds: ids }),
        C.NOT_FOUND,
      );
      expect((await call(c.controller, 'ListSnapshots', { snapshotId: ids[1] })).entries).toEqual([]);
    });
  });
});
