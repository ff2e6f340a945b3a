// The `runc` backend: containers are OCI bundles run by runc (as containerd's CRI plugin hands them to an OCI
// runtime): the image's unpacked root filesystem under an overlay (a copy where overlay is unavailable), the
// OCI spec from oci-spec.ts, and `runc run` kept as this container's parent so its exit code is observed.
// Pods reuse the process backend's sandbox: a network namespace CNI configures and a holder process whose
// IPC, UTS and (when shared) PID namespaces the pod's containers join.
import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { attachSession } from './attach-session.js';
import { joinCgroup, leafCgroupPath, podCgroupOf, removeCgroup } from './cgroup-parent.js';
import { ContainerCgroup, type CgroupMode, detectCgroupMode } from './cgroups.js';
import { failedPrecondition } from './errors.js';
import type { ImageStore } from './image-store.js';
import { createFifo, openFifoReader } from './fifo.js';
import { CriLogWriter } from './log-writer.js';
import { buildSpec, checkSysctls, resourcesOf } from './oci-spec.js';
import { ProcessBackend } from './backend-process.js';
import { childExecSession, exitCodeOf, osSignals, run } from './proc-util.js';
import { PtyProcess } from './pty.js';
import type {
  Backend,
  BackendHost,
  ContainerRecord,
  ExecOptions,
  ExecResult,
  ImageRecord,
  NetworkUsageSample,
  SandboxRecord,
  StreamSession,
  UsageSample,
} from './types.js';

const MAX_EXEC_OUTPUT = 16 * 1024 * 1024;

export interface RuncBackendOptions {
  /** Bundles, runc's own state (`runc --root`) and sandbox files live here. */
  stateDir?: string;
  images?: ImageStore;
  /** The runc binary (default: `runc` on PATH). */
  runc?: string;
  netnsPrefix?: string;
  /** `copy` forces the copy fallback instead of an overlay mount. */
  snapshotter?: 'overlayfs' | 'copy';
  cgroups?: CgroupMode;
}

interface Live {
  child?: ChildProcess;
  pid?: number;
  readers?: import('node:net').Socket[];
  outputsEnded?: Promise<void>;
  log?: CriLogWriter;
  output: EventEmitter;
  exited: Promise<void>;
  markExited: () => void;
  poll?: NodeJS.Timeout;
}

function ownOomScoreAdj(): number {
  try {
    return Number(fs.readFileSync('/proc/self/oom_score_adj', 'utf8').trim()) || 0;
  } catch {
    return 0;
  }
}

export class RuncBackend implements Backend {
  readonly name = 'runc';
  private host!: BackendHost;
  private readonly pods: ProcessBackend;
  private readonly live = new Map<string, Live>();
  private readonly stateDir: string;
  private readonly runcRoot: string;
  private readonly runc: string;
  private readonly cgroupMode: CgroupMode;
  /** Set by close(): an instance that closed no longer writes logs or reports exits (a new one took over). */
  private closed = false;

  constructor(private readonly opts: RuncBackendOptions = {}) {
    this.stateDir = opts.stateDir ?? '/run/kemu-cri';
    this.runcRoot = path.join(this.stateDir, 'runc');
    this.runc = opts.runc ?? 'runc';
    this.cgroupMode = opts.cgroups ?? detectCgroupMode();
    this.pods = new ProcessBackend({ stateDir: opts.stateDir, netnsPrefix: opts.netnsPrefix, cgroups: 'none' });
    fs.mkdirSync(this.runcRoot, { recursive: true, mode: 0o700 });
    fs.mkdirSync(path.join(this.stateDir, 'bundles'), { recursive: true, mode: 0o700 });
  }

  setHost(host: BackendHost): void {
    this.host = host;
    this.pods.setHost(host);
  }

  setImageStore(images: ImageStore): void {
    this.opts.images = images;
  }

  info() {
    return { backend: 'runc', runc: this.runc, runcRoot: this.runcRoot, cgroups: this.cgroupMode, snapshotter: this.opts.snapshotter ?? 'overlayfs' };
  }

  private runcArgs(...args: string[]): string[] {
    return ['--root', this.runcRoot, ...args];
  }

  private async runcOk(args: string[], input?: string): Promise<string> {
    const r = await run(this.runc, this.runcArgs(...args), { input, timeoutMs: 30_000 });
    if (r.code !== 0) throw new Error(`runc ${args[0]}: ${(r.stderr || r.stdout).trim()}`);
    return r.stdout;
  }

  // ------------------------------------------------------------ sandboxes (the process backend's holder)

  async createSandbox(sb: SandboxRecord): Promise<void> {
    checkSysctls(sb); // refuse before anything exists, as containerd does when it builds the sandbox spec
    const pod = podCgroupOf(sb.config.linux?.cgroupParent, sb.id);
    await this.pods.createSandbox(sb);
    // The holder joins the pod cgroup too, as containerd's pause container does: the pod's cgroup holds all its processes.
    const pid = sb.backend.pausePid as number | undefined;
    const leaf = leafCgroupPath(pod, sb.id);
    if (pid && this.cgroupMode !== 'none' && joinCgroup(this.cgroupMode, leaf, pid).length > 0) sb.backend.cgroupsPath = leaf;
  }

  stopSandbox(sb: SandboxRecord): Promise<void> {
    return this.pods.stopSandbox(sb);
  }

  async removeSandbox(sb: SandboxRecord): Promise<void> {
    await this.pods.removeSandbox(sb);
    // runc removes each container's cgroup; the holder's is ours, and so is the pod's when no cgroup_parent named it.
    if (this.cgroupMode !== 'none') {
      const pod = podCgroupOf(sb.config.linux?.cgroupParent, sb.id);
      await removeCgroup(this.cgroupMode, [leafCgroupPath(pod, sb.id), ...(pod.own ? [pod.dir] : [])]);
    }
  }

  portForward(sb: SandboxRecord, port: number): Promise<Duplex> {
    return this.pods.portForward(sb, port);
  }

  networkUsage(sb: SandboxRecord): Promise<NetworkUsageSample[]> {
    return this.pods.networkUsage(sb);
  }

  // ------------------------------------------------------------ containers

  private bundleOf(c: ContainerRecord): string {
    return path.join(this.stateDir, 'bundles', c.id);
  }

  async createContainer(sb: SandboxRecord, c: ContainerRecord, image: ImageRecord): Promise<void> {
    const images = this.opts.images;
    if (!images) throw new Error('runc backend has no image store');
    const lower = await images.rootfs(image);
    if (!lower) {
      throw failedPrecondition(`image ${image.repoTags[0] ?? image.id} has no layers (a synthetic image): the runc backend runs real images; pull one from a registry or import an archive`);
    }
    const bundle = this.bundleOf(c);
    const rootfs = path.join(bundle, 'rootfs');
    await fsp.mkdir(rootfs, { recursive: true, mode: 0o700 });
    c.backend.bundle = bundle;
    c.backend.snapshot = await this.prepareRootfs(lower, bundle, rootfs);
    const filesDir = sb.backend.filesDir as string;
    const spec = buildSpec({
      sb,
      c,
      image,
      rootfs,
      sandboxFiles: { hosts: path.join(filesDir, 'hosts'), resolv: path.join(filesDir, 'resolv.conf'), hostname: path.join(filesDir, 'hostname') },
      holderPid: sb.backend.pausePid as number | undefined,
      targetPid: (id) => [...this.live].find(([cid, l]) => cid === id && l.pid)?.[1].pid,
      cgroupsPath: this.cgroupsPathOf(sb, c),
      minOomScoreAdj: ownOomScoreAdj(),
    });
    await fsp.writeFile(path.join(bundle, 'config.json'), JSON.stringify(spec), { mode: 0o600 });
    c.backend.process = { args: spec.process.args, env: spec.process.env, cwd: spec.process.cwd, user: spec.process.user };
    c.backend.rootfs = rootfs;
    c.backend.cgroupsPath = spec.linux.cgroupsPath;
    if (image.config.stopSignal) c.backend.stopSignal = image.config.stopSignal;
  }

  private cgroupsPathOf(sb: SandboxRecord, c: ContainerRecord): string {
    return leafCgroupPath(podCgroupOf(sb.config.linux?.cgroupParent, sb.id), c.id);
  }

  /** An overlay over the image's unpacked root (upper and work dirs in the bundle); a copy where that fails. */
  private async prepareRootfs(lower: string, bundle: string, rootfs: string): Promise<'overlayfs' | 'copy'> {
    if (this.opts.snapshotter !== 'copy') {
      const upper = path.join(bundle, 'upper');
      const work = path.join(bundle, 'work');
      await fsp.mkdir(upper, { mode: 0o755 });
      await fsp.mkdir(work, { mode: 0o700 });
      const r = await run('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${upper},workdir=${work}`, rootfs]);
      if (r.code === 0) return 'overlayfs';
      await fsp.rm(upper, { recursive: true, force: true });
      await fsp.rm(work, { recursive: true, force: true });
    }
    const r = await run('cp', ['-a', '--', `${lower}/.`, rootfs]);
    if (r.code !== 0) throw new Error(`copying the image root filesystem: ${r.stderr.trim()}`);
    return 'copy';
  }

  private liveOf(id: string): Live {
    let l = this.live.get(id);
    if (!l) {
      let markExited!: () => void;
      const exited = new Promise<void>((r) => {
        markExited = r;
      });
      l = { output: new EventEmitter(), exited, markExited };
      l.output.setMaxListeners(0);
      this.live.set(id, l);
    }
    return l;
  }

  async startContainer(_sb: SandboxRecord, c: ContainerRecord): Promise<void> {
    const bundle = c.backend.bundle as string;
    const l = this.liveOf(c.id);
    if (c.logPath) l.log = new CriLogWriter(c.logPath, c.logRoot);
    const wantStdin = !!c.config.stdin;
    const pidFile = path.join(bundle, 'init.pid');
    await fsp.rm(pidFile, { force: true });
    // stdout/stderr are FIFOs the container holds read-write (see fifo.ts): logging survives a shim restart.
    const fifos = ['stdout', 'stderr'].map((n) => path.join(bundle, `${n}.fifo`));
    const writeFds = fifos.map((f) => createFifo(f));
    const readers = fifos.map((f) => openFifoReader(f));
    c.backend.fifos = fifos;
    let child: ChildProcess;
    try {
      // --keep: the stopped container (and its cgroup, where an OOM kill is counted) stays until RemoveContainer.
      child = spawn(this.runc, this.runcArgs('run', '--keep', '--bundle', bundle, '--pid-file', pidFile, c.id), {
        stdio: [wantStdin ? 'pipe' : 'ignore', writeFds[0], writeFds[1]],
        detached: true,
      });
    } finally {
      for (const fd of writeFds) fs.closeSync(fd);
    }
    child.stdin?.on('error', () => {}); // a container that exits while input is pending
    l.child = child;
    let early = '';
    this.follow(c, l, readers, (d) => {
      if (!c.backend.pid) early += d.toString('utf8');
    });
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.once('error', (err) => {
      early += err.message;
    });
    // runc writes the pid file once the container's process runs; a run that ends without it failed to start
    // (a container that ran and exited at once has one).
    const deadline = Date.now() + 30_000;
    let pid = 0;
    const readPid = () => {
      try {
        return Number(fs.readFileSync(pidFile, 'utf8').trim()) || 0;
      } catch {
        return 0;
      }
    };
    while (Date.now() < deadline) {
      pid = readPid();
      if (pid) break;
      if (child.exitCode !== null || child.signalCode !== null) {
        pid = readPid();
        break;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    if (!pid) {
      const { code } = await Promise.race([closed, new Promise<{ code: number | null; signal: null }>((r) => setTimeout(() => r({ code: null, signal: null }), 2000))]);
      await Promise.race([l.outputsEnded, new Promise((r) => setTimeout(r, 2000))]);
      for (const sock of l.readers ?? []) sock.destroy();
      l.log?.close();
      this.live.delete(c.id);
      throw new Error(early.trim().split('\n').slice(-3).join('; ') || `runc run exited with ${code}`);
    }
    c.backend.pid = pid;
    l.pid = pid;
    void closed.then(({ code, signal }) => this.onExit(c, exitCodeOf(code, signal)));
  }

  /** Logs and relays what the container writes to its FIFOs; resolves `l.outputsEnded` when both end. */
  private follow(c: ContainerRecord, l: Live, readers: import('node:net').Socket[], tap?: (d: Buffer) => void): void {
    readers.forEach((sock, i) => {
      const stream = i === 0 ? 'stdout' : 'stderr';
      sock.on('data', (d: Buffer) => {
        if (this.closed) return;
        tap?.(d);
        l.log?.write(stream, d);
        l.output.emit(stream, d);
      });
      sock.on('error', () => {});
    });
    l.readers = readers;
    l.outputsEnded = Promise.all(readers.map((sock) => new Promise<void>((resolve) => sock.once('close', () => resolve())))).then(() => undefined);
  }

  private async onExit(c: ContainerRecord, exitCode: number): Promise<void> {
    if (this.closed) return;
    const l = this.live.get(c.id);
    // The last output arrives once every writer of the FIFOs is gone.
    if (l?.outputsEnded) await Promise.race([l.outputsEnded, new Promise((r) => setTimeout(r, 2000))]);
    if (this.closed) return;
    for (const sock of l?.readers ?? []) sock.destroy();
    l?.log?.flush();
    l?.log?.close();
    if (l) l.log = undefined;
    l?.output.emit('end');
    l?.markExited();
    const cg = this.cgroupMode !== 'none' ? this.cgroupOf(c) : undefined;
    const oom = cg?.oomKilled() ?? false;
    this.host.containerExited(c.id, { exitCode, reason: oom ? 'OOMKilled' : exitCode === 0 ? 'Completed' : 'Error' });
  }

  private cgroupOf(c: ContainerRecord): ContainerCgroup | undefined {
    const p = c.backend.cgroupsPath as string | undefined;
    if (!p) return undefined;
    return new RuncCgroup(this.cgroupMode, p);
  }

  private async state(id: string): Promise<{ pid: number; status: string } | undefined> {
    const r = await run(this.runc, this.runcArgs('state', id), { timeoutMs: 10_000 });
    if (r.code !== 0) return undefined;
    try {
      return JSON.parse(r.stdout) as { pid: number; status: string };
    } catch {
      return undefined;
    }
  }

  async stopContainer(c: ContainerRecord, timeoutSec: number): Promise<void> {
    const l = this.live.get(c.id);
    const signal = (c.backend.stopSignal as string | undefined) ?? 'SIGTERM';
    c.backend.lastSignal = signal;
    await run(this.runc, this.runcArgs('kill', c.id, signal));
    const gone = l ? l.exited : this.waitGone(c.id);
    const timedOut = await Promise.race([gone.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), Math.max(0, timeoutSec) * 1000))]);
    if (timedOut) {
      c.backend.lastSignal = 'SIGKILL';
      await run(this.runc, this.runcArgs('kill', '--all', c.id, 'SIGKILL'));
      await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
    }
  }

  private async waitGone(id: string): Promise<void> {
    for (;;) {
      const st = await this.state(id);
      if (!st || st.status === 'stopped') return;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async removeContainer(c: ContainerRecord): Promise<void> {
    await run(this.runc, this.runcArgs('delete', '--force', c.id));
    const l = this.live.get(c.id);
    if (l?.poll) clearInterval(l.poll);
    for (const sock of l?.readers ?? []) sock.destroy();
    l?.log?.close();
    this.live.delete(c.id);
    const bundle = (c.backend.bundle as string | undefined) ?? this.bundleOf(c);
    if (c.backend.snapshot === 'overlayfs') {
      const r = await run('umount', [path.join(bundle, 'rootfs')]);
      if (r.code !== 0 && !/not mounted|no mount point/.test(r.stderr)) throw new Error(`umount ${bundle}/rootfs: ${r.stderr.trim()}`);
    }
    await fsp.rm(bundle, { recursive: true, force: true });
  }

  // ------------------------------------------------------------ exec, attach

  private execArgs(c: ContainerRecord, cmd: string[], tty: boolean): string[] {
    return this.runcArgs('exec', ...(tty ? ['-t'] : []), c.id, ...cmd);
  }

  async execSync(_sb: SandboxRecord, c: ContainerRecord, cmd: string[], timeoutMs: number): Promise<ExecResult> {
    const child = spawn(this.runc, this.execArgs(c, cmd, false), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    const collect = (into: Buffer[]) => (d: Buffer) => {
      size += d.length;
      if (size <= MAX_EXEC_OUTPUT) into.push(d);
    };
    child.stdout!.on('data', collect(out));
    child.stderr!.on('data', collect(err));
    let timer: NodeJS.Timeout | undefined;
    const result = await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) => resolve(exitCodeOf(code, signal)));
      if (timeoutMs > 0) {
        timer = setTimeout(() => {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            // gone
          }
          resolve(-1);
        }, timeoutMs);
      }
    });
    if (timer) clearTimeout(timer);
    return { stdout: Buffer.concat(out), stderr: Buffer.concat(err), exitCode: result };
  }

  exec(_sb: SandboxRecord, c: ContainerRecord, cmd: string[], opts: ExecOptions): StreamSession {
    if (opts.tty) {
      const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', TERM: 'xterm' };
      const p = new PtyProcess(this.runc, this.execArgs(c, cmd, true), { env });
      process.nextTick(() => p.start());
      if (!opts.stdout) p.output.resume();
      return {
        stdin: opts.stdin ? p.input : undefined,
        stdout: opts.stdout ? p.output : undefined,
        exit: p.exit,
        resize: (cols, rows) => p.resize(cols, rows),
        kill: () => p.kill('SIGKILL'),
      };
    }
    const child = spawn(this.runc, this.execArgs(c, cmd, false), { stdio: [opts.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'], detached: true });
    return childExecSession(child, opts);
  }

  attach(_sb: SandboxRecord, c: ContainerRecord, opts: ExecOptions): StreamSession {
    const l = this.liveOf(c.id);
    return attachSession(c, { output: l.output, stdin: l.child?.stdin ?? undefined }, opts);
  }


  // ------------------------------------------------------------ resources and stats

  async updateResources(c: ContainerRecord): Promise<void> {
    if (c.state !== 'running') {
      // Created but not started: the next start reads the bundle's spec.
      const file = path.join((c.backend.bundle as string) ?? this.bundleOf(c), 'config.json');
      if (fs.existsSync(file)) {
        const spec = JSON.parse(await fsp.readFile(file, 'utf8'));
        spec.linux.resources = { ...resourcesOf(c.resources), devices: spec.linux.resources?.devices };
        await fsp.writeFile(file, JSON.stringify(spec), { mode: 0o600 });
      }
      return;
    }
    await this.runcOk(['update', '--resources', '-', c.id], JSON.stringify(resourcesOf(c.resources)));
  }

  async reopenLog(c: ContainerRecord): Promise<void> {
    this.live.get(c.id)?.log?.reopen();
  }

  async containerUsage(c: ContainerRecord): Promise<UsageSample> {
    const u = this.cgroupOf(c)?.usage() ?? {};
    let processCount = 0;
    const pidsFile = this.cgroupMode === 'v1' ? path.join('/sys/fs/cgroup/pids', c.backend.cgroupsPath as string, 'cgroup.procs') : undefined;
    try {
      if (pidsFile) processCount = fs.readFileSync(pidsFile, 'utf8').split('\n').filter(Boolean).length;
    } catch {
      processCount = 0;
    }
    return {
      cpuCoreNanoSeconds: u.cpuNs ?? 0,
      memoryWorkingSetBytes: u.workingSet ?? 0,
      memoryUsageBytes: u.memUsage ?? 0,
      rssBytes: u.rss ?? 0,
      processCount,
    };
  }

  // ------------------------------------------------------------ restart

  async recover(sandboxes: SandboxRecord[], containers: ContainerRecord[]): Promise<void> {
    await this.pods.recover(sandboxes, []);
    for (const c of containers) {
      if (c.state !== 'running') continue;
      const st = await this.state(c.id);
      if (!st || st.status !== 'running') {
        c.state = 'exited';
        c.exitCode = 255;
        c.reason = 'Unknown';
        c.message = 'container was not running after the runtime restarted';
        c.finishedAt = Date.now() * 1e6;
        continue;
      }
      // Still running, but `runc run` (its parent) went with the old runtime: follow its FIFOs again and
      // watch runc's state for its end.
      const l = this.liveOf(c.id);
      const fifos = c.backend.fifos as string[] | undefined;
      if (fifos?.every((f) => fs.existsSync(f))) {
        if (c.logPath) l.log = new CriLogWriter(c.logPath, c.logRoot);
        this.follow(c, l, fifos.map((f) => openFifoReader(f)));
      }
      l.poll = setInterval(() => {
        void this.state(c.id).then((s) => {
          if (s && s.status === 'running') return;
          clearInterval(l.poll);
          for (const sock of l.readers ?? []) sock.destroy();
          l.log?.flush();
          l.log?.close();
          l.log = undefined;
          l.output.emit('end');
          l.markExited();
          const sig = c.backend.lastSignal as string | undefined;
          if (sig && osSignals[sig]) this.host.containerExited(c.id, { exitCode: 128 + osSignals[sig], reason: 'Error' });
          else this.host.containerExited(c.id, { exitCode: 255, reason: 'Unknown', message: 'exit code not observable after a runtime restart' });
        });
      }, 500);
      l.poll.unref();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const l of this.live.values()) {
      if (l.poll) clearInterval(l.poll);
      for (const sock of l.readers ?? []) sock.destroy();
      l.log?.close();
      l.log = undefined;
      l.child?.unref();
    }
    await this.pods.close();
  }
}

/** Reads the cgroup runc made for a container (its cgroupsPath under each v1 hierarchy, or under v2's root). */
class RuncCgroup extends ContainerCgroup {
  constructor(mode: CgroupMode, cgroupsPath: string) {
    super(mode, '');
    const dirs = mode === 'v2' ? [path.join('/sys/fs/cgroup', cgroupsPath)] : mode === 'v1' ? ['cpu', 'cpuacct', 'memory'].map((ctl) => path.join('/sys/fs/cgroup', ctl, cgroupsPath)) : [];
    (this as { dirs: string[] }).dirs = dirs;
  }
}
