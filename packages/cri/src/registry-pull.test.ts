// PullImage against a real registry (Debian's docker-registry on loopback) with images built here by umoci
// and pushed by skopeo: a single manifest, an index with platform selection, bearer-token auth through
// the CRI AuthConfig, a mirror from hosts.toml, digest verification, shared layers and GC.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBusyboxImages, type BuiltImages, startRegistry, type TestRegistry } from './test-util-registry.js';
import { containerConfig, grpcError, podConfig, startTestShim, tempDir, type TestShim } from './test-util.js';

const ok = requirePeers('registry pulls', [peers.dockerRegistry, peers.skopeo, peers.umoci, peers.openssl, peers.busybox, peers.root]);

function layoutDigest(layout: string, tag: string): string {
  const index = JSON.parse(fs.readFileSync(path.join(layout, 'index.json'), 'utf8')) as { manifests: any[] };
  return index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === tag).digest;
}

function layoutConfigDigest(layout: string, tag: string): string {
  const m = JSON.parse(fs.readFileSync(path.join(layout, 'blobs/sha256', layoutDigest(layout, tag).slice(7)), 'utf8'));
  return m.config.digest;
}

describe.runIf(ok)('PullImage from a registry', () => {
  let images: BuiltImages;
  let open: TestRegistry;
  let locked: TestRegistry;
  let shim: TestShim;
  let hostsDir: string;

  beforeAll(async () => {
    images = buildBusyboxImages(tempDir('kemu-cri-images-'));
    [open, locked] = await Promise.all([startRegistry(), startRegistry({ auth: true })]);
    for (const r of [open, locked]) {
      await r.push(images.layout, 'v1', 'tools/busybox:v1');
      await r.push(images.layout, 'arm', 'tools/busybox:arm');
      await r.push(images.layout, 'multi', 'tools/busybox:multi', { all: true });
    }
    hostsDir = tempDir('kemu-cri-hosts-');
    // A registry name nobody serves, mirrored by the open loopback registry.
    fs.mkdirSync(path.join(hostsDir, 'registry.example.invalid'));
    fs.writeFileSync(
      path.join(hostsDir, 'registry.example.invalid', 'hosts.toml'),
      `server = "https://registry.example.invalid"\n\n[host."http://${open.host}"]\n  capabilities = ["pull", "resolve"]\n`,
    );
    shim = await startTestShim({ backend: 'sim', syntheticImages: false, registry: { configPath: hostsDir } });
  }, 60_000);

  afterAll(async () => {
    await shim?.close();
    await open?.stop();
    await locked?.stop();
  });

  it('pulls a single manifest over plain HTTP from loopback with no configuration; ImageStatus has the config', async () => {
    const ref = `${open.host}/tools/busybox:v1`;
    const pulled = await shim.icall('PullImage', { image: { image: ref } });
    expect(pulled.imageRef).toBe(layoutConfigDigest(images.layout, 'v1'));
    const st = await shim.icall('ImageStatus', { image: { image: ref }, verbose: true });
    expect(st.image!.repoTags).toEqual([ref]);
    expect(st.image!.repoDigests).toEqual([`${open.host}/tools/busybox@${layoutDigest(images.layout, 'v1')}`]);
    expect(st.image!.username).toBe('app');
    expect(st.image!.size).toBeGreaterThan(fs.statSync('/bin/busybox').size / 3);
    const spec = JSON.parse(st.info!.info).imageSpec.config;
    expect(spec).toMatchObject({
      User: 'app',
      Entrypoint: ['/bin/sh', '-c'],
      Cmd: ['echo hello from $(id -un) $GREETING; exec sleep 3600'],
      Env: ['PATH=/bin', 'GREETING=hi'],
      WorkingDir: '/home/app',
      ExposedPorts: { '8080/tcp': {} },
    });
  });

  it("chooses this platform's manifest from an index, and records the index digest as the repo digest", async () => {
    const ref = `${open.host}/tools/busybox:multi`;
    const pulled = await shim.icall('PullImage', { image: { image: ref } });
    expect(pulled.imageRef).toBe(layoutConfigDigest(images.layout, 'v1'));
    expect(pulled.imageRef).not.toBe(layoutConfigDigest(images.layout, 'arm'));
    const st = await shim.icall('ImageStatus', { image: { image: ref } });
    expect(st.image!.repoDigests).toContain(`${open.host}/tools/busybox@${layoutDigest(images.layout, 'multi')}`);
    // by digest too
    const byDigest = await shim.icall('PullImage', { image: { image: `${open.host}/tools/busybox@${layoutDigest(images.layout, 'multi')}` } });
    expect(byDigest.imageRef).toBe(pulled.imageRef);
  });

  it('fetches a bearer token from the WWW-Authenticate realm with the AuthConfig credentials', async () => {
    const ref = `${locked.host}/tools/busybox:v1`;
    const none = await grpcError(shim.icall('PullImage', { image: { image: ref } }));
    expect(none.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(none.details).toMatch(/401|token/);
    const wrong = await grpcError(shim.icall('PullImage', { image: { image: ref }, auth: { username: locked.user, password: 'nope' } }));
    expect(wrong.code).toBe(grpc.status.UNAUTHENTICATED);
    const before = locked.tokensIssued();
    const pulled = await shim.icall('PullImage', { image: { image: ref }, auth: { username: locked.user, password: locked.password } });
    expect(pulled.imageRef).toBe(layoutConfigDigest(images.layout, 'v1'));
    expect(locked.tokensIssued()).toBeGreaterThan(before);
    // the base64 `auth` form of the same credentials
    const multi = await shim.icall('PullImage', {
      image: { image: `${locked.host}/tools/busybox:multi` },
      auth: { auth: Buffer.from(`${locked.user}:${locked.password}`).toString('base64') },
    });
    expect(multi.imageRef).toBe(pulled.imageRef);
  });

  it('pulls through a mirror named in hosts.toml', async () => {
    const pulled = await shim.icall('PullImage', { image: { image: 'registry.example.invalid/tools/busybox:arm' } });
    expect(pulled.imageRef).toBe(layoutConfigDigest(images.layout, 'arm'));
    const st = await shim.icall('ImageStatus', { image: { image: 'registry.example.invalid/tools/busybox:arm' } });
    expect(st.image!.repoTags).toEqual(['registry.example.invalid/tools/busybox:arm']);
  });

  it('refuses a manifest whose bytes do not match the digest asked for, and records nothing', async () => {
    const liar = http.createServer((req, res) => {
      if (req.url === '/v2/') return res.writeHead(200).end('{}');
      res.writeHead(200, { 'content-type': 'application/vnd.oci.image.manifest.v1+json' }).end('{"schemaVersion":2,"config":{"digest":"sha256:' + '0'.repeat(64) + '","size":2},"layers":[]}');
    });
    await new Promise<void>((r) => liar.listen(0, '127.0.0.1', () => r()));
    const host = `127.0.0.1:${(liar.address() as net.AddressInfo).port}`;
    try {
      const wanted = layoutDigest(images.layout, 'v1');
      const err = await grpcError(shim.icall('PullImage', { image: { image: `${host}/tools/busybox@${wanted}` } }));
      expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
      expect(err.details).toContain('digest mismatch');
      const listed = await shim.icall('ListImages', {});
      expect((listed.images ?? []).flatMap((i) => i.repoDigests ?? []).some((d) => d.startsWith(host))).toBe(false);
    } finally {
      await new Promise((r) => liar.close(r));
    }
  });

  it('an unknown tag is NOT_FOUND naming the registry', async () => {
    const err = await grpcError(shim.icall('PullImage', { image: { image: `${open.host}/tools/busybox:nope` } }));
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect(err.details).toContain(open.host);
  });

  it('shares layers between images, refuses to remove an image in use, and GCs blobs no image holds', async () => {
    const content = path.join(shim.stateDir, 'content', 'blobs', 'sha256');
    const v1 = `${open.host}/tools/busybox:v1`;
    const arm = `${open.host}/tools/busybox:arm`;
    await shim.icall('PullImage', { image: { image: v1 } });
    await shim.icall('PullImage', { image: { image: arm } });
    const layerDigest = JSON.parse(fs.readFileSync(path.join(images.layout, 'blobs/sha256', layoutDigest(images.layout, 'v1').slice(7)), 'utf8')).layers[0].digest as string;
    expect(fs.existsSync(path.join(content, layerDigest.slice(7)))).toBe(true);
    const fsBefore = await shim.icall('ImageFsInfo', {});
    expect(Number(fsBefore.imageFilesystems![0].usedBytes!.value)).toBeGreaterThan(fs.statSync('/bin/busybox').size / 3);

    const pod = (await shim.call('RunPodSandbox', { config: podConfig(shim.dir) })).podSandboxId;
    const cid = (await shim.call('CreateContainer', { podSandboxId: pod, config: containerConfig({ image: { image: arm } }), sandboxConfig: podConfig(shim.dir) })).containerId;
    const inUse = await grpcError(shim.icall('RemoveImage', { image: { image: arm } }));
    expect(inUse.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(inUse.details).toContain('in use');

    // Every image the earlier tests pulled that is not `arm` goes; the shared layer stays for `arm`.
    const armId = layoutConfigDigest(images.layout, 'arm');
    for (const img of (await shim.icall('ListImages', {})).images ?? []) {
      if (img.id !== armId) await shim.icall('RemoveImage', { image: { image: img.id } });
    }
    expect(fs.existsSync(path.join(content, layerDigest.slice(7)))).toBe(true);
    expect(fs.existsSync(path.join(content, layoutConfigDigest(images.layout, 'v1').slice(7)))).toBe(false);

    await shim.call('RemoveContainer', { containerId: cid });
    await shim.call('RemovePodSandbox', { podSandboxId: pod });
    await shim.icall('RemoveImage', { image: { image: arm } });
    expect(fs.readdirSync(content)).toEqual([]);
  });

  it('`kemu-cri images import` loads docker-save and OCI archives into the content store a shim serves', async () => {
    const dir = tempDir('kemu-cri-import-');
    const dockerTar = path.join(dir, 'busybox-docker.tar');
    const ociTar = path.join(dir, 'busybox-oci.tar');
    execFileSync('skopeo', ['copy', '--quiet', `oci:${images.layout}:v1`, `docker-archive:${dockerTar}:tools/imported:docker`]);
    execFileSync('skopeo', ['copy', '--quiet', `oci:${images.layout}:arm`, `oci-archive:${ociTar}:imported-oci`]);
    const stateDir = path.join(dir, 'state');
    const r = spawnSync(
      process.execPath,
      ['--conditions=@kemu/source', '--import', 'tsx', path.join(import.meta.dirname, 'cli.ts'), 'images', 'import', dockerTar, ociTar, '--state-dir', stateDir],
      { encoding: 'utf8' },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('docker.io/tools/imported:docker');
    const bad = spawnSync(process.execPath, ['--conditions=@kemu/source', '--import', 'tsx', path.join(import.meta.dirname, 'cli.ts'), 'images', 'import', '/etc/hostname', '--state-dir', stateDir], { encoding: 'utf8' });
    expect(bad.status).toBe(1);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    const imported = await startTestShim({ backend: 'sim', syntheticImages: false, registry: {}, stateDir });
    try {
      const st = await imported.icall('ImageStatus', { image: { image: 'docker.io/tools/imported:docker' }, verbose: true });
      expect(st.image!.id).toBe(layoutConfigDigest(images.layout, 'v1'));
      expect(JSON.parse(st.info!.info).imageSpec.config.User).toBe('app');
      const listed = (await imported.icall('ListImages', {})).images ?? [];
      expect(listed.map((i) => i.id).sort()).toEqual([layoutConfigDigest(images.layout, 'v1'), layoutConfigDigest(images.layout, 'arm')].sort());
    } finally {
      await imported.close();
    }
  });

  it('reaches an HTTPS registry with the CA named in hosts.toml, and refuses it without', async () => {
    const tls = await startRegistry({ tls: true });
    try {
      await tls.push(images.layout, 'v1', 'tools/busybox:v1');
      const ref = `${tls.host}/tools/busybox:v1`;
      // Loopback defaults to plain HTTP: against a TLS port that fails as unreachable.
      const plain = await grpcError(shim.icall('PullImage', { image: { image: ref } }));
      expect(plain.code).toBe(grpc.status.UNAVAILABLE);
      const dir = path.join(hostsDir, tls.host);
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'hosts.toml'), `server = "https://${tls.host}"\n`);
      const untrusted = await grpcError(shim.icall('PullImage', { image: { image: ref } }));
      expect(untrusted.code).toBe(grpc.status.UNAVAILABLE);
      expect(untrusted.details).toMatch(/certificate/i);
      fs.copyFileSync(tls.caFile!, path.join(dir, 'ca.crt'));
      fs.writeFileSync(path.join(dir, 'hosts.toml'), `server = "https://${tls.host}"\nca = "ca.crt"\n`);
      const pulled = await shim.icall('PullImage', { image: { image: ref } });
      expect(pulled.imageRef).toBe(layoutConfigDigest(images.layout, 'v1'));
    } finally {
      await tls.stop();
    }
  });
});
