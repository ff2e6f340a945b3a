// Unit tests of the driver core and the in-process service objects, on the sim backend.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { csi } from '@kemu/proto';
import { afterAll, describe, expect, it } from 'vitest';
import { SimBackend } from './backend-sim.js';
import { Driver, type DriverOptions } from './driver.js';
import { CsiError } from './errors.js';
import { createCsiDriver } from './server.js';
import { FileStateStore } from './state-store.js';
import { AccessMode, type Capability } from './types.js';
import { MiB, tmpDir } from './test-support.js';

const cap: Capability = { accessType: 'mount', accessMode: AccessMode.SINGLE_NODE_WRITER };
// The sim backend creates target paths as a real driver does: they go below a temporary kubelet root.
const ROOT = tmpDir('driver-root');
afterAll(() => fs.rm(ROOT, { recursive: true, force: true }));

async function driver(opts: Partial<DriverOptions> = {}, sim = new SimBackend()) {
  const d = new Driver({ nodeId: 'n1', backend: sim, pathRoots: [ROOT], ...opts });
  await d.start();
  return { d, sim };
}

async function codeOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(CsiError);
    return (e as CsiError).code;
  }
  return 0;
}

describe('Driver core', () => {
  it('answers ABORTED for a second operation on a volume while one is in flight', async () => {
    const { d, sim } = await driver();
    const v = await d.createVolume({ name: 'a', capabilities: [cap] });
    sim.setLatency({ stage: 50 });
    const first = d.nodeStage({ volumeId: v.id, stagingPath: `${ROOT}/s1`, capability: cap });
    expect(await codeOf(d.nodeStage({ volumeId: v.id, stagingPath: `${ROOT}/s1`, capability: cap }))).toBe(
      10,
    );
    expect(await codeOf(d.deleteVolume(v.id))).toBe(10);
    await first;
    // once the first finished, the repeat is an idempotent success
    await d.nodeStage({ volumeId: v.id, stagingPath: `${ROOT}/s1`, capability: cap });
  });

  it('answers ABORTED for concurrent creates of the same name, and creates once', async () => {
    const { d, sim } = await driver();
    sim.setLatency({ createVolume: 30 });
    const results = await Promise.allSettled([
      d.createVolume({ name: 'same', capabilities: [cap] }),
      d.createVolume({ name: 'same', capabilities: [cap] }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason.code).toBe(10);
    expect(d.listVolumes({}).entries).toHaveLength(1);
  });

  it('enforces max volumes per node at attach, and at stage when attach is off', async () => {
    const a = await driver({ enableAttach: true, maxVolumesPerNode: 1 });
    const v1 = await a.d.createVolume({ name: 'v1', capabilities: [cap] });
    const v2 = await a.d.createVolume({ name: 'v2', capabilities: [cap] });
    await a.d.controllerPublish({ volumeId: v1.id, nodeId: 'n1', capability: cap });
    expect(await codeOf(a.d.controllerPublish({ volumeId: v2.id, nodeId: 'n1', capability: cap }))).toBe(8);
    const b = await driver({ maxVolumesPerNode: 1 });
    const w1 = await b.d.createVolume({ name: 'w1', capabilities: [cap] });
    const w2 = await b.d.createVolume({ name: 'w2', capabilities: [cap] });
    await b.d.nodeStage({ volumeId: w1.id, stagingPath: `${ROOT}/a`, capability: cap });
    expect(await codeOf(b.d.nodeStage({ volumeId: w2.id, stagingPath: `${ROOT}/b`, capability: cap }))).toBe(
      8,
    );
  });

  it('answers NOT_FOUND for a node this driver does not serve', async () => {
    const { d } = await driver({ enableAttach: true, nodeId: 'n1' });
    const v = await d.createVolume({ name: 'v', capabilities: [cap] });
    await d.controllerPublish({ volumeId: v.id, nodeId: 'n1', capability: cap });
    expect(await codeOf(d.controllerPublish({ volumeId: v.id, nodeId: 'n2', capability: cap }))).toBe(5);
  });

  it('an injected backend failure returns its code and changes nothing', async () => {
    const sim = new SimBackend({ failures: [{ op: 'createVolume', code: 14, times: 1 }] });
    const { d } = await driver({}, sim);
    expect(await codeOf(d.createVolume({ name: 'x', capabilities: [cap] }))).toBe(14);
    expect(d.listVolumes({}).entries).toEqual([]);
    expect(d.getCapacity({}).available).toBe(100 * 2 ** 30);
    const v = await d.createVolume({ name: 'x', capabilities: [cap] });
    sim.injectFailure({ op: 'publish', code: 8, volumeId: v.id });
    await d.nodeStage({ volumeId: v.id, stagingPath: `${ROOT}/s`, capability: cap });
    expect(
      await codeOf(
        d.nodePublish({ volumeId: v.id, stagingPath: `${ROOT}/s`, targetPath: `${ROOT}/t`, capability: cap }),
      ),
    ).toBe(8);
    expect(d.snapshotState().volumes[v.id]!.targets).toEqual({});
    sim.clearFailures();
    await d.nodePublish({
      volumeId: v.id,
      stagingPath: `${ROOT}/s`,
      targetPath: `${ROOT}/t`,
      capability: cap,
    });
    expect(Object.keys(d.snapshotState().volumes[v.id]!.targets)).toEqual([`${ROOT}/t`]);
  });

  it('reports a damaged volume as abnormal through ControllerGetVolume and NodeGetVolumeStats', async () => {
    const { d, sim } = await driver();
    const v = await d.createVolume({ name: 'v', capabilities: [cap] });
    await d.nodeStage({ volumeId: v.id, stagingPath: `${ROOT}/s`, capability: cap });
    await d.nodePublish({
      volumeId: v.id,
      stagingPath: `${ROOT}/s`,
      targetPath: `${ROOT}/t`,
      capability: cap,
    });
    sim.damage(v.id, 'disk on fire');
    expect((await d.controllerGetVolume(v.id)).condition).toEqual({
      abnormal: true,
      message: 'disk on fire',
    });
    expect((await d.nodeStats({ volumeId: v.id, volumePath: `${ROOT}/t` })).condition.abnormal).toBe(true);
  });

  it('restores from a snapshot no smaller than the snapshot, OUT_OF_RANGE when the limit is below it', async () => {
    const { d } = await driver();
    const v = await d.createVolume({
      name: 'v',
      capabilities: [cap],
      capacityRange: { requiredBytes: 8 * MiB },
    });
    const s = await d.createSnapshot({ name: 's', sourceVolumeId: v.id });
    const r = await d.createVolume({
      name: 'r',
      capabilities: [cap],
      contentSource: { type: 'snapshot', id: s.id },
    });
    expect(r.capacityBytes).toBe(8 * MiB);
    expect(
      await codeOf(
        d.createVolume({
          name: 'r2',
          capabilities: [cap],
          contentSource: { type: 'snapshot', id: s.id },
          capacityRange: { limitBytes: MiB },
        }),
      ),
    ).toBe(11);
    expect(
      await codeOf(
        d.createVolume({
          name: 'r3',
          capabilities: [{ accessType: 'block', accessMode: 1 }],
          contentSource: { type: 'snapshot', id: s.id },
        }),
      ),
    ).toBe(3);
  });
});

describe('CreateVolume repeats', () => {
  it('answer from the existing volume even after its source snapshot was deleted', async () => {
    const { d } = await driver();
    const src = await d.createVolume({ name: 'src', capabilities: [cap] });
    const snap = await d.createSnapshot({ name: 's', sourceVolumeId: src.id });
    const req = {
      name: 'restored',
      capabilities: [cap],
      contentSource: { type: 'snapshot' as const, id: snap.id },
    };
    const a = await d.createVolume(req);
    await d.deleteSnapshot(snap.id);
    expect((await d.createVolume(req)).id).toBe(a.id);
    await d.deleteVolume(a.id);
    expect(await codeOf(d.createVolume(req))).toBe(5);
  });
});

describe('in-process service objects', () => {
  it('serve the same answers without a socket, and refuse attach RPCs honestly when attach is off', async () => {
    const d = await createCsiDriver({ nodeId: 'n1', backend: 'sim', pathRoots: [ROOT] });
    const caps = await d.controller.ControllerGetCapabilities({});
    expect(caps.capabilities!.map((c) => c.rpc!.type)).not.toContain(
      csi.ControllerServiceCapability_RPC_Type.PUBLISH_UNPUBLISH_VOLUME,
    );
    const v = await d.controller.CreateVolume({
      name: 'v',
      volumeCapabilities: [{ mount: {}, accessMode: { mode: 1 } }],
    });
    await expect(
      d.controller.ControllerPublishVolume({ volumeId: v.volume!.volumeId, nodeId: 'n1' }),
    ).rejects.toMatchObject({ code: 12 });
    await d.node.NodeStageVolume({
      volumeId: v.volume!.volumeId,
      stagingTargetPath: `${ROOT}/s`,
      volumeCapability: { mount: {}, accessMode: { mode: 1 } },
    });
    await expect(d.controller.CreateVolume({})).rejects.toMatchObject({
      code: 3,
      message: 'name is required',
    });
  });

  it('turn unexpected errors into INTERNAL without leaking their own numeric code', async () => {
    const sim = new SimBackend();
    sim.createVolume = async () => {
      throw Object.assign(new Error('mount exited with status 1'), { code: 1 });
    };
    const d = await createCsiDriver({ nodeId: 'n1', backend: sim });
    await expect(
      d.controller.CreateVolume({ name: 'v', volumeCapabilities: [{ mount: {}, accessMode: { mode: 1 } }] }),
    ).rejects.toMatchObject({
      code: 13,
      message: 'CreateVolume: mount exited with status 1',
    });
  });

  it('log one entry per call with its status and never the secrets', async () => {
    const entries: Array<{ method: string; codeName: string; subject: string }> = [];
    const d = await createCsiDriver({ nodeId: 'n1', backend: 'sim', logger: (e) => entries.push(e) });
    await d.controller.CreateVolume({
      name: 'v',
      secrets: { password: 'hunter2' },
      volumeCapabilities: [{ mount: {}, accessMode: { mode: 1 } }],
    });
    await d.controller.DeleteVolume({}).catch(() => {});
    expect(entries.map((e) => [e.method, e.codeName])).toEqual([
      ['CreateVolume', 'OK'],
      ['DeleteVolume', 'INVALID_ARGUMENT'],
    ]);
    expect(JSON.stringify(entries)).not.toContain('hunter2');
  });
});

describe('FileStateStore', () => {
  it('writes atomically, coalesces concurrent saves and reads back the last state', async () => {
    const dir = tmpDir('store');
    const file = path.join(dir, 'state.json');
    const store = new FileStateStore(file);
    expect(await store.load()).toEqual({ version: 1, volumes: {}, snapshots: {}, groupSnapshots: {} });
    const saves = [];
    for (let i = 0; i < 20; i++) {
      saves.push(store.save({ version: 1, volumes: {}, snapshots: {}, groupSnapshots: {}, n: i } as never));
    }
    await Promise.all(saves);
    expect(((await store.load()) as unknown as { n: number }).n).toBe(19);
    expect(await fs.readdir(dir)).toEqual(['state.json']);
    await fs.writeFile(file, JSON.stringify({ version: 7 }));
    await expect(store.load()).rejects.toThrow(/unsupported state version 7/);
    await fs.rm(dir, { recursive: true, force: true });
  });
});

describe('one driver serving several nodes (in-process clusters)', () => {
  it('places volumes by topology, keeps capacity per node, and lets only the home node attach, stage and publish', async () => {
    const GiB = 2 ** 30;
    const d = await createCsiDriver({
      nodeId: 'n1',
      extraNodeIds: ['n2', 'n3'],
      backend: 'sim',
      enableAttach: true,
      capacityBytes: 10 * GiB,
      pathRoots: [ROOT],
      alphaCapabilities: ['get-volume'],
    });
    const seg = (n: string) => ({ segments: { 'topology.kemu.csi.k8s.io/node': n } });
    const mount = { mount: {}, accessMode: { mode: 1 } };
    expect((await d.controller.GetCapacity({})).availableCapacity).toBe(30 * GiB);
    const v = (
      await d.controller.CreateVolume({
        name: 'on-n2',
        volumeCapabilities: [mount],
        capacityRange: { requiredBytes: 4 * GiB },
        accessibilityRequirements: { requisite: [seg('n2'), seg('n3')], preferred: [seg('n2')] },
      })
    ).volume!;
    expect(v.accessibleTopology).toEqual([seg('n2')]);
    expect((await d.controller.GetCapacity({ accessibleTopology: seg('n2') })).availableCapacity).toBe(
      6 * GiB,
    );
    expect((await d.controller.GetCapacity({ accessibleTopology: seg('n3') })).availableCapacity).toBe(
      10 * GiB,
    );
    expect((await d.controller.GetCapacity({})).availableCapacity).toBe(26 * GiB);
    await expect(
      d.controller.CreateVolume({
        name: 'nowhere',
        volumeCapabilities: [mount],
        accessibilityRequirements: { requisite: [seg('n9')] },
      }),
    ).rejects.toMatchObject({ code: 8 });
    await expect(
      d.controller.CreateVolume({
        name: 'too-big',
        volumeCapabilities: [mount],
        capacityRange: { requiredBytes: 7 * GiB },
        accessibilityRequirements: { requisite: [seg('n2')] },
      }),
    ).rejects.toMatchObject({ code: 8 });

    await expect(
      d.controller.ControllerPublishVolume({ volumeId: v.volumeId, nodeId: 'n1', volumeCapability: mount }),
    ).rejects.toMatchObject({ code: 9 });
    await expect(
      d.controller.ControllerPublishVolume({ volumeId: v.volumeId, nodeId: 'n9', volumeCapability: mount }),
    ).rejects.toMatchObject({ code: 5 });
    const spill = await d.controller.CreateVolume({
      name: 'spills-to-n3',
      volumeCapabilities: [mount],
      capacityRange: { requiredBytes: 7 * GiB },
      accessibilityRequirements: { requisite: [seg('n2'), seg('n3')], preferred: [seg('n2')] },
    });
    expect(spill.volume!.accessibleTopology).toEqual([seg('n3')]);
    await d.controller.ControllerPublishVolume({
      volumeId: v.volumeId,
      nodeId: 'n2',
      volumeCapability: mount,
    });
    const stage = {
      volumeId: v.volumeId,
      stagingTargetPath: `${ROOT}/plugins/x/globalmount`,
      volumeCapability: mount,
    };
    await expect(d.node.NodeStageVolume(stage)).rejects.toMatchObject({
      code: 9,
      message: expect.stringContaining('lives on node n2'),
    });
    const n2 = d.nodeServer('n2');
    expect(await n2.NodeGetInfo({})).toEqual({
      nodeId: 'n2',
      maxVolumesPerNode: 0,
      accessibleTopology: seg('n2'),
    });
    await n2.NodeStageVolume(stage);
    await n2.NodePublishVolume({ ...stage, targetPath: `${ROOT}/pods/p/mount` });
    expect(
      (await d.controller.ControllerGetVolume({ volumeId: v.volumeId })).status!.publishedNodeIds,
    ).toEqual(['n2']);
    expect(() => d.nodeServer('n9')).toThrow('node n9 is not served by this driver');
  });
});
