#!/usr/bin/env node
// kemu-cri: serve the CRI on a unix socket, or import images into the image dir.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import type { SimCall } from './backend-sim.js';
import { ImageStore, loadImageSource } from './image-store.js';
import { RUNTIME_VERSION } from './runtime.js';
import { startCriServer } from './server.js';

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function parseLatency(value: string): Partial<Record<SimCall, number>> {
  const out: Record<string, number> = {};
  for (const part of value.split(',')) {
    const [k, v] = part.split('=');
    const ms = Number(v);
    if (!k || !Number.isFinite(ms) || ms < 0) {
      throw new InvalidArgumentError(`want call=ms pairs such as runPodSandbox=5,startContainer=2 (got ${JSON.stringify(part)})`);
    }
    out[k.trim()] = ms;
  }
  return out;
}

function parseAddr(value: string): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(value);
  if (!m) throw new InvalidArgumentError('want host:port, e.g. 127.0.0.1:10010');
  return { host: m[1].replace(/^\[|\]$/g, '') || '127.0.0.1', port: Number(m[2]) };
}

function fail(message: string): never {
  process.stderr.write(`kemu-cri: ${message}\n`);
  process.exit(1);
}

const program = new Command('kemu-cri')
  .description('A CRI runtime.v1 shim (RuntimeService + ImageService) with sim, runc and process backends')
  .version(RUNTIME_VERSION);

program
  .command('serve', { isDefault: true })
  .description('serve RuntimeService and ImageService on a unix socket')
  .option('--listen <endpoint>', 'unix socket endpoint', 'unix:///run/kemu/cri.sock')
  .option('--backend <name>', 'sim (no processes), runc (OCI containers run by runc) or process (host processes; tests only)', 'sim')
  .option('--registry-config <dir>', 'containerd-style registry hosts directory (<dir>/<host>/hosts.toml): mirrors, CA, plain HTTP')
  .option('--no-registry', 'never pull from registries (the default for sim and process)')
  .option('--runc <path>', 'runc backend: the runc binary', 'runc')
  .option('--snapshotter <kind>', 'runc backend: overlayfs (default) or copy', 'overlayfs')
  .option('--state-dir <dir>', 'where sandbox/container state is persisted', '/var/lib/kemu-cri')
  .option('--image-dir <dir>', 'OCI image layouts and image tarballs to serve as images')
  .option('--synthetic-images', 'any reference pulls as a synthetic image with a deterministic digest')
  .option('--fail-image <glob>', 'references matching this glob fail to pull like an unreachable registry', collect)
  .option('--cni-conf-dir <dir>', 'CNI network configuration directory')
  .option('--cni-bin-dir <dir>', 'CNI plugin directory (repeatable)', collect)
  .option('--cni-cache-dir <dir>', 'CNI result cache directory')
  .option('--pod-cidr <cidr>', 'initial pod CIDR (kubelet can change it with UpdateRuntimeConfig)')
  .option('--runtime-handler <name>', 'accept this runtime handler besides the default (repeatable)', collect)
  .option('--allowed-log-root <dir>', 'directory sandbox log directories must live under (repeatable; default /var/log/pods and /tmp)', collect)
  .option('--streaming-addr <host:port>', 'address of the exec/attach/port-forward server', parseAddr)
  .option('--sim-latency <call=ms,...>', 'sim backend: extra latency per call', parseLatency)
  .option('--sim-network <kind>', 'sim backend without CNI config: netsim (bridge + host-local on a simulated datapath) or ipam (addresses only)', 'netsim')
  .option('--grpc-engine <engine>', 'gRPC server: http2 (the lean node:http2 engine) or grpc-js (default: $KEMU_GRPC_ENGINE or http2)')
  .action(async (o) => {
    if (o.grpcEngine !== undefined && o.grpcEngine !== 'http2' && o.grpcEngine !== 'grpc-js') fail(`unknown --grpc-engine ${JSON.stringify(o.grpcEngine)}: use http2 or grpc-js`);
    if (o.backend !== 'sim' && o.backend !== 'process' && o.backend !== 'runc') fail(`unknown backend ${JSON.stringify(o.backend)}: use --backend sim, runc or process`);
    if (o.backend !== 'sim' && process.getuid?.() !== 0) fail(`the ${o.backend} backend needs root (namespaces, cgroups, mounts): run as root or use --backend sim`);
    if (o.snapshotter !== 'overlayfs' && o.snapshotter !== 'copy') fail(`unknown --snapshotter ${JSON.stringify(o.snapshotter)}: use overlayfs or copy`);
    if (!o.listen.startsWith('unix:')) fail(`--listen ${o.listen} is not a unix socket endpoint: use unix:///path/to/cri.sock`);
    if (o.cniBinDir && !o.cniConfDir) fail('--cni-bin-dir needs --cni-conf-dir');
    if (o.simNetwork !== 'netsim' && o.simNetwork !== 'ipam') fail(`unknown --sim-network ${JSON.stringify(o.simNetwork)}: use netsim or ipam`);
    let server: Awaited<ReturnType<typeof startCriServer>>;
    try {
      server = await startCriServer({
        listen: o.listen,
        backend: o.backend,
        stateDir: path.resolve(o.stateDir),
        imageDir: o.imageDir ? path.resolve(o.imageDir) : undefined,
        syntheticImages: !!o.syntheticImages,
        failImages: o.failImage,
        registry:
          o.registry === false ? false : o.registryConfig || o.backend === 'runc' ? { configPath: o.registryConfig ? path.resolve(o.registryConfig) : undefined } : undefined,
        runc: { runc: o.runc, snapshotter: o.snapshotter },
        cni: o.cniConfDir
          ? {
              confDir: path.resolve(o.cniConfDir),
              binDirs: (o.cniBinDir ?? ['/opt/cni/bin']).flatMap((d: string) => d.split(':')),
              cacheDir: o.cniCacheDir,
            }
          : undefined,
        podCidr: o.podCidr,
        runtimeHandlers: o.runtimeHandler,
        allowedLogRoots: o.allowedLogRoot,
        streaming: o.streamingAddr ?? {},
        sim: o.simLatency ? { latencyMs: o.simLatency } : undefined,
        simNetwork: o.simNetwork,
        grpcEngine: o.grpcEngine,
      });
    } catch (err) {
      fail(err instanceof Error ? err.message : String(err));
    }
    process.stderr.write(
      `kemu-cri ${RUNTIME_VERSION}: serving on unix://${server.socketPath} (backend ${o.backend}, network ${server.runtime.network.name}, streaming ${server.streaming?.url ?? 'off'})\n`,
    );
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`kemu-cri: ${signal}: shutting down\n`);
      server.close().then(
        () => process.exit(0),
        (err) => fail(`shutdown: ${err instanceof Error ? err.message : String(err)}`),
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });

program
  .command('import')
  .description('add OCI image layouts or image tarballs to the image dir (a running shim picks them up on pull)')
  .argument('<source...>', 'OCI layout directories or .tar/.tar.gz image archives')
  .requiredOption('--image-dir <dir>', 'the image dir the shim serves')
  .action(async (sources: string[], o) => {
    const dir = path.resolve(o.imageDir);
    fs.mkdirSync(dir, { recursive: true });
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-cri-import-'));
    let problem: string | undefined;
    try {
      for (const src of sources) {
        if (!fs.existsSync(src)) throw new Error(`${src}: no such file or directory`);
        let images: Awaited<ReturnType<typeof loadImageSource>>;
        try {
          images = await loadImageSource(path.resolve(src), cache);
        } catch (err) {
          throw new Error(`${src}: ${err instanceof Error ? err.message : String(err)}`);
        }
        if (images.length === 0) throw new Error(`${src}: contains no image manifests`);
        const dest = path.join(dir, path.basename(path.resolve(src)));
        if (path.resolve(src) !== dest) {
          if (fs.existsSync(dest)) throw new Error(`${dest} already exists in the image dir: remove it first or rename the source`);
          fs.cpSync(src, dest, { recursive: true });
        }
        for (const img of images) {
          process.stdout.write(`${img.repoTags[0] ?? '<untagged>'}\t${img.id}\t${img.size}\n`);
        }
      }
    } catch (err) {
      problem = err instanceof Error ? err.message : String(err);
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
    }
    if (problem) fail(problem);
  });

program
  .command('images')
  .description('manage the image store of a shim state dir')
  .command('import')
  .description('import OCI image layouts or archives (OCI or docker save) into the content store; a shim started on the same state dir lists them')
  .argument('<source...>', 'OCI layout directories or .tar/.tar.gz image archives')
  .option('--state-dir <dir>', 'the state dir the shim uses', '/var/lib/kemu-cri')
  .action(async (sources: string[], o) => {
    const store = new ImageStore({ stateDir: path.resolve(o.stateDir), registry: {} });
    await store.load();
    for (const src of sources) {
      if (!fs.existsSync(src)) fail(`${src}: no such file or directory`);
      let imported: Awaited<ReturnType<ImageStore['importSource']>>;
      try {
        imported = await store.importSource(path.resolve(src));
      } catch (err) {
        fail(`${src}: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (imported.length === 0) fail(`${src}: contains no image manifests`);
      for (const img of imported) process.stdout.write(`${img.repoTags[0] ?? '<untagged>'}\t${img.id}\t${img.size}\n`);
    }
  });

program.parseAsync(process.argv).catch((err) => fail(err instanceof Error ? err.message : String(err)));
