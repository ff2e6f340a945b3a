// containerd 1.6 (Debian's `containerd`, its CRI plugin) as a test peer: started inside a network namespace
// of the test's that plays the node, with its root, state, socket, CNI conf dir and CNI bin dir under one
// temporary directory, driven over its CRI socket with @kemu/proto's client. The sandbox image is built from
// busybox-static and imported with `ctr`, so nothing is pulled. Shared by the e2e test and the benchmark.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cri, openChannel, type PromiseApi } from '@kemu/proto';

export const SANDBOX_IMAGE = 'kemu.test/pause:1';
const CONTAINERD = process.env.KEMU_CONTAINERD ?? '/usr/bin/containerd';
const CTR = process.env.KEMU_CTR ?? '/usr/bin/ctr';

type RuntimeApi = PromiseApi<cri.RuntimeServiceMethods>;

function sh(cmd: string, args: string[], opts: { input?: string; timeoutMs?: number } = {}): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input: opts.input, timeout: opts.timeoutMs ?? 30_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.error?.message ?? ''}${r.stderr}${r.stdout}`.trim());
  return r.stdout;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * Writes an OCI image archive (oci-layout, index.json, blobs) of one layer holding busybox-static, whose
 * entrypoint sleeps forever: a sandbox ("pause") image containerd can run without a network.
 */
export function buildPauseImage(dir: string, busybox = '/bin/busybox'): string {
  const root = path.join(dir, 'pause-rootfs');
  const layout = path.join(dir, 'pause-oci');
  mkdirSync(path.join(root, 'bin'), { recursive: true });
  mkdirSync(path.join(layout, 'blobs', 'sha256'), { recursive: true });
  writeFileSync(path.join(root, 'bin', 'busybox'), readFileSync(busybox), { mode: 0o755 });
  const layerPath = path.join(dir, 'layer.tar');
  sh('tar', ['--numeric-owner', '--owner=0', '--group=0', '--mtime=@0', '-C', root, '-cf', layerPath, 'bin']);
  const layer = readFileSync(layerPath);
  const blob = (b: Buffer) => {
    const d = sha256(b);
    writeFileSync(path.join(layout, 'blobs', 'sha256', d), b);
    return { digest: `sha256:${d}`, size: b.length };
  };
  const arch = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch] ?? process.arch;
  const config = Buffer.from(
    JSON.stringify({
      architecture: arch,
      os: 'linux',
      config: { Entrypoint: ['/bin/busybox', 'sleep', '2147483647'] },
      rootfs: { type: 'layers', diff_ids: [`sha256:${sha256(layer)}`] },
    }),
  );
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...blob(config) },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...blob(layer) }],
    }),
  );
  const m = blob(manifest);
  writeFileSync(path.join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(
    path.join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          ...m,
          platform: { architecture: arch, os: 'linux' },
          annotations: { 'io.containerd.image.name': SANDBOX_IMAGE, 'org.opencontainers.image.ref.name': '1' },
        },
      ],
    }),
  );
  const archive = path.join(dir, 'pause.oci.tar');
  sh('tar', ['--numeric-owner', '--owner=0', '--group=0', '-C', layout, '-cf', archive, 'oci-layout', 'index.json', 'blobs']);
  return archive;
}

export interface ContainerdOptions {
  /** Everything of this instance lives here (root, state, sockets, config). */
  dir: string;
  /** The network namespace that plays the node (a name under /var/run/netns). */
  netns: string;
  cniConfDir: string;
  cniBinDir: string;
  /** Extra environment for containerd and so for the CNI plugins it execs (e.g. KEMU_CNI_DAEMON). */
  env?: Record<string, string>;
  /** OCI archive of the sandbox image (see buildPauseImage). */
  sandboxImageArchive: string;
  startTimeoutMs?: number;
  /** Serve containerd's Prometheus metrics on this port of the node namespace's loopback. */
  metricsPort?: number;
  /** The CRI plugin's registry hosts directory (`<dir>/<host>/hosts.toml`), e.g. for a plain-HTTP registry. */
  registryConfigPath?: string;
}

export interface Containerd {
  readonly socket: string;
  readonly runtime: RuntimeApi;
  readonly pid: number;
  /** containerd's output so far (for failure messages). */
  output(): string;
  /** containerd's metrics in Prometheus' text format (needs `metricsPort`). */
  metrics(): string;
  /** Stops and removes every pod sandbox, stops containerd and its shims, unmounts what it left. */
  stop(): Promise<void>;
}

function configToml(o: ContainerdOptions, socket: string): string {
  const q = JSON.stringify;
  return `version = 2
root = ${q(path.join(o.dir, 'root'))}
state = ${q(path.join(o.dir, 'state'))}
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = ${q(socket)}

[ttrpc]
  address = ${q(`${socket}.ttrpc`)}

${o.metricsPort ? `[metrics]\n  address = "127.0.0.1:${o.metricsPort}"\n\n` : ''}[plugins."io.containerd.internal.v1.opt"]
  path = ${q(path.join(o.dir, 'opt'))}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${q(SANDBOX_IMAGE)}
  # Root here lacks CAP_SYS_RESOURCE: containers must not ask for a lower oom_score_adj than containerd's.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ${q(o.cniBinDir)}
    conf_dir = ${q(o.cniConfDir)}
    max_conf_num = 1
${o.registryConfigPath ? `  [plugins."io.containerd.grpc.v1.cri".registry]\n    config_path = ${q(o.registryConfigPath)}\n` : ''}`;
}

/** Processes whose command line names `needle` (containerd's shims carry its socket address). */
function pidsWith(needle: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').includes(needle)) out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
}

/** Mount points at or under `dir`, deepest first. */
function mountsUnder(dir: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const mp = line.split(' ')[4];
    if (mp && (mp === dir || mp.startsWith(`${dir}/`))) out.push(mp.replace(/\\040/g, ' '));
  }
  return out.sort((a, b) => b.length - a.length);
}

export async function startContainerd(o: ContainerdOptions): Promise<Containerd> {
  mkdirSync(o.dir, { recursive: true });
  const socket = path.join(o.dir, 'containerd.sock');
  const cfg = path.join(o.dir, 'config.toml');
  writeFileSync(cfg, configToml(o, socket));
  // nsenter, not `ip netns exec`: the latter remounts /sys, which hides the cgroup tree runc needs.
  const proc: ChildProcess = spawn('nsenter', [`--net=/var/run/netns/${o.netns}`, CONTAINERD, '--config', cfg, '--log-level', 'warn'], {
    env: { ...process.env, PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin`, ...o.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const channel = openChannel(`unix://${socket}`);
  const runtime = channel.service(cri.RuntimeServiceService);
  const stop = async () => {
    try {
      if (proc.exitCode === null) {
        const pods = await runtime.ListPodSandbox({}, { timeoutMs: 10_000 }).catch(() => ({ items: [] }));
        for (const p of pods.items ?? []) {
          await runtime.StopPodSandbox({ podSandboxId: p.id }, { timeoutMs: 20_000 }).catch(() => undefined);
          await runtime.RemovePodSandbox({ podSandboxId: p.id }, { timeoutMs: 20_000 }).catch(() => undefined);
        }
      }
    } finally {
      channel.close();
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (proc.exitCode === null) proc.kill('SIGKILL');
      }
      // Shims outlive containerd by design; these are this instance's (they name its socket).
      for (const pid of pidsWith(socket)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      for (const mp of mountsUnder(o.dir)) spawnSync('umount', ['-l', mp]);
    }
  };
  const deadline = Date.now() + (o.startTimeoutMs ?? 30_000);
  try {
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`containerd exited ${proc.exitCode}:\n${out}`);
      if (existsSync(socket)) {
        const ok = await runtime
          .Status({}, { timeoutMs: 2_000 })
          .then(() => true)
          .catch(() => false);
        if (ok) break;
      }
      if (Date.now() > deadline) throw new Error(`containerd did not answer on ${socket}:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    sh(CTR, ['--address', socket, '-n', 'k8s.io', 'images', 'import', '--no-unpack', o.sandboxImageArchive], { timeoutMs: 60_000 });
    // The CRI plugin learns of the import from an event: wait until it sees the image, or it would pull.
    const images = channel.service(cri.ImageServiceService);
    for (;;) {
      const st = await images.ImageStatus({ image: { image: SANDBOX_IMAGE } }, { timeoutMs: 2_000 }).catch(() => undefined);
      if (st?.image) break;
      if (Date.now() > deadline) throw new Error(`containerd's CRI plugin does not list ${SANDBOX_IMAGE} after the import:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (e) {
    await stop();
    throw e;
  }
  const metrics = () => {
    if (!o.metricsPort) throw new Error('containerd was started without metricsPort');
    const js = `require('http').get('http://127.0.0.1:${o.metricsPort}/v1/metrics',r=>r.pipe(process.stdout)).on('error',e=>{console.error(e.message);process.exit(1)})`;
    return sh('nsenter', [`--net=/var/run/netns/${o.netns}`, process.execPath, '-e', js]);
  };
  return { socket, runtime, pid: proc.pid!, output: () => out, metrics, stop };
}

/** The network namespace path containerd gave a pod (from PodSandboxStatus's verbose info). */
export async function podNetns(runtime: RuntimeApi, podSandboxId: string): Promise<string> {
  const st = await runtime.PodSandboxStatus({ podSandboxId, verbose: true });
  const info = JSON.parse(st.info?.info ?? '{}') as {
    runtimeSpec?: { linux?: { namespaces?: { type: string; path?: string }[] } };
  };
  const ns = info.runtimeSpec?.linux?.namespaces?.find((n) => n.type === 'network')?.path;
  if (!ns) throw new Error(`pod ${podSandboxId} has no network namespace path in its status`);
  return ns;
}

export function cleanupDir(dir: string): void {
  for (const mp of mountsUnder(dir)) spawnSync('umount', ['-l', mp]);
  rmSync(dir, { recursive: true, force: true });
}
