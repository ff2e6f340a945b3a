// Layer unpacking: whiteouts and opaque directories apply, and a whiteout never reaches outside the root
// through a link an earlier layer planted.
import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { describe, expect, it } from 'vitest';
import { ImageStore } from './image-store.js';
import { tempDir } from './test-util.js';
import type { ImageRecord } from './types.js';

async function layer(dir: string, name: string, build: (root: string) => void, entries?: string[]): Promise<string> {
  const root = path.join(dir, `${name}-root`);
  fs.mkdirSync(root);
  build(root);
  const file = path.join(dir, `${name}.tar`);
  await tar.c({ cwd: root, file, portable: true }, entries ?? fs.readdirSync(root));
  return file;
}

function image(layers: string[]): ImageRecord {
  return { id: `sha256:${'ab'.repeat(32)}`, repoTags: [], repoDigests: [], size: 0, username: '', layers, source: 'oci-layout', config: {} };
}

describe('unpacking layers', () => {
  it('applies whiteouts and opaque directories of later layers', async () => {
    const dir = tempDir('kemu-cri-unpack-');
    const l1 = await layer(dir, 'l1', (r) => {
      fs.mkdirSync(path.join(r, 'a'));
      fs.writeFileSync(path.join(r, 'a/gone'), 'x');
      fs.writeFileSync(path.join(r, 'a/kept'), 'x');
      fs.mkdirSync(path.join(r, 'opq'));
      fs.writeFileSync(path.join(r, 'opq/old'), 'x');
    });
    const l2 = await layer(dir, 'l2', (r) => {
      fs.mkdirSync(path.join(r, 'a'));
      fs.writeFileSync(path.join(r, 'a/.wh.gone'), '');
      fs.mkdirSync(path.join(r, 'opq'));
      fs.writeFileSync(path.join(r, 'opq/.wh..wh..opq'), '');
      fs.writeFileSync(path.join(r, 'opq/new'), 'x');
    });
    const root = (await new ImageStore({ stateDir: path.join(dir, 'state') }).rootfs(image([l1, l2])))!;
    expect(fs.readdirSync(path.join(root, 'a'))).toEqual(['kept']);
    expect(fs.readdirSync(path.join(root, 'opq'))).toEqual(['new']);
  });

  it('a whiteout under a link an earlier layer planted does not delete the host file it points at', async () => {
    const dir = tempDir('kemu-cri-unpack-');
    const victim = path.join(dir, 'host-victim');
    fs.mkdirSync(victim);
    fs.writeFileSync(path.join(victim, 'keep'), 'host data');
    const stateDir = path.join(dir, 'state');
    const dest = path.join(stateDir, 'rootfs', 'ab'.repeat(32));
    // Two guards meet here: tar refuses a link that climbs out of the root, and the whiteout's directory is
    // resolved inside the root; either one keeps the host file.
    const l1 = await layer(dir, 'l1', (r) => fs.symlinkSync(path.relative(dest, victim), path.join(r, 'etc')));
    // Only the whiteout entry, no entry for its directory: `etc` stays the planted link while it applies.
    const l2 = await layer(
      dir,
      'l2',
      (r) => {
        fs.mkdirSync(path.join(r, 'etc'));
        fs.writeFileSync(path.join(r, 'etc/.wh.keep'), '');
      },
      ['etc/.wh.keep'],
    );
    await new ImageStore({ stateDir })
      .rootfs(image([l1, l2]))
      .catch(() => undefined); // refusing the layer is fine too; touching the host is not
    expect(fs.readFileSync(path.join(victim, 'keep'), 'utf8')).toBe('host data');
  });
});
