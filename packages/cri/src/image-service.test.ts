// ImageService over the socket: OCI layouts, tarballs and docker archives under --image-dir with real
// digests, synthetic images, pull failures, removal that survives restarts, and `kemu-cri import`.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { collectStream } from '@kemu/proto';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_IMAGE_METADATA_BYTES, syntheticImage } from './image-store.js';
import { buildBusyboxLayout, grpcError, startTestShim, type TestShim, tempDir } from './test-util.js';

const sha256sum = (file: string) => `sha256:${spawnSync('sha256sum', [file], { encoding: 'utf8' }).stdout.split(' ')[0]}`;

let shim: TestShim;
let dir: string;
let imageDir: string;
let layout: { configDigest: string; manifestDigest: string };

async function buildDockerArchive(dest: string) {
  const work = tempDir('kemu-cri-docker-');
  const layerDir = tempDir('kemu-cri-layer-');
  fs.writeFileSync(path.join(layerDir, 'hello.txt'), 'hi\n');
  fs.mkdirSync(path.join(work, 'abc'));
  await tar.c({ cwd: layerDir, file: path.join(work, 'abc/layer.tar') }, ['.']);
  const config = JSON.stringify({ architecture: 'amd64', os: 'linux', config: { User: 'nobody', Cmd: ['/hello'] }, rootfs: { type: 'layers', diff_ids: [] } });
  const configName = `${createHash('sha256').update(config).digest('hex')}.json`;
  fs.writeFileSync(path.join(work, configName), config);
  fs.writeFileSync(path.join(work, 'manifest.json'), JSON.stringify([{ Config: configName, RepoTags: ['example.com/team/app:v2'], Layers: ['abc/layer.tar'] }]));
  await tar.c({ cwd: work, file: dest }, fs.readdirSync(work));
  return `sha256:${configName.slice(0, 64)}`;
}

let dockerId: string;

beforeAll(async () => {
  dir = tempDir('kemu-cri-img-');
  imageDir = path.join(dir, 'images');
  layout = await buildBusyboxLayout(path.join(imageDir, 'busybox'), 'kemu.test/busybox:1.36', '1000');
  // The same layout again as an OCI archive (what `docker save`/`skopeo copy oci-archive:` produce).
  await tar.c({ cwd: path.join(imageDir, 'busybox'), file: path.join(imageDir, 'busybox-copy.tar') }, ['oci-layout', 'index.json', 'blobs']);
  dockerId = await buildDockerArchive(path.join(imageDir, 'app.tar'));
  fs.mkdirSync(path.join(imageDir, 'not-an-image'));
  shim = await startTestShim({ imageDir, syntheticImages: true, failImages: ['registry.broken/*'] }, dir);
});

afterAll(async () => {
  await shim?.close();
});

describe('images from the image dir', () => {
  it('lists layouts, OCI archives and docker archives with real digests, tags, size and user', async () => {
    const { images } = await shim.icall('ListImages', {});
    const bb = images!.find((i) => i.repoTags!.includes('kemu.test/busybox:1.36'))!;
    const blobs = path.join(imageDir, 'busybox/blobs/sha256');
    expect(bb.id).toBe(sha256sum(path.join(blobs, layout.configDigest.slice(7))));
    expect(bb.repoDigests).toEqual([`kemu.test/busybox@${sha256sum(path.join(blobs, layout.manifestDigest.slice(7)))}`]);
    const blobSizes = fs.readdirSync(blobs).reduce((a, f) => a + fs.statSync(path.join(blobs, f)).size, 0);
    expect(bb.size).toBe(blobSizes);
    expect(bb.uid).toEqual({ value: 1000 });
    // The archive holds the same image: one entry, not two.
    expect(images!.filter((i) => i.id === bb.id)).toHaveLength(1);
    const app = images!.find((i) => i.id === dockerId)!;
    expect(app.repoTags).toEqual(['example.com/team/app:v2']);
    expect(app.username).toBe('nobody');
    expect(app.uid).toBeNull();
  });

  it('resolves ImageStatus by tag, id, digest and short name; missing images give an empty answer', async () => {
    const byTag = await shim.icall('ImageStatus', { image: { image: 'kemu.test/busybox:1.36' }, verbose: true });
    const id = byTag.image!.id!;
    expect((await shim.icall('ImageStatus', { image: { image: id } })).image!.id).toBe(id);
    expect((await shim.icall('ImageStatus', { image: { image: id.slice(7) } })).image!.id).toBe(id);
    expect((await shim.icall('ImageStatus', { image: { image: byTag.image!.repoDigests![0] } })).image!.id).toBe(id);
    expect(JSON.parse(byTag.info!.info)).toMatchObject({ source: 'oci-layout', layers: 1, imageSpec: { config: { user: '1000' } } });
    const missing = await shim.icall('ImageStatus', { image: { image: 'docker.io/library/nope:1' } });
    expect(missing.image).toBeNull();
    expect((await grpcError(shim.icall('ImageStatus', { image: { image: '' } }))).code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it('pulls, removes and re-pulls an image-dir image, and the removal survives a restart', async () => {
    const ref = 'example.com/team/app:v2';
    expect((await shim.icall('PullImage', { image: { image: ref } })).imageRef).toBe(dockerId);
    await shim.icall('RemoveImage', { image: { image: ref } });
    expect((await shim.icall('ImageStatus', { image: { image: ref } })).image).toBeNull();
    await shim.icall('RemoveImage', { image: { image: ref } });
    await shim.restart();
    expect((await shim.icall('ListImages', {})).images!.map((i) => i.id)).not.toContain(dockerId);
    expect((await shim.icall('PullImage', { image: { image: ref } })).imageRef).toBe(dockerId);
    expect((await shim.icall('ListImages', { filter: { image: { image: ref } } })).images!.map((i) => i.id)).toEqual([dockerId]);
  });

  it('reports image filesystem usage and streams the image list', async () => {
    const { images } = await shim.icall('ListImages', {});
    const fsinfo = await shim.icall('ImageFsInfo', {});
    expect(fsinfo.imageFilesystems![0].usedBytes!.value).toBe(images!.reduce((a, i) => a + i.size!, 0));
    expect(fsinfo.imageFilesystems![0].fsId!.mountpoint).toContain(dir);
    const streamed = await collectStream(shim.img.StreamImages({}));
    expect(streamed.flatMap((r) => r.images!.map((i) => i.id)).sort()).toEqual(images!.map((i) => i.id).sort());
  });
});

describe('synthetic images and pull failures', () => {
  it('pulls any reference as a synthetic image with a deterministic digest', async () => {
    const r1 = await shim.icall('PullImage', { image: { image: 'nginx' } });
    expect(r1.imageRef).toBe(syntheticImage('docker.io/library/nginx:latest').id);
    const st = await shim.icall('ImageStatus', { image: { image: 'docker.io/library/nginx:latest' } });
    expect(st.image!.repoTags).toEqual(['docker.io/library/nginx:latest']);
    expect(st.image!.repoDigests![0]).toMatch(/^docker\.io\/library\/nginx@sha256:[0-9a-f]{64}$/);
    await shim.restart();
    expect((await shim.icall('ImageStatus', { image: { image: 'nginx' } })).image!.id).toBe(r1.imageRef);
    expect((await shim.icall('PullImage', { image: { image: 'nginx:latest' } })).imageRef).toBe(r1.imageRef);
  });

  it('fails configured references like an unreachable registry and rejects malformed ones', async () => {
    const err = await grpcError(shim.icall('PullImage', { image: { image: 'registry.broken/app:1' } }));
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.details).toContain('lookup registry.broken: no such host');
    expect((await shim.icall('ImageStatus', { image: { image: 'registry.broken/app:1' } })).image).toBeNull();
    const bad = await grpcError(shim.icall('PullImage', { image: { image: 'Bad Ref' } }));
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await grpcError(shim.icall('PullImage', {}))).code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it('answers NOT_FOUND for unknown references without --synthetic-images', async () => {
    await shim.restart({ syntheticImages: false });
    const err = await grpcError(shim.icall('PullImage', { image: { image: 'docker.io/library/redis:7' } }));
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect(err.details).toContain('docker.io/library/redis:7');
    await shim.restart({ syntheticImages: true });
  });
});

const cli = (args: string[]) =>
  spawnSync(process.execPath, ['--conditions=@kemu/source', '--import', 'tsx', path.join(__dirname, 'cli.ts'), ...args], {
    encoding: 'utf8',
    cwd: path.join(__dirname, '..'),
    timeout: 60_000,
  });

describe('kemu-cri import', () => {
  it('copies a layout into the image dir and prints its reference and digest; a running shim pulls it', async () => {
    const src = path.join(dir, 'incoming');
    const built = await buildBusyboxLayout(src, 'kemu.test/imported:2');
    const r = cli(['import', src, '--image-dir', imageDir]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^kemu.test/imported:2\\t${built.configDigest}\\t\\d+\\n$`));
    expect(fs.existsSync(path.join(imageDir, 'incoming', 'index.json'))).toBe(true);
    expect((await shim.icall('PullImage', { image: { image: 'kemu.test/imported:2' } })).imageRef).toBe(built.configDigest);
  });

  it('refuses things that are not images with a one-line error', () => {
    const r = cli(['import', path.join(imageDir, 'not-an-image'), '--image-dir', imageDir]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^kemu-cri: .*not-an-image is not an OCI image layout \(no oci-layout file\)\n$/);
    const missing = cli(['import', '/nonexistent/x.tar', '--image-dir', imageDir]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toBe('kemu-cri: /nonexistent/x.tar: no such file or directory\n');
  });
});

describe('image metadata bounds', () => {
  it('skips an image whose manifest is over 4 MiB or whose archive names a file outside itself, and says why', async () => {
    const root = tempDir('kemu-cri-big-');
    const images = path.join(root, 'images');
    const big = path.join(images, 'big');
    fs.mkdirSync(path.join(big, 'blobs', 'sha256'), { recursive: true });
    const blob = (data: string) => {
      const hex = createHash('sha256').update(data).digest('hex');
      fs.writeFileSync(path.join(big, 'blobs', 'sha256', hex), data);
      return { digest: `sha256:${hex}`, size: Buffer.byteLength(data) };
    };
    const config = blob(JSON.stringify({ architecture: 'amd64', os: 'linux', config: {}, rootfs: { type: 'layers', diff_ids: [] } }));
    // valid JSON, padded with whitespace past the bound
    const manifestJson = JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config, layers: [] });
    const manifest = blob(manifestJson + ' '.repeat(MAX_IMAGE_METADATA_BYTES + 1 - manifestJson.length));
    fs.writeFileSync(path.join(big, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
    fs.writeFileSync(
      path.join(big, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest, annotations: { 'org.opencontainers.image.ref.name': 'kemu.test/big:1' } }],
      }),
    );
    const work = tempDir('kemu-cri-escape-');
    fs.writeFileSync(path.join(work, 'manifest.json'), JSON.stringify([{ Config: '../../../../../../etc/hostname', RepoTags: ['kemu.test/escape:1'], Layers: [] }]));
    await tar.c({ cwd: work, file: path.join(images, 'escape.tar') }, ['manifest.json']);
    await buildBusyboxLayout(path.join(images, 'fine'), 'kemu.test/fine:1');

    const s = await startTestShim({ imageDir: images, syntheticImages: false, stateDir: path.join(root, 'state') }, root);
    try {
      const err = await grpcError(s.icall('PullImage', { image: { image: 'kemu.test/big:1' } }));
      expect(err.code).toBe(grpc.status.NOT_FOUND);
      expect(err.details).toContain(`image blob ${manifest.digest} at`);
      expect(err.details).toContain(`is ${MAX_IMAGE_METADATA_BYTES + 1} bytes long; at most ${MAX_IMAGE_METADATA_BYTES} are read`);
      expect(err.details).toMatch(/escape\.tar: file named by manifest\.json .* is outside the allowed roots/);
      expect((await s.icall('PullImage', { image: { image: 'kemu.test/fine:1' } })).imageRef).toMatch(/^sha256:/);
    } finally {
      await s.close();
    }
  });
});

