// Staging and target paths on the node: the SP creates target_path (a directory for a mount volume, a file
// for a block one) and NodeUnpublishVolume removes it, on the sim backend too; and no path under --path-root
// reaches outside it through a symbolic link: not one that exists when the call arrives, nor one planted
// in place of a missing component before the driver creates it. Both backends; with real bind mounts
// when running as root.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SimBackend } from './backend-sim.js';
import { mountPoints } from './mount.js';
import { type CsiDriver, createCsiDriver } from './server.js';
import { blockCap, MiB, mountCap, tmpDir } from './test-support.js';

let tmp: string;
let root: string;
let outside: string;
const drivers: CsiDriver[] = [];

beforeEach(() => {
  tmp = fs.realpathSync(tmpDir('node-paths'));
  root = path.join(tmp, 'kubelet');
  outside = path.join(tmp, 'outside');
  fs.mkdirSync(path.join(root, 'pods'), { recursive: true });
  fs.mkdirSync(outside);
});

afterEach(async () => {
  for (const d of drivers.splice(0)) await d.release();
  // whatever a failing run mounted below the temporary tree goes before the tree does
  for (const m of [...(await mountPoints())].filter((p) => p.startsWith(`${tmp}/`)).reverse()) {
    spawnSync('umount', ['-l', m]);
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function start(backend: 'sim' | 'hostpath', sim?: SimBackend) {
  const d = await createCsiDriver({
    nodeId: 'n1',
    backend: sim ?? backend,
    stateDir: backend === 'hostpath' ? path.join(tmp, 'state') : undefined,
    pathRoots: [root],
  });
  drivers.push(d);
  return d;
}

async function stagedVolume(d: CsiDriver, block = false) {
  const cap = block ? blockCap() : mountCap();
  const { volume } = await d.controller.CreateVolume({
    name: `v-${Math.random().toString(36).slice(2)}`,
    capacityRange: { requiredBytes: MiB },
    volumeCapabilities: [cap],
  });
  const staging = path.join(root, 'staging', volume!.volumeId!);
  fs.mkdirSync(staging, { recursive: true });
  await d.node.NodeStageVolume({ volumeId: volume!.volumeId, stagingTargetPath: staging, volumeCapability: cap });
  return { volumeId: volume!.volumeId!, stagingTargetPath: staging, volumeCapability: cap };
}

const entries = (d: string) => fs.readdirSync(d, { recursive: true, encoding: 'utf8' }).sort();

describe('target_path on the sim backend', () => {
  it('NodePublishVolume creates a directory for a mount volume and a file for a block one; NodeUnpublishVolume removes them', async () => {
    const d = await start('sim');
    for (const block of [false, true]) {
      const v = await stagedVolume(d, block);
      const targetPath = path.join(root, 'pods', 'p', 'volumes', block ? 'dev' : 'mount');
      await d.node.NodePublishVolume({ ...v, targetPath });
      const st = fs.lstatSync(targetPath);
      expect(block ? st.isFile() : st.isDirectory()).toBe(true);
      await d.node.NodePublishVolume({ ...v, targetPath }); // idempotent
      await d.node.NodeUnpublishVolume({ volumeId: v.volumeId, targetPath });
      expect(fs.existsSync(targetPath)).toBe(false);
      await d.node.NodeUnpublishVolume({ volumeId: v.volumeId, targetPath }); // idempotent
    }
  });

  it('NodeUnpublishVolume removes what a workload wrote into the target, and only that, as an unmount would hide it', async () => {
    const d = await start('sim');
    const v = await stagedVolume(d);
    const targetPath = path.join(root, 'pods', 'q', 'volumes', 'mount');
    await d.node.NodePublishVolume({ ...v, targetPath });
    fs.mkdirSync(path.join(targetPath, 'sub'));
    fs.writeFileSync(path.join(targetPath, 'sub', 'data'), 'x');
    fs.writeFileSync(path.join(outside, 'keep'), 'keep');
    fs.symlinkSync(outside, path.join(targetPath, 'link-out'));
    await d.node.NodeUnpublishVolume({ volumeId: v.volumeId, targetPath });
    expect(fs.existsSync(targetPath)).toBe(false);
    expect(fs.readFileSync(path.join(outside, 'keep'), 'utf8')).toBe('keep');
  });
});

describe('target_path on the hostpath backend without mounts', () => {
  it('publishes with a link to the data outside the root, publishes again and unpublishes through it', async () => {
    const d = await createCsiDriver({
      nodeId: 'n1',
      backend: 'hostpath',
      stateDir: path.join(tmp, 'state'),
      pathRoots: [root],
      useMounts: false,
    });
    drivers.push(d);
    const v = await stagedVolume(d);
    const targetPath = path.join(root, 'pods', 'r', 'volumes', 'mount');
    await d.node.NodePublishVolume({ ...v, targetPath });
    expect(fs.lstatSync(targetPath).isSymbolicLink()).toBe(true);
    fs.writeFileSync(path.join(targetPath, 'kept'), 'data');
    await d.node.NodePublishVolume({ ...v, targetPath }); // idempotent, through the driver's own link
    await d.node.NodeUnpublishVolume({ volumeId: v.volumeId, targetPath });
    expect(fs.existsSync(targetPath)).toBe(false);
    await d.node.NodeUnstageVolume({ volumeId: v.volumeId, stagingTargetPath: v.stagingTargetPath });
    const data = fs.readdirSync(path.join(tmp, 'state'), { recursive: true, encoding: 'utf8' });
    expect(data.some((f) => f.endsWith('kept'))).toBe(true);
  });
});

describe.each(['sim', 'hostpath'] as const)('symbolic links under --path-root (%s backend)', (backend) => {
  it('refuses a target_path or staging_target_path that an existing link leads outside, creating and mounting nothing there', async () => {
    const d = await start(backend);
    const v = await stagedVolume(d);
    fs.symlinkSync(outside, path.join(root, 'pods', 'evil'));
    for (const targetPath of [path.join(root, 'pods', 'evil'), path.join(root, 'pods', 'evil', 'volumes', 'mount')]) {
      await expect(d.node.NodePublishVolume({ ...v, targetPath })).rejects.toMatchObject({
        code: 3,
        message: expect.stringContaining('symbolic link, outside the allowed root'),
      });
    }
    await expect(
      d.node.NodeStageVolume({ ...v, stagingTargetPath: path.join(root, 'pods', 'evil', 'staging') }),
    ).rejects.toMatchObject({ code: 3 });
    expect(entries(outside)).toEqual([]);
    expect([...(await mountPoints())].filter((m) => m.startsWith(outside))).toEqual([]);
  });

  it('refuses to create target_path through a link planted in place of a missing component', async () => {
    // The sim backend can hold the call between the driver's check and the creation; the hostpath one is
    // given the planted link directly, which is what a check-then-create race comes down to.
    const parent = path.join(root, 'pods', 'later');
    const targetPath = path.join(parent, 'volumes', 'mount');
    if (backend === 'sim') {
      const sim = new SimBackend();
      const d = await start('sim', sim);
      const v = await stagedVolume(d);
      sim.setLatency({ publish: 100 });
      const publishing = d.node.NodePublishVolume({ ...v, targetPath });
      await new Promise((r) => setTimeout(r, 30));
      fs.symlinkSync(outside, parent);
      await expect(publishing).rejects.toThrow(/symbolic link/);
    } else {
      const d = await start('hostpath');
      const v = await stagedVolume(d);
      fs.symlinkSync(outside, parent);
      const vol = { id: v.volumeId, accessType: 'mount' as const, capacityBytes: MiB };
      await expect(
        d.backend.publish(vol, { targetPath, pathRoot: root, stagingPath: v.stagingTargetPath, readonly: false, capability: { accessType: 'mount', accessMode: 1 } }),
      ).rejects.toThrow(/symbolic link/);
    }
    expect(entries(outside)).toEqual([]);
    expect([...(await mountPoints())].filter((m) => m.startsWith(outside))).toEqual([]);
  });
});
