// The `process` backend: real processes. Each sandbox has a pause process holding the pod's UTS and IPC
// (and, when shared, PID) namespaces, joined to a real network namespace. Each container runs in its own
// mount namespace (and PID namespace unless the pod shares one), inside the image root filesystem when
// the image has layers, under a per-container cgroup. Everything is started through util-linux
// `nsenter`/`unshare` with argument arrays.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Duplex } from 'node:stream';
import { cri } from '@kemu/proto';
import { mkdirWithin, openFileWithin, secureJoin } from '@kemu/safe-fs';
import { attachSession } from './attach-session.js';
import { joinCgroup, leafCgroupPath, podCgroupOf, removeCgroup } from './cgroup-parent.js';
import { ContainerCgroup, type CgroupMode, detectCgroupMode } from './cgroups.js';
import { failedPrecondition, invalidArgument } from './errors.js';
import type { ImageStore } from './image-store.js';
import { openFifoReader } from './fifo.js';
import { CriLogWriter } from './log-writer.js';
import { childExecSession, descend, exitCodeOf, osSignals, procAlive, procStartTime, run, runOk } from './proc-util.js';
import { PtyProcess } from './pty.js';
import { nowNs } from './time.js';
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

const NSENTER = '/usr/bin/nsenter';
const UNSHARE = '/usr/bin/unshare';
const SETSID = '/usr/bin/setsid';
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const MAX_EXEC_OUTPUT = 16 * 1024 * 1024;
const UNSHARE_SIGKILL_BUG = 'unshare: sigprocmask unblock failed';

export interface ProcessBackendOptions {
  /** Sandbox files (resolv.conf, hosts, hostname) live under `<stateDir>/pods`. */
  stateDir?: string;
  images?: ImageStore;
  /** Prefix of the network namespace names created under /run/netns. */
  netnsPrefix?: string;
  /** Force a cgroup mode (default: detect). */
  cgroups?: CgroupMode;
}

interface ProcessSpec {
  args: string[];
  env: string[];
  cwd: string;
  uid: number;
  gid: number;
}

interface Live {
  child?: ChildProcess;
  /** The main process's terminal, for containers created with tty. */
  pty?: PtyProcess;
  log?: CriLogWriter;
  output: EventEmitter;
  exited: Promise<void>;
  markExited: () => void;
  poll?: NodeJS.Timeout;
  cgroup?: ContainerCgroup;
}

function mode(sb: SandboxRecord, key: 'pid' | 'ipc' | 'network'): cri.NamespaceMode {
  return sb.config.linux?.securityContext?.namespaceOptions?.[key] ?? cri.NamespaceMode.POD;
}

export class ProcessBackend implements Backend {
  readonly name = 'process';
  private host!: BackendHost;
  private readonly live = new Map<string, Live>();
  private readonly cgroupMode: CgroupMode;
  private readonly podsDir: string;
  private closing = false;

  constructor(private readonly opts: ProcessBackendOptions = {}) {
    this.cgroupMode = opts.cgroups ?? detectCgroupMode();
    this.podsDir = path.join(opts.stateDir ?? '/run/kemu-cri', 'pods');
  }

  setHost(host: BackendHost): void {
    this.host = host;
  }

  setImageStore(images: ImageStore): void {
    this.opts.images = images;
  }

  info() {
    return { backend: 'process', cgroups: this.cgroupMode, podsDir: this.podsDir };
  }

  // ------------------------------------------------------------ sandboxes

  async createSandbox(sb: SandboxRecord): Promise<void> {
    const parent = sb.config.linux?.cgroupParent;
    const pod = parent ? podCgroupOf(parent, sb.id) : undefined; // refused before anything exists
    const filesDir = path.join(this.podsDir, sb.id);
    fs.mkdirSync(filesDir, { recursive: true, mode: 0o755 });
    sb.backend.filesDir = filesDir;
    if (!sb.hostNetwork) {
      const name = `${this.opts.netnsPrefix ?? 'kemu-'}${sb.id.slice(0, 16)}`;
      await runOk('ip', ['netns', 'add', name]);
      sb.backend.netnsName = name;
      sb.netnsPath = `/var/run/netns/${name}`;
      await runOk('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
    }
    const pidShared = mode(sb, 'pid') === cri.NamespaceMode.POD;
    const unshareArgs = ['--ipc'];
    if (!sb.hostNetwork) unshareArgs.push('--uts');
    if (pidShared) unshareArgs.push('--pid', '--fork', '--kill-child', '--mount-proc');
    const args = sb.netnsPath
      ? [NSENTER, `--net=${sb.netnsPath}`, '--', UNSHARE, ...unshareArgs, '--', 'sleep', 'infinity']
      : [UNSHARE, ...unshareArgs, '--', 'sleep', 'infinity'];
    const child = spawn(args[0], args.slice(1), { stdio: 'ignore', detached: true });
    child.unref();
    const depth = (sb.netnsPath ? 0 : 0) + (pidShared ? 1 : 0);
    const pause = await descend(child.pid!, depth);
    await this.waitExec(pause, 'sleep');
    sb.backend.pausePid = pause;
    sb.backend.pauseStart = procStartTime(pause);
    sb.backend.pidShared = pidShared;
    // Under a kubelet's pod cgroup the holder joins it, as containerd's pause container does.
    if (pod && this.cgroupMode !== 'none' && joinCgroup(this.cgroupMode, leafCgroupPath(pod, sb.id), pause).length > 0) {
      sb.backend.cgroupsPath = leafCgroupPath(pod, sb.id);
    }
    const hostname = sb.config.hostname;
    if (hostname && !sb.hostNetwork) {
      if (!/^[a-zA-Z0-9]([a-zA-Z0-9.-]{0,62})$/.test(hostname)) throw invalidArgument(`invalid hostname ${JSON.stringify(hostname)}`);
      await runOk(NSENTER, [`--target=${pause}`, '--uts', '--', 'hostname', hostname]);
    }
    this.writeSandboxFiles(sb);
  }

  /** Waits until `pid` has exec'd `comm` (the wrappers above it are done). */
  private async waitExec(pid: number, comm: string) {
    for (let i = 0; i < 2500; i++) {
      try {
        if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === comm) return;
      } catch {
        throw new Error(`process ${pid} exited while starting ${comm}`);
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    throw new Error(`process ${pid} did not start ${comm}`);
  }

  private writeSandboxFiles(sb: SandboxRecord) {
    const dir = sb.backend.filesDir as string;
    const d = sb.config.dnsConfig;
    let resolv = '';
    if (d && (d.servers?.length || d.searches?.length || d.options?.length)) {
      if (d.searches?.length) resolv += `search ${d.searches.join(' ')}\n`;
      for (const s of d.servers ?? []) resolv += `nameserver ${s}\n`;
      if (d.options?.length) resolv += `options ${d.options.join(' ')}\n`;
    } else {
      resolv = fs.existsSync('/etc/resolv.conf') ? fs.readFileSync('/etc/resolv.conf', 'utf8') : '';
    }
    fs.writeFileSync(path.join(dir, 'resolv.conf'), resolv);
    fs.writeFileSync(path.join(dir, 'hostname'), `${sb.config.hostname ?? ''}\n`);
    this.writeHosts(sb);
  }

  private writeHosts(sb: SandboxRecord) {
    const dir = sb.backend.filesDir as string;
    let hosts = '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n';
    if (sb.config.hostname) for (const ip of sb.ips) hosts += `${ip}\t${sb.config.hostname}\n`;
    fs.writeFileSync(path.join(dir, 'hosts'), hosts);
  }

  private fifoPaths(sb: SandboxRecord, c: ContainerRecord): [string, string] {
    const dir = (sb.backend.filesDir as string | undefined) ?? path.join(this.podsDir, sb.id);
    return [path.join(dir, `${c.id}.stdout`), path.join(dir, `${c.id}.stderr`)];
  }

  async stopSandbox(sb: SandboxRecord): Promise<void> {
    const pid = sb.backend.pausePid as number | undefined;
    if (pid && procAlive(pid, sb.backend.pauseStart as number)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (sb.backend.netnsName) {
      const r = await run('ip', ['netns', 'delete', sb.backend.netnsName as string]);
      if (r.code !== 0 && !/No such file|not found|Cannot remove/.test(r.stderr)) throw new Error(`ip netns delete: ${r.stderr.trim()}`);
      delete sb.backend.netnsName;
    }
  }

  async removeSandbox(sb: SandboxRecord): Promise<void> {
    if (sb.backend.filesDir) fs.rmSync(sb.backend.filesDir as string, { recursive: true, force: true });
    if (sb.backend.cgroupsPath) await removeCgroup(this.cgroupMode, [sb.backend.cgroupsPath as string]);
  }

  // ------------------------------------------------------------ containers

  async createContainer(sb: SandboxRecord, c: ContainerRecord, image: ImageRecord): Promise<void> {
    const cfg = c.config;
    const argv = cfg.command?.length ? [...cfg.command, ...(cfg.args ?? [])] : [...(image.config.entrypoint ?? []), ...(cfg.args?.length ? cfg.args : (image.config.cmd ?? []))];
    if (argv.length === 0) throw failedPrecondition(`no command specified for container ${JSON.stringify(cfg.metadata?.name)} and image ${image.id} has none`);
    const sc = cfg.linux?.securityContext;
    if (sc?.runAsUsername) throw invalidArgument('runAsUsername is not supported by the process backend: use runAsUser');
    const imageUser = image.config.user?.split(':') ?? [];
    const uid = sc?.runAsUser?.value ?? (/^\d+$/.test(imageUser[0] ?? '') ? Number(imageUser[0]) : 0);
    const gid = sc?.runAsGroup?.value ?? (/^\d+$/.test(imageUser[1] ?? '') ? Number(imageUser[1]) : uid === 0 ? 0 : uid);
    const env = new Map<string, string>();
    env.set('PATH', DEFAULT_PATH);
    for (const e of image.config.env ?? []) {
      const i = e.indexOf('=');
      if (i > 0) env.set(e.slice(0, i), e.slice(i + 1));
    }
    if (sb.config.hostname) env.set('HOSTNAME', sb.config.hostname);
    for (const e of cfg.envs ?? []) env.set(e.key!, e.value ?? '');
    const rootfs = this.opts.images ? await this.opts.images.rootfs(image) : undefined;
    for (const m of cfg.mounts ?? []) {
      if (!fs.existsSync(m.hostPath!)) fs.mkdirSync(m.hostPath!, { recursive: true });
      if (!rootfs && !fs.existsSync(m.containerPath!)) {
        throw invalidArgument(`mount target ${m.containerPath} does not exist: images without layers run on the host root filesystem, where the shim does not create paths`);
      }
    }
    const spec: ProcessSpec = {
      args: argv,
      env: [...env].map(([k, v]) => `${k}=${v}`),
      cwd: cfg.workingDir || image.config.workingDir || '/',
      uid,
      gid,
    };
    c.backend.process = spec;
    c.backend.rootfs = rootfs ?? null;
  }

  private liveOf(id: string): Live {
    let l = this.live.get(id);
    if (!l) {
      let markExited!: () => void;
      const exited = new Promise<void>((resolve) => {
        markExited = resolve;
      });
      l = { output: new EventEmitter(), exited, markExited };
      this.live.set(id, l);
    }
    return l;
  }

  /** Sets up the container's mount namespace in a holder process: bind mounts, DNS/hosts files. */
  private async prepareMounts(sb: SandboxRecord, c: ContainerRecord): Promise<ChildProcess> {
    const holder = spawn(UNSHARE, ['--mount', '--propagation', 'private', '--', 'sleep', 'infinity'], { stdio: 'ignore', detached: true });
    holder.unref();
    await this.waitExec(holder.pid!, 'sleep');
    const rootfs = c.backend.rootfs as string | null;
    // A mount target inside the image resolves as it will for the container: the image's symbolic links
    // (absolute ones too) stay inside its root, so neither mkdir nor mount reaches the host through them.
    const target = (p: string) => (rootfs ? secureJoin(rootfs, p) : p);
    const mnt = `--mount=/proc/${holder.pid}/ns/mnt`;
    const bind = async (src: string, dst: string, readonly: boolean) => {
      if (rootfs && !fs.existsSync(dst)) {
        if (fs.statSync(src).isDirectory()) mkdirWithin(rootfs, dst, 0o755, 'mount target');
        else fs.closeSync(openFileWithin(rootfs, dst, { flags: fs.constants.O_WRONLY | fs.constants.O_CREAT, mode: 0o644, what: 'mount target' }).fd);
      }
      await runOk(NSENTER, [mnt, '--', 'mount', '--bind', src, dst]);
      // A bind mount keeps its source mount's read-only flag (the host's view is read-only): set it either way.
      await runOk(NSENTER, [mnt, '--', 'mount', '-o', `remount,bind,${readonly ? 'ro' : 'rw'}`, dst]);
    };
    try {
      if (!rootfs) {
        // An image without layers runs on the host's own filesystem: its view of every host filesystem is
        // read-only (a root container cannot chmod /, write /etc or remove files), with a private /tmp (below).
        for (const mp of hostMountPoints(holder.pid!)) {
          const r = await run(NSENTER, [mnt, '--', 'mount', '-o', 'remount,bind,ro', mp]);
          if (r.code !== 0 && fs.existsSync(mp)) throw new Error(`making ${mp} read-only for the container: ${r.stderr.trim()}`);
        }
      }
      if (rootfs) {
        // A minimal /dev: a tmpfs with the few character devices programs expect, not the host's /dev.
        for (const d of ['proc', 'dev', 'etc', 'tmp']) mkdirWithin(rootfs, target(`/${d}`), 0o755, 'image directory');
        await runOk(NSENTER, [mnt, '--', 'mount', '-t', 'tmpfs', '-o', 'mode=755,nosuid', 'tmpfs', target('/dev')]);
        for (const dev of ['null', 'zero', 'full', 'random', 'urandom', 'tty']) {
          await runOk(NSENTER, [mnt, '--', 'touch', target(`/dev/${dev}`)]);
          await runOk(NSENTER, [mnt, '--', 'mount', '--bind', `/dev/${dev}`, target(`/dev/${dev}`)]);
        }
      }
      if (!sb.hostNetwork) {
        const dir = sb.backend.filesDir as string;
        this.writeHosts(sb);
        for (const f of ['resolv.conf', 'hosts', 'hostname']) await bind(path.join(dir, f), target(`/etc/${f}`), false);
      }
      for (const m of c.config.mounts ?? []) await bind(m.hostPath!, target(m.containerPath!), !!m.readonly);
      // Last, as the binds' sources may live under the host's /tmp; not over a requested mount under /tmp.
      const underTmp = (c.config.mounts ?? []).some((m) => m.containerPath === '/tmp' || m.containerPath!.startsWith('/tmp/'));
      if (!rootfs && !underTmp) await runOk(NSENTER, [mnt, '--', 'mount', '-t', 'tmpfs', '-o', 'mode=1777,nosuid,nodev', 'tmpfs', '/tmp']);
    } catch (err) {
      holder.kill('SIGKILL');
      throw err;
    }
    return holder;
  }

  async startContainer(sb: SandboxRecord, c: ContainerRecord): Promise<void> {
    const spec = c.backend.process as ProcessSpec;
    const pausePid = sb.backend.pausePid as number;
    if (!procAlive(pausePid, sb.backend.pauseStart as number)) throw failedPrecondition(`sandbox ${sb.id} has no running pause process`);
    const holder = await this.prepareMounts(sb, c);
    const pidShared = !!sb.backend.pidShared;
    const hostPid = mode(sb, 'pid') === cri.NamespaceMode.NODE;
    const ns = [`--mount=/proc/${holder.pid}/ns/mnt`, `--ipc=/proc/${pausePid}/ns/ipc`];
    if (sb.netnsPath) ns.push(`--net=${sb.netnsPath}`);
    if (!sb.hostNetwork) ns.push(`--uts=/proc/${pausePid}/ns/uts`);
    if (pidShared) ns.push(`--pid=/proc/${pausePid}/ns/pid`);
    const ownPid = !pidShared && !hostPid;
    const un = ['--mount-proc', '--propagation', 'private'];
    if (ownPid) un.push('--pid', '--fork', '--kill-child');
    const rootfs = c.backend.rootfs as string | null;
    if (rootfs) un.push(`--root=${rootfs}`);
    un.push(`--wd=${spec.cwd}`);
    if (spec.uid !== 0 || spec.gid !== 0) un.push(`--setgid=${spec.gid}`, `--setuid=${spec.uid}`);
    const args = [...ns, '--', UNSHARE, ...un, '--', ...(c.config.tty ? this.ownSession(c, spec.args) : spec.args)];
    // Under the pod's cgroup_parent when the kubelet gave one (cgroupfs or systemd naming), else /kemu-cri/<id>.
    const parent = sb.config.linux?.cgroupParent;
    c.backend.cgroupsPath = parent ? leafCgroupPath(podCgroupOf(parent, sb.id), c.id) : undefined;
    const cgroup = this.cgroupMode === 'none' ? undefined : new ContainerCgroup(this.cgroupMode, (c.backend.cgroupsPath as string | undefined) ?? c.id);
    cgroup?.create();
    const l = this.liveOf(c.id);
    l.cgroup = cgroup;
    if (c.logPath) l.log = new CriLogWriter(c.logPath, c.logRoot);
    const spawned = c.config.tty ? this.spawnMainOnPty(sb, c, args, spec, l) : this.spawnMainOnFifos(sb, c, args, spec, l);
    const { pid: wrapperPid, spawnError, outputsEnded } = spawned;
    if (wrapperPid) cgroup?.addProcess(wrapperPid);
    let earlyExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    spawned.onExit(async (code, signal) => {
      earlyExit = { code, signal };
      // The last output (and unshare's SIGKILL message) arrive once every holder of the FIFOs is gone.
      await Promise.race([outputsEnded, new Promise((r) => setTimeout(r, 2000))]);
      spawned.cleanup();
      l.log?.close();
      l.log = undefined;
      const exitCode = spawned.killedBySigkill() && code === 1 ? 137 : exitCodeOf(code, signal);
      const oom = cgroup?.oomKilled() ?? false;
      void cgroup?.remove();
      l.markExited();
      this.host.containerExited(c.id, {
        exitCode,
        reason: oom ? 'OOMKilled' : exitCode === 0 ? 'Completed' : 'Error',
      });
      // After the exit is recorded, so attached clients see the container's exit code.
      l.output.emit('end');
    });
    let init: number | undefined;
    try {
      const depth = (pidShared ? 1 : 0) + (ownPid ? 1 : 0);
      init = await Promise.race([descend(wrapperPid, depth), spawnError]);
    } catch (err) {
      // The wrappers ended before we saw the command: either it ran and exited at once, or it never ran.
      await Promise.race([l.exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (!earlyExit) throw err;
    } finally {
      holder.kill('SIGKILL');
    }
    if (init !== undefined) {
      cgroup?.addProcess(init);
      c.backend.pid = init;
      c.backend.pidStart = procStartTime(init);
      // Until unshare has exec'd the command we cannot tell "started" from "not executable".
      if (!(await waitForExec(init, [NSENTER, UNSHARE, SETSID]))) await Promise.race([l.exited, new Promise((r) => setTimeout(r, 10_000))]);
    }
    if (cgroup) c.backend.cgroupFiles = cgroup.apply(c.resources);
    c.backend.wrapperPid = wrapperPid;
    c.startedAt = nowNs();
    // A command that cannot be executed makes unshare exit 126/127 at once: that is a start error.
    const early = earlyExit as { code: number | null; signal: NodeJS.Signals | null } | undefined;
    if (early && [126, 127].includes(exitCodeOf(early.code, early.signal))) {
      await l.exited;
      throw failedPrecondition(`failed to start container ${c.id}: ${JSON.stringify(spec.args[0])}: executable file not found or not executable`);
    }
    if (c.state === 'created') c.state = 'running';
  }

  /** Starts the container's wrappers with stdout/stderr on FIFOs (see startContainer). */
  private spawnMainOnFifos(sb: SandboxRecord, c: ContainerRecord, args: string[], spec: ProcessSpec, l: Live): SpawnedMain {
    // stdout/stderr go through FIFOs the container holds open read-write, not pipes to this process: a
    // restarted runtime reopens them and keeps logging, and a write while it is down cannot SIGPIPE.
    const fifos = this.fifoPaths(sb, c);
    const writeFds = fifos.map((f) => {
      fs.rmSync(f, { force: true });
      runSyncOk('mkfifo', ['-m', '0600', f]);
      return fs.openSync(f, 'r+');
    });
    const [outSock, errSock] = fifos.map((f) => openFifoReader(f));
    let child: ChildProcess;
    try {
      child = spawn(NSENTER, args, {
        stdio: [c.config.stdin ? 'pipe' : 'ignore', writeFds[0], writeFds[1]],
        detached: true,
        env: envObject(spec.env),
      });
    } finally {
      for (const fd of writeFds) fs.closeSync(fd);
    }
    c.backend.fifos = fifos;
    child.stdin?.on('error', () => {}); // a container that exits while input is pending
    l.child = child;
    const spawnError = new Promise<never>((_, reject) => child.once('error', reject));
    spawnError.catch(() => {});
    outSock.on('data', (d: Buffer) => {
      l.log?.write('stdout', d);
      l.output.emit('stdout', d);
    });
    let killedBySigkill = false;
    let held = '';
    const emitErr = (d: Buffer) => {
      l.log?.write('stderr', d);
      l.output.emit('stderr', d);
    };
    errSock.on('data', (d: Buffer) => {
      // util-linux 2.38 `unshare --fork` cannot re-raise SIGKILL on itself and exits 1 with this message
      // (written in two pieces) instead; it is the runtime's wrapper speaking, so it stays out of the log.
      const text = held + d.toString('latin1');
      held = '';
      if (text.includes(UNSHARE_SIGKILL_BUG)) {
        killedBySigkill = true;
        const rest = text.replace(/unshare: sigprocmask unblock failed[^\n]*\n?/, '');
        if (rest) emitErr(Buffer.from(rest, 'latin1'));
      } else if (UNSHARE_SIGKILL_BUG.startsWith(text) || (text.endsWith('unshare: ') && text.length < 4096)) {
        held = text;
      } else emitErr(Buffer.from(text, 'latin1'));
    });
    const outputsEnded = Promise.all(
      [outSock, errSock].map((sock) => new Promise<void>((resolve) => sock.once('close', () => resolve()))),
    ).then(() => undefined);
    errSock.on('end', () => {
      if (held) emitErr(Buffer.from(held, 'latin1'));
      held = '';
    });
    return {
      pid: child.pid!,
      spawnError,
      outputsEnded,
      onExit: (fn) => child.once('exit', (code, signal) => fn(code, signal)),
      killedBySigkill: () => killedBySigkill,
      cleanup: () => {
        outSock.destroy();
        errSock.destroy();
        for (const f of fifos) fs.rmSync(f, { force: true });
      },
    };
  }

  /**
   * Starts the container's wrappers on a pseudo-terminal (CreateContainer with tty): stdout and stderr are
   * the one terminal stream, logged as stdout, and attach can resize it. The terminal lives in this
   * process, so such a container loses it (and gets SIGHUP) if the runtime exits.
   */
  private spawnMainOnPty(_sb: SandboxRecord, _c: ContainerRecord, args: string[], spec: ProcessSpec, l: Live): SpawnedMain {
    const env = envObject(spec.env);
    env.TERM ??= 'xterm';
    const p = new PtyProcess(NSENTER, args, { env });
    const pid = p.start();
    l.pty = p;
    let tail = '';
    p.output.on('data', (d: Buffer) => {
      tail = (tail + d.toString('latin1')).slice(-256);
      l.log?.write('stdout', d);
      l.output.emit('stdout', d);
    });
    const outputsEnded = new Promise<void>((resolve) => p.output.once('end', () => resolve()));
    return {
      pid,
      spawnError: new Promise<never>(() => {}),
      outputsEnded,
      // Like the 'exit' listeners close() removes from the other children: no reports once shut down.
      onExit: (fn) => void p.exit.then((code) => !this.closing && fn(code, null)),
      // unshare's SIGKILL complaint (see spawnMainOnFifos) shares the terminal with the container's output.
      killedBySigkill: () => tail.includes(UNSHARE_SIGKILL_BUG),
      cleanup: () => {},
    };
  }

  /**
   * A tty command leads its own session with the terminal as controlling tty, inside the container's PID
   * namespace: a shell's job control then finds its process groups (the pty's first session leader is the
   * nsenter wrapper, outside that namespace). Needs `setsid` with -c in the container's root; without one
   * the command runs as is.
   */
  private ownSession(c: ContainerRecord, cmd: string[]): string[] {
    const rootfs = c.backend.rootfs as string | null;
    // -w: should setsid have to fork (it does when already a group leader), its exit status is the command's.
    if (!rootfs) return [SETSID, '-w', '-c', ...cmd];
    for (const p of ['/usr/bin/setsid', '/bin/setsid']) {
      try {
        fs.lstatSync(path.join(rootfs, p));
        return [p, '-c', ...cmd];
      } catch {
        // not in this image
      }
    }
    return cmd;
  }

  private signalInit(c: ContainerRecord, signal: NodeJS.Signals) {
    const pid = c.backend.pid as number | undefined;
    if (pid && procAlive(pid, c.backend.pidStart as number)) {
      try {
        c.backend.lastSignal = signal;
        process.kill(pid, signal);
      } catch {
        // raced with exit
      }
    }
  }

  async stopContainer(c: ContainerRecord, timeoutSec: number): Promise<void> {
    const l = this.live.get(c.id);
    const exited = l?.exited ?? Promise.resolve();
    const sig = c.config.stopSignal ? (cri.Signal[c.config.stopSignal] as NodeJS.Signals) : 'SIGTERM';
    if (timeoutSec > 0) {
      this.signalInit(c, osSignals[sig] ? sig : 'SIGTERM');
      const done = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), timeoutSec * 1000))]);
      if (done) return;
    }
    this.signalInit(c, 'SIGKILL');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  }

  async removeContainer(c: ContainerRecord): Promise<void> {
    const l = this.live.get(c.id);
    if (l?.poll) clearInterval(l.poll);
    l?.log?.close();
    this.live.delete(c.id);
    await l?.cgroup?.remove();
  }

  private execArgs(c: ContainerRecord, cmd: string[]): string[] {
    const spec = c.backend.process as ProcessSpec;
    const pid = c.backend.pid as number;
    const args = [`--target=${pid}`, '--mount', '--uts', '--ipc', '--net', '--pid', '--root', '--wd'];
    if (spec.uid !== 0 || spec.gid !== 0) args.push(`--setgid=${spec.gid}`, `--setuid=${spec.uid}`);
    return [...args, '--', ...cmd];
  }

  private spawnExec(c: ContainerRecord, cmd: string[], stdin: boolean): ChildProcess {
    const pid = c.backend.pid as number;
    if (!procAlive(pid, c.backend.pidStart as number)) throw failedPrecondition(`container ${c.id} has no running process`);
    const spec = c.backend.process as ProcessSpec;
    const child = spawn(NSENTER, this.execArgs(c, cmd), {
      stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: true,
      env: Object.fromEntries(spec.env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)])),
    });
    child.stdin?.on('error', () => {});
    const cg = this.live.get(c.id)?.cgroup;
    if (child.pid) cg?.addProcess(child.pid);
    return child;
  }

  async execSync(_sb: SandboxRecord, c: ContainerRecord, cmd: string[], timeoutMs: number): Promise<ExecResult> {
    const child = this.spawnExec(c, cmd, false);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    const collect = (into: Buffer[]) => (d: Buffer) => {
      if (size + d.length > MAX_EXEC_OUTPUT) return;
      size += d.length;
      into.push(d);
    };
    child.stdout!.on('data', collect(out));
    child.stderr!.on('data', collect(err));
    let timedOut = false;
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            timedOut = true;
            try {
              process.kill(-child.pid!, 'SIGKILL');
            } catch {
              // already exited
            }
          }, timeoutMs)
        : undefined;
    const code = await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) => resolve(exitCodeOf(code, signal)));
    });
    if (timer) clearTimeout(timer);
    return { stdout: Buffer.concat(out), stderr: Buffer.concat(err), exitCode: timedOut ? -1 : code };
  }

  exec(_sb: SandboxRecord, c: ContainerRecord, cmd: string[], opts: ExecOptions): StreamSession {
    if (opts.tty) return this.execTty(c, cmd, opts);
    const child = this.spawnExec(c, cmd, opts.stdin);
    return childExecSession(child, opts);
  }

  /** Exec on a pseudo-terminal: one output stream, resizable, stdin end sends ^D. */
  private execTty(c: ContainerRecord, cmd: string[], opts: ExecOptions): StreamSession {
    const pid = c.backend.pid as number;
    if (!procAlive(pid, c.backend.pidStart as number)) throw failedPrecondition(`container ${c.id} has no running process`);
    const spec = c.backend.process as ProcessSpec;
    const env = envObject(spec.env);
    env.TERM ??= 'xterm';
    const p = new PtyProcess(NSENTER, this.execArgs(c, this.ownSession(c, cmd)), { env });
    // Started on the next tick: the streaming server applies the client's terminal size first.
    process.nextTick(() => this.live.get(c.id)?.cgroup?.addProcess(p.start()));
    if (!opts.stdout) p.output.resume();
    return {
      stdin: opts.stdin ? p.input : undefined,
      stdout: opts.stdout ? p.output : undefined,
      exit: p.exit,
      resize: (cols, rows) => p.resize(cols, rows),
      kill: () => p.kill('SIGKILL'),
    };
  }

  attach(_sb: SandboxRecord, c: ContainerRecord, opts: ExecOptions): StreamSession {
    const l = this.liveOf(c.id);
    const resize = l.pty ? (cols: number, rows: number) => l.pty?.resize(cols, rows) : undefined;
    return attachSession(c, { output: l.output, stdin: l.pty?.input ?? l.child?.stdin ?? undefined, resize }, opts);
  }


  async portForward(sb: SandboxRecord, port: number): Promise<Duplex> {
    if (sb.hostNetwork || !sb.netnsPath) return connectTcp('127.0.0.1', port);
    // Node cannot enter a network namespace itself; a tiny helper inside the pod's netns relays the bytes.
    const child = spawn(NSENTER, [`--net=${sb.netnsPath}`, '--', process.execPath, '-e', RELAY_SCRIPT, String(port)], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', (d: Buffer) => {
        if (d[0] === 0x06) {
          const rest = d.subarray(1);
          if (rest.length) child.stdout.unshift(rest);
          resolve();
        } else reject(new Error('port-forward helper misbehaved'));
      });
      child.once('close', () => reject(new Error(stderr.trim() || `cannot connect to port ${port}`)));
      child.once('error', reject);
    });
    const duplex = Duplex.from({ readable: child.stdout, writable: child.stdin });
    duplex.on('close', () => child.kill('SIGKILL'));
    return duplex;
  }

  async updateResources(c: ContainerRecord): Promise<void> {
    const cg = this.live.get(c.id)?.cgroup;
    if (cg && c.state === 'running') c.backend.cgroupFiles = cg.apply(c.resources);
  }

  async reopenLog(c: ContainerRecord): Promise<void> {
    this.live.get(c.id)?.log?.reopen();
  }

  async containerUsage(c: ContainerRecord): Promise<UsageSample> {
    const cg = this.live.get(c.id)?.cgroup;
    const u = cg?.usage() ?? {};
    const pid = c.backend.pid as number | undefined;
    let cpuNs = u.cpuNs || undefined;
    let rss = u.rss || undefined;
    if ((cpuNs === undefined || rss === undefined) && pid) {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        cpuNs ??= (Number(f[11]) + Number(f[12])) * 1e7;
        rss ??= Number(f[21]) * 4096;
      } catch {
        // exited meanwhile
      }
    }
    const procs = cg?.dirs[0] ? countProcs(path.join(cg.dirs[0], 'cgroup.procs')) : 1;
    return {
      cpuCoreNanoSeconds: cpuNs ?? 0,
      memoryWorkingSetBytes: u.workingSet || rss || 0,
      memoryUsageBytes: u.memUsage || rss || 0,
      rssBytes: rss ?? 0,
      processCount: procs,
    };
  }

  async networkUsage(sb: SandboxRecord): Promise<NetworkUsageSample[]> {
    const pid = sb.backend.pausePid as number | undefined;
    if (!pid || sb.hostNetwork) return [];
    try {
      const lines = fs.readFileSync(`/proc/${pid}/net/dev`, 'utf8').split('\n').slice(2);
      return lines
        .filter((l) => l.includes(':'))
        .map((l) => {
          const [name, rest] = l.split(':');
          const f = rest.trim().split(/\s+/).map(Number);
          return { name: name.trim(), rxBytes: f[0], rxErrors: f[2], txBytes: f[8], txErrors: f[10] };
        })
        .filter((n) => n.name !== 'lo');
    } catch {
      return [];
    }
  }

  async recover(sandboxes: SandboxRecord[], containers: ContainerRecord[]): Promise<void> {
    for (const sb of sandboxes) {
      const alive = procAlive(sb.backend.pausePid as number, sb.backend.pauseStart as number);
      if (sb.state === 'ready' && !alive) sb.state = 'notready';
    }
    for (const c of containers) {
      if (c.state !== 'running') continue;
      const pid = c.backend.pid as number;
      if (!procAlive(pid, c.backend.pidStart as number)) {
        // As containerd does when a task vanished while it was down: exited, code unknown.
        c.state = 'exited';
        c.exitCode = 255;
        c.reason = 'Unknown';
        c.message = 'container process was not found after the runtime restarted';
        c.finishedAt = nowNs();
        continue;
      }
      // Still running but not our child: watch /proc for its end (its exit code is not observable).
      const l = this.liveOf(c.id);
      const fifos = c.backend.fifos as string[] | undefined;
      if (fifos?.every((f) => fs.existsSync(f))) {
        if (c.logPath) l.log = new CriLogWriter(c.logPath, c.logRoot);
        const socks = fifos.map((f) => openFifoReader(f));
        socks.forEach((sock, i) => {
          const stream = i === 0 ? 'stdout' : 'stderr';
          sock.on('data', (d: Buffer) => {
            l.log?.write(stream, d);
            l.output.emit(stream, d);
          });
        });
        l.output.once('end', () => {
          for (const sock of socks) sock.destroy();
          for (const f of fifos) fs.rmSync(f, { force: true });
          l.log?.close();
          l.log = undefined;
        });
      }
      if (this.cgroupMode !== 'none') l.cgroup = new ContainerCgroup(this.cgroupMode, (c.backend.cgroupsPath as string | undefined) ?? c.id);
      l.poll = setInterval(() => {
        if (procAlive(pid, c.backend.pidStart as number)) return;
        clearInterval(l.poll);
        l.output.emit('end');
        l.markExited();
        // Not our child, so its status is not observable; if we signalled it, the signal is the best guess.
        const sig = c.backend.lastSignal as string | undefined;
        if (sig && osSignals[sig]) this.host.containerExited(c.id, { exitCode: 128 + osSignals[sig], reason: 'Error' });
        else this.host.containerExited(c.id, { exitCode: 255, reason: 'Unknown', message: 'exit code not observable after a runtime restart' });
      }, 500);
      l.poll.unref();
    }
  }

  async close(): Promise<void> {
    // Containers keep running across a runtime restart, as with containerd; only our watchers stop.
    this.closing = true;
    for (const l of this.live.values()) {
      if (l.poll) clearInterval(l.poll);
      l.log?.flush();
      l.child?.removeAllListeners('exit');
      l.child?.unref();
      l.pty?.unref();
      (l.child?.stdout as unknown as { unref?: () => void })?.unref?.();
      (l.child?.stderr as unknown as { unref?: () => void })?.unref?.();
      (l.child?.stdin as unknown as { unref?: () => void })?.unref?.();
    }
  }
}

/** True once `pid` runs something other than the wrappers (a fork of nsenter is nsenter until it execs); false if it ended first. */
async function waitForExec(pid: number, wrappers: string[], timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    let exe: string;
    try {
      exe = fs.readlinkSync(`/proc/${pid}/exe`);
    } catch {
      return false; // gone (or a zombie): it exited
    }
    if (!wrappers.includes(exe)) return true;
    await new Promise((r) => setTimeout(r, 2));
  }
  return true;
}

const RELAY_SCRIPT = `
const net = require('node:net');
const s = net.connect(Number(process.argv[1]), '127.0.0.1', () => { process.stdout.write(Buffer.from([6])); process.stdin.pipe(s); s.pipe(process.stdout); });
s.on('error', (e) => { process.stderr.write('connection to port ' + process.argv[1] + ' failed: ' + e.message); process.exit(1); });
s.on('close', () => process.exit(0));
`;

function connectTcp(host: string, port: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, host, () => resolve(s));
    s.once('error', reject);
  });
}

/** A non-blocking read end on a FIFO, as a stream (no thread-pool thread parked on a blocking read). */
function runSyncOk(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${(r.stderr || r.error?.message || '').trim()}`);
}

function countProcs(file: string): number {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
}

interface SpawnedMain {
  /** The outermost wrapper's pid. */
  pid: number;
  spawnError: Promise<never>;
  outputsEnded: Promise<void>;
  onExit(fn: (code: number | null, signal: NodeJS.Signals | null) => void): void;
  killedBySigkill(): boolean;
  cleanup(): void;
}

function envObject(env: string[]): Record<string, string> {
  return Object.fromEntries(env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
}

/** File systems whose mounts a host-filesystem container keeps as they are (kernel interfaces, namespaces). */
const KEEP_WRITABLE = new Set(['proc', 'nsfs', 'devpts', 'mqueue', 'devtmpfs']);

/** Mount points of `pid`'s mount namespace that hold host data, shallowest first (/ included). */
function hostMountPoints(pid: number): string[] {
  const out: string[] = [];
  for (const line of fs.readFileSync(`/proc/${pid}/mountinfo`, 'utf8').split('\n')) {
    const f = line.split(' ');
    const sep = f.indexOf('-');
    if (sep < 0) continue;
    const mp = f[4].replace(/\\040/g, ' ');
    const fstype = f[sep + 1];
    if (KEEP_WRITABLE.has(fstype) && mp !== '/') continue;
    if (mp === '/proc' || mp.startsWith('/proc/') || mp === '/dev' || mp.startsWith('/dev/')) continue;
    out.push(mp);
  }
  return [...new Set(out)].sort((a, b) => a.length - b.length);
}
