// Kill the driver with SIGKILL in the middle of its life and start it again: every volume, publish and
// snapshot must still be there and every further call must answer as before.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { canMount, mountPoints, unmount } from './mount.js';
import {
  blockCap,
  call,
  connect,
  expectCode,
  MiB,
  mountCap,
  runCli,
  tmpDir,
  waitReady,
} from './test-support.js';

// these start real processes; a crowded CI machine can take tens of seconds for that
vi.setConfig({ testTimeout: 180_000 });

const NODE = 'restart-node';

describe.each(['hostpath', 'sim'] as const)('restart after SIGKILL (%s backend)', (backend) => {
  it('keeps volumes, publishes and snapshots, and answers every call as before', async () => {
    const root = tmpDir(`restart-${backend}`);
    const kubelet = path.join(root, 'kubelet');
    const sock = path.join(root, 'csi.sock');
    const args = [
      '--endpoint',
      `unix://${sock}`,
      '--node-id',
      NODE,
      '--backend',
      backend,
      '--state-dir',
      path.join(root, 'state'),
      '--enable-attach',
      '--enable-volume-condition',
      '--path-root',
      kubelet,
      '--capacity',
      '1Gi',
      ...(backend === 'sim' ? ['--sim-persist'] : []),
    ];
    const stagingA = path.join(kubelet, 'plugins', 'a', 'globalmount');
    const stagingB = path.join(kubelet, 'plugins', 'b', 'globalmount');
    const targetA = path.join(kubelet, 'pods', 'p1', 'volumes', 'a', 'mount');
    const targetB = path.join(kubelet, 'pods', 'p1', 'volumeDevices', 'b');
    await fs.mkdir(stagingA, { recursive: true });
    await fs.mkdir(stagingB, { recursive: true });

    let p = runCli(args);
    await waitReady(p, sock);
    let c = connect(sock);
    const a = (
      await call(c.controller, 'CreateVolume', {
        name: 'vol-a',
        volumeCapabilities: [mountCap()],
        capacityRange: { requiredBytes: 16 * MiB },
      })
    ).volume!;
    const b = (
      await call(c.controller, 'CreateVolume', {
        name: 'vol-b',
        volumeCapabilities: [blockCap()],
        capacityRange: { requiredBytes: 8 * MiB },
      })
    ).volume!;
    const pubA = { volumeId: a.volumeId, nodeId: NODE, volumeCapability: mountCap() };
    const pubB = { volumeId: b.volumeId, nodeId: NODE, volumeCapability: blockCap(), readonly: true };
    const ctxA = (await call(c.controller, 'ControllerPublishVolume', pubA)).publishContext;
    const ctxB = (await call(c.controller, 'ControllerPublishVolume', pubB)).publishContext;
    const stageA = { volumeId: a.volumeId, stagingTargetPath: stagingA, volumeCapability: mountCap() };
    const stageB = { volumeId: b.volumeId, stagingTargetPath: stagingB, volumeCapability: blockCap() };
    await call(c.node, 'NodeStageVolume', stageA);
    await call(c.node, 'NodeStageVolume', stageB);
    const nodePubA = { ...stageA, targetPath: targetA };
    const nodePubB = { ...stageB, targetPath: targetB, readonly: true };
    await call(c.node, 'NodePublishVolume', nodePubA);
    await call(c.node, 'NodePublishVolume', nodePubB);
    if (backend === 'hostpath') await fs.writeFile(path.join(targetA, 'before-kill.txt'), 'kept');
    const snap = (await call(c.controller, 'CreateSnapshot', { name: 'snap-a', sourceVolumeId: a.volumeId }))
      .snapshot!;
    const listBefore = await call(c.controller, 'ListVolumes', {});
    const capacityBefore = await call(c.controller, 'GetCapacity', {});
    c.close();

    p.child.kill('SIGKILL');
    await p.exited;

    p = runCli(args);
    try {
      await waitReady(p, sock);
      c = connect(sock);
      // the same inventory, with the same publish state
      const listAfter = await call(c.controller, 'ListVolumes', {});
      expect(listAfter).toEqual(listBefore);
      expect(listAfter.entries!.map((e) => e.status!.publishedNodeIds)).toEqual([[NODE], [NODE]]);
      expect(await call(c.controller, 'GetCapacity', {})).toEqual(capacityBefore);
      expect((await call(c.controller, 'ListSnapshots', {})).entries!.map((e) => e.snapshot)).toEqual([snap]);
      // every repeat is still idempotent, every incompatible repeat still refused
      expect(
        (
          await call(c.controller, 'CreateVolume', {
            name: 'vol-a',
            volumeCapabilities: [mountCap()],
            capacityRange: { requiredBytes: 16 * MiB },
          })
        ).volume,
      ).toEqual(a);
      expect((await call(c.controller, 'ControllerPublishVolume', pubA)).publishContext).toEqual(ctxA);
      expect((await call(c.controller, 'ControllerPublishVolume', pubB)).publishContext).toEqual(ctxB);
      await expectCode(call(c.controller, 'ControllerPublishVolume', { ...pubA, readonly: true }), 6);
      await call(c.node, 'NodeStageVolume', stageA);
      await call(c.node, 'NodeStageVolume', stageB);
      await call(c.node, 'NodePublishVolume', nodePubA);
      await call(c.node, 'NodePublishVolume', nodePubB);
      await expectCode(call(c.node, 'NodePublishVolume', { ...nodePubA, readonly: true }), 6);
      await expectCode(call(c.node, 'NodeUnstageVolume', stageA), 9);
      expect(
        (await call(c.controller, 'CreateSnapshot', { name: 'snap-a', sourceVolumeId: a.volumeId })).snapshot,
      ).toEqual(snap);
      const stats = await call(c.node, 'NodeGetVolumeStats', { volumeId: a.volumeId, volumePath: targetA });
      expect(stats.volumeCondition).toEqual({ abnormal: false, message: 'volume is healthy' });
      if (backend === 'hostpath') {
        expect(await fs.readFile(path.join(targetA, 'before-kill.txt'), 'utf8')).toBe('kept');
        if (canMount) {
          const mounts = await mountPoints();
          expect([targetA, targetB, stagingA].every((m) => mounts.has(m))).toBe(true);
        }
        // the snapshot taken before the kill restores its content
        const restored = (
          await call(c.controller, 'CreateVolume', {
            name: 'from-snap',
            volumeCapabilities: [mountCap()],
            volumeContentSource: { snapshot: { snapshotId: snap.snapshotId } },
          })
        ).volume!;
        const data = path.join(root, 'state', 'volumes', restored.volumeId!);
        expect(await fs.readFile(path.join(data, 'before-kill.txt'), 'utf8')).toBe('kept');
        await call(c.controller, 'DeleteVolume', { volumeId: restored.volumeId });
      }
      // and everything tears down cleanly
      for (const [pub, stage, target] of [
        [nodePubA, stageA, targetA],
        [nodePubB, stageB, targetB],
      ] as const) {
        await call(c.node, 'NodeUnpublishVolume', { volumeId: pub.volumeId, targetPath: target });
        await call(c.node, 'NodeUnstageVolume', stage);
        await call(c.controller, 'ControllerUnpublishVolume', { volumeId: pub.volumeId, nodeId: NODE });
        await call(c.controller, 'DeleteVolume', { volumeId: pub.volumeId });
      }
      await call(c.controller, 'DeleteSnapshot', { snapshotId: snap.snapshotId });
      expect((await call(c.controller, 'ListVolumes', {})).entries).toEqual([]);
      if (backend === 'hostpath') {
        expect(await fs.readdir(path.join(root, 'state', 'volumes'))).toEqual([]);
        expect(await fs.readdir(path.join(root, 'state', 'snapshots'))).toEqual([]);
        expect([...(await mountPoints())].filter((m) => m.startsWith(root))).toEqual([]);
      }
      c.close();
    } finally {
      p.child.kill('SIGKILL');
      await p.exited;
      for (const m of [...(await mountPoints())].filter((x) => x.startsWith(root)).reverse()) {
        await unmount(m).catch(() => {});
      }
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});
