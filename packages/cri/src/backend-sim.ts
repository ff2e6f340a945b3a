// The `sim` backend: no processes. Each container follows a script read from annotations, with optional
// per-call latencies, so thousands of pods cost only memory. This is the scale path.
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Duplex, PassThrough, Readable } from 'node:stream';
import { cri } from '@kemu/proto';
import { failedPrecondition } from './errors.js';
import { CriLogWriter } from './log-writer.js';
import { runSimProgram, simProgram } from './sim-behavior.js';
import { readSimFile, statSimPath } from './sim-files.js';
import { runSimTar } from './sim-tar.js';
import { delay, fixedSession } from './streams.js';
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

/** Annotation keys that script a simulated container (on the container, or on the sandbox as `<key>.<container-name>` or `<key>`). */
export const SIM_ANNOTATIONS = {
  behavior: 'kemu.io/sim-behavior', // run (default) | exit | fail-start
  exitAfter: 'kemu.io/sim-exit-after', // seconds, e.g. "2.5"; implies exit
  exitCode: 'kemu.io/sim-exit-code', // exit code when it exits on its own (default 0)
  memoryMiB: 'kemu.io/sim-memory-mib', // working set it "consumes"; over the memory limit -> OOMKilled
  cpuMillicores: 'kemu.io/sim-cpu-millicores', // CPU it "burns" while running
  log: 'kemu.io/sim-log', // text written to stdout at start
  ignoreSigterm: 'kemu.io/sim-ignore-sigterm', // "true": StopContainer waits the whole timeout, then kills
  listen: 'kemu.io/sim-listen', // comma-separated TCP ports that echo what port-forward sends
  banner: 'kemu.io/sim-banner', // what the pod's ports send first on each port-forward connection, before the echo
  startError: 'kemu.io/sim-start-error', // message for fail-start
} as const;

export type SimCall =
  | 'runPodSandbox'
  | 'stopPodSandbox'
  | 'removePodSandbox'
  | 'createContainer'
  | 'startContainer'
  | 'stopContainer'
  | 'removeContainer'
  | 'execSync';

export interface SimBackendOptions {
  /** Extra latency in milliseconds added to each call, to model a slower runtime. */
  latencyMs?: Partial<Record<SimCall, number>>;
  /**
   * Optional hooks so a simulated datapath can create/remove the pod's namespace, and open a listening
   * socket in it for each port the pod declares (a simulated container has no process to do that).
   */
  netns?: {
    create(path: string): Promise<void>;
    remove(path: string): Promise<void>;
    listen?(path: string, proto: 'tcp' | 'udp', port: number): Promise<void>;
  };
  /** Interface counters for PodSandboxStats, when a simulated datapath can provide them. */
  networkUsage?: (netnsPath: string) => Promise<NetworkUsageSample[]>;
  /**
   * Where containers' writable layers live (one directory per container, made on first write; what
   * `tar x` and `kubectl cp` write to outside the mounts). Default: a temporary directory removed on close.
   */
  rootfsDir?: string;
}

interface SimContainer {
  timer?: NodeJS.Timeout;
  log?: CriLogWriter;
  output: EventEmitter;
  exited?: Promise<void>;
  resolveExit?: () => void;
  /** Stops a running behaviour-model program (sim-behavior.ts). */
  abort?: AbortController;
}

export function simScript(sb: SandboxRecord | undefined, c: ContainerRecord) {
  const name = c.config.metadata?.name ?? '';
  const get = (key: string): string | undefined =>
    c.config.annotations?.[key] ?? sb?.config.annotations?.[`${key}.${name}`] ?? sb?.config.annotations?.[key];
  const num = (key: string, dflt: number) => {
    const v = get(key);
    const n = v === undefined ? Number.NaN : Number(v);
    return Number.isFinite(n) ? n : dflt;
  };
  const exitAfter = get(SIM_ANNOTATIONS.exitAfter);
  const behavior = get(SIM_ANNOTATIONS.behavior) ?? (exitAfter !== undefined ? 'exit' : 'run');
  return {
    /** Whether annotations script the container (then the behaviour model of its command is not used). */
    scripted: get(SIM_ANNOTATIONS.behavior) !== undefined || exitAfter !== undefined || get(SIM_ANNOTATIONS.log) !== undefined,
    behavior,
    exitAfterSec: num(SIM_ANNOTATIONS.exitAfter, 0),
    exitCode: num(SIM_ANNOTATIONS.exitCode, 0),
    memoryMiB: num(SIM_ANNOTATIONS.memoryMiB, 0),
    cpuMillicores: num(SIM_ANNOTATIONS.cpuMillicores, 0),
    log: get(SIM_ANNOTATIONS.log),
    ignoreSigterm: get(SIM_ANNOTATIONS.ignoreSigterm) === 'true',
    listen: (get(SIM_ANNOTATIONS.listen) ?? '')
      .split(',')
      .map((p) => Number(p.trim()))
      .filter((p) => p > 0),
    startError: get(SIM_ANNOTATIONS.startError) ?? 'simulated start failure',
    banner: get(SIM_ANNOTATIONS.banner),
  };
}

function resolvConf(sb: SandboxRecord): string {
  const d = sb.config.dnsConfig;
  let s = '';
  if (d?.searches?.length) s += `search ${d.searches.join(' ')}\n`;
  for (const ns of d?.servers ?? []) s += `nameserver ${ns}\n`;
  if (d?.options?.length) s += `options ${d.options.join(' ')}\n`;
  return s;
}

export class SimBackend implements Backend {
  readonly name = 'sim';
  private host!: BackendHost;
  private readonly live = new Map<string, SimContainer>();
  private readonly sandboxes = new Map<string, SandboxRecord>();
  private readonly containersBySandbox = new Map<string, Set<ContainerRecord>>();
  /** Ports already listening in each sandbox's simulated namespace (`tcp/80`). */
  private readonly listening = new Map<string, Set<string>>();

  /** The temporary home of writable layers when no rootfsDir was given (removed on close). */
  private tmpRootfs?: string;

  constructor(private readonly opts: SimBackendOptions = {}) {}

  /**
   * The container's writable layer (a directory that may not exist yet). Without a rootfsDir the temporary
   * home is made only for a write (`forWrite`); before that there is no layer to read.
   */
  private rootfs(c: ContainerRecord, forWrite = false): string | undefined {
    let base = this.opts.rootfsDir ?? this.tmpRootfs;
    if (!base && forWrite) base = this.tmpRootfs = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-sim-rootfs-'));
    return base ? path.join(base, c.id) : undefined;
  }

  setHost(host: BackendHost): void {
    this.host = host;
  }

  info() {
    return { backend: 'sim', latencyMs: this.opts.latencyMs ?? {} };
  }

  private lat(call: SimCall) {
    return delay(this.opts.latencyMs?.[call] ?? 0);
  }

  private sim(c: ContainerRecord): SimContainer {
    let s = this.live.get(c.id);
    if (!s) {
      s = { output: new EventEmitter() };
      this.live.set(c.id, s);
    }
    return s;
  }

  async createSandbox(sb: SandboxRecord): Promise<void> {
    await this.lat('runPodSandbox');
    if (!sb.hostNetwork) {
      sb.netnsPath = `/var/run/netns/kemu-${sb.id.slice(0, 12)}`;
      await this.opts.netns?.create(sb.netnsPath);
    }
    this.sandboxes.set(sb.id, sb);
  }

  async stopSandbox(sb: SandboxRecord): Promise<void> {
    await this.lat('stopPodSandbox');
    if (sb.netnsPath && sb.backend.netnsRemoved !== true) {
      await this.opts.netns?.remove(sb.netnsPath).catch(() => {});
      sb.backend.netnsRemoved = true;
    }
    this.listening.delete(sb.id);
  }

  async removeSandbox(sb: SandboxRecord): Promise<void> {
    await this.lat('removePodSandbox');
    this.sandboxes.delete(sb.id);
  }

  async createContainer(_sb: SandboxRecord, c: ContainerRecord, _image: ImageRecord): Promise<void> {
    await this.lat('createContainer');
    this.track(c);
  }

  private schedule(c: ContainerRecord, sb: SandboxRecord | undefined, startedAtNs: number) {
    const script = simScript(sb, c);
    const s = this.sim(c);
    s.exited = new Promise((resolve) => {
      s.resolveExit = resolve;
    });
    const limit = c.resources.memoryLimitInBytes ?? 0;
    const elapsedMs = (nowNs() - startedAtNs) / 1e6;
    if (limit > 0 && script.memoryMiB * 1024 * 1024 > limit) {
      s.timer = setTimeout(() => this.exit(c, 137, 'OOMKilled'), Math.max(0, 10 - elapsedMs));
    } else if (script.behavior === 'exit') {
      s.timer = setTimeout(
        () => this.exit(c, script.exitCode, script.exitCode === 0 ? 'Completed' : 'Error'),
        Math.max(0, script.exitAfterSec * 1000 - elapsedMs),
      );
    }
  }

  private exit(c: ContainerRecord, code: number, reason: string) {
    const s = this.live.get(c.id);
    if (s?.timer) clearTimeout(s.timer);
    s?.abort?.abort();
    s?.log?.close();
    if (s) s.log = undefined;
    s?.output.emit('end');
    this.host.containerExited(c.id, { exitCode: code, reason });
    s?.resolveExit?.();
  }

  async startContainer(sb: SandboxRecord, c: ContainerRecord): Promise<void> {
    await this.lat('startContainer');
    const script = simScript(sb, c);
    if (script.behavior === 'fail-start') throw failedPrecondition(script.startError);
    c.startedAt = nowNs();
    c.state = 'running';
    const s = this.sim(c);
    const program = script.scripted ? undefined : simProgram(c.config.command ?? [], c.config.args ?? []);
    if ((script.log || program) && c.logPath) s.log = new CriLogWriter(c.logPath, c.logRoot);
    if (script.log) s.log?.write('stdout', script.log.endsWith('\n') ? script.log : `${script.log}\n`);
    this.schedule(c, sb, c.startedAt);
    if (program) this.runProgram(sb, c, s, program);
    await this.openPorts(sb, script.listen);
  }

  /**
   * Once a container of the pod runs, the pod answers on its declared ports (the sandbox's port mappings,
   * which the kubelet fills from every container's `ports`, and `kemu.io/sim-listen`), as the container's
   * server would: Services and traces then reach it. They close with the pod's namespace.
   */
  private async openPorts(sb: SandboxRecord, extraTcp: number[]): Promise<void> {
    const listen = this.opts.netns?.listen;
    if (!sb.netnsPath || !listen) return;
    const want: ['tcp' | 'udp', number][] = extraTcp.map((p) => ['tcp', p]);
    for (const pm of sb.config.portMappings ?? []) {
      const proto = pm.protocol === cri.Protocol.UDP ? 'udp' : pm.protocol === cri.Protocol.SCTP ? undefined : 'tcp';
      if (proto && pm.containerPort) want.push([proto, pm.containerPort]);
    }
    let open = this.listening.get(sb.id);
    if (!open) this.listening.set(sb.id, (open = new Set()));
    for (const [proto, port] of want) {
      const key = `${proto}/${port}`;
      if (open.has(key)) continue;
      open.add(key);
      // Already listening (a runtime restarted over a saved world) or a namespace gone: nothing to add.
      await listen(sb.netnsPath, proto, port).catch(() => {});
    }
  }

  /** Runs the container's command through the behaviour model; the container exits with its status. */
  private runProgram(sb: SandboxRecord, c: ContainerRecord, s: SimContainer, program: NonNullable<ReturnType<typeof simProgram>>) {
    const abort = new AbortController();
    s.abort = abort;
    const files = { '/etc/hostname': `${sb.config.hostname ?? ''}\n`, '/etc/resolv.conf': resolvConf(sb) };
    // The program starts once StartContainer has returned, as a process would run after its start.
    const started = new Promise<void>((resolve) => {
      const t = setImmediate(resolve);
      abort.signal.addEventListener('abort', () => clearImmediate(t), { once: true });
    });
    void started.then(() => runSimProgram(program, {
      write: (stream, data) => {
        if (data.length && !abort.signal.aborted) s.log?.write(stream, data);
      },
      cat: (file) => readSimFile(c, file, files, this.rootfs(c)),
      env: () => (c.config.envs ?? []).map((e) => `${e.key}=${e.value}`).join('\n'),
      sleep: (ms) =>
        new Promise<void>((resolve) => {
          if (abort.signal.aborted || ms === Number.POSITIVE_INFINITY) return;
          const t = setTimeout(resolve, ms);
          abort.signal.addEventListener('abort', () => clearTimeout(t), { once: true });
        }),
    })).then((code) => {
      if (!abort.signal.aborted && c.state === 'running') this.exit(c, code, code === 0 ? 'Completed' : 'Error');
    });
  }

  async stopContainer(c: ContainerRecord, timeoutSec: number): Promise<void> {
    await this.lat('stopContainer');
    const script = simScript(this.sandboxes.get(c.sandboxId), c);
    if (script.ignoreSigterm) {
      await delay(timeoutSec * 1000);
      if (c.state === 'running') this.exit(c, 137, 'Error');
    } else if (c.state === 'running') this.exit(c, 143, 'Error');
  }

  async removeContainer(c: ContainerRecord): Promise<void> {
    await this.lat('removeContainer');
    const s = this.live.get(c.id);
    if (s?.timer) clearTimeout(s.timer);
    s?.abort?.abort();
    s?.log?.close();
    this.live.delete(c.id);
    this.untrack(c);
    // The layer goes with the container (rm does not follow the links an archive may have placed there).
    const layer = this.rootfs(c);
    if (layer) fs.rmSync(layer, { recursive: true, force: true });
  }

  private run(sb: SandboxRecord, c: ContainerRecord, cmd: string[]): { stdout: string; stderr: string; exitCode: number } {
    const [bin, ...args] = cmd;
    const base = bin.split('/').pop()!;
    const env = (c.config.envs ?? []).map((e) => `${e.key}=${e.value}`).join('\n');
    const files: Record<string, string> = {
      '/etc/hostname': `${sb.config.hostname ?? ''}\n`,
      '/etc/resolv.conf': resolvConf(sb),
    };
    switch (base) {
      case 'echo':
        return { stdout: `${args.join(' ')}\n`, stderr: '', exitCode: 0 };
      case 'true':
        return { stdout: '', stderr: '', exitCode: 0 };
      case 'false':
        return { stdout: '', stderr: '', exitCode: 1 };
      case 'test':
      case '[':
        return { stdout: '', stderr: '', exitCode: this.test(c, files, base === '[' ? args.slice(0, args.at(-1) === ']' ? -1 : args.length) : args) };
      case 'hostname':
        return { stdout: `${sb.config.hostname || sb.config.metadata?.name || ''}\n`, stderr: '', exitCode: 0 };
      case 'env':
        return { stdout: env ? `${env}\n` : '', stderr: '', exitCode: 0 };
      case 'cat':
        // `cat FILE...` is answered byte for byte before this (exec, ExecSync); bare `cat` has no input here.
        return { stdout: '', stderr: '', exitCode: 0 };
      case 'sh':
        if (args[0] === '-c' && /^exit \d+$/.test(args[1] ?? '')) return { stdout: '', stderr: '', exitCode: Number(args[1].slice(5)) };
        return this.run(sb, c, ['echo', ...args.slice(1)]);
      default:
        return { stdout: '', stderr: `${bin}: command not found in simulated container\n`, exitCode: 127 };
    }
  }

  /** `test` with one file operator (-e, -f, -d, -s) or a string test, as kubectl cp's `test -d` asks. */
  private test(c: ContainerRecord, files: Record<string, string>, args: string[]): number {
    if (args.length === 1) return args[0] ? 0 : 1;
    if (args.length === 2 && args[0] === '-n') return args[1] ? 0 : 1;
    if (args.length === 2 && args[0] === '-z') return args[1] ? 1 : 0;
    if (args.length !== 2 || !['-e', '-f', '-d', '-s'].includes(args[0])) return 2;
    const kind = statSimPath(c, args[1], files, this.rootfs(c));
    if (args[0] === '-e') return kind ? 0 : 1;
    if (args[0] === '-d') return kind === 'directory' ? 0 : 1;
    if (args[0] === '-s') {
      const r = kind === 'file' ? readSimFile(c, args[1], files, this.rootfs(c)) : undefined;
      return r?.ok && r.data.length > 0 ? 0 : 1;
    }
    return kind === 'file' ? 0 : 1;
  }

  /** `tar` over the container's files, streaming (what kubectl cp runs through exec). */
  private tar(sb: SandboxRecord, c: ContainerRecord, args: string[], stdin: Readable | undefined) {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const synthetic = { '/etc/hostname': `${sb.config.hostname ?? ''}\n`, '/etc/resolv.conf': resolvConf(sb) };
    const exit = runSimTar(args, { container: c, rootfs: this.rootfs(c, true), synthetic }, { stdin, stdout, stderr })
      .catch((err: unknown) => {
        stderr.write(`tar: ${(err as Error).message}\n`);
        return 2;
      })
      .finally(() => {
        stdout.end();
        stderr.end();
      });
    return { stdout, stderr, exit };
  }

  async execSync(sb: SandboxRecord, c: ContainerRecord, cmd: string[], timeoutMs: number): Promise<ExecResult> {
    await this.lat('execSync');
    if (cmd[0]?.split('/').pop() === 'tar') {
      const t = this.tar(sb, c, cmd.slice(1), undefined);
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      t.stdout.on('data', (d: Buffer) => out.push(d));
      t.stderr.on('data', (d: Buffer) => err.push(d));
      const exitCode = await t.exit;
      return { stdout: Buffer.concat(out), stderr: Buffer.concat(err), exitCode };
    }
    if (cmd[0] === 'sleep') {
      const ms = Number(cmd[1] ?? 0) * 1000;
      if (timeoutMs > 0 && ms > timeoutMs) {
        await delay(timeoutMs);
        return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: -1 };
      }
      await delay(ms);
      return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 };
    }
    // `sh -c '...'` runs through the behaviour model (sim-behavior.ts) when it can be modelled.
    // So does `cat FILE...`, whose bytes come back unchanged (the string path below is for text only).
    const bin = cmd[0]?.split('/').pop() ?? '';
    const program = (['sh', 'bash', 'ash', 'dash'].includes(bin) && cmd[1] === '-c') || (bin === 'cat' && cmd.length > 1) ? simProgram(cmd, []) : undefined;
    if (program) return this.execProgram(sb, c, program, timeoutMs);
    const r = this.run(sb, c, cmd);
    return { stdout: Buffer.from(r.stdout), stderr: Buffer.from(r.stderr), exitCode: r.exitCode };
  }

  private async execProgram(sb: SandboxRecord, c: ContainerRecord, program: NonNullable<ReturnType<typeof simProgram>>, timeoutMs: number): Promise<ExecResult> {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const files = { '/etc/hostname': `${sb.config.hostname ?? ''}\n`, '/etc/resolv.conf': resolvConf(sb) };
    const run = runSimProgram(program, {
      write: (stream, data) => (stream === 'stdout' ? out : err).push(Buffer.from(data)),
      cat: (file) => readSimFile(c, file, files, this.rootfs(c)),
      env: () => (c.config.envs ?? []).map((e) => `${e.key}=${e.value}`).join('\n'),
      sleep: (ms) => (ms === Number.POSITIVE_INFINITY ? new Promise<void>(() => {}) : delay(ms)),
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<number>((resolve) => {
      if (timeoutMs > 0) timer = setTimeout(() => resolve(-1), timeoutMs);
    });
    const exitCode = await Promise.race([run, timedOut]);
    clearTimeout(timer);
    return { stdout: Buffer.concat(out), stderr: Buffer.concat(err), exitCode };
  }

  exec(sb: SandboxRecord, c: ContainerRecord, cmd: string[], opts: ExecOptions): StreamSession {
    if (cmd[0]?.split('/').pop() === 'tar') {
      const input = opts.stdin ? new PassThrough() : undefined;
      const t = this.tar(sb, c, cmd.slice(1), input ?? Readable.from([]));
      if (!opts.stdout) t.stdout.resume();
      // Without a separate stderr stream (a TTY, or stderr not asked for) tar's messages are dropped.
      const errOut = opts.stderr && !opts.tty ? t.stderr : undefined;
      if (!errOut) t.stderr.resume();
      return { stdin: input, stdout: opts.stdout ? t.stdout : undefined, stderr: errOut, exit: t.exit, kill: () => input?.destroy() };
    }
    if (cmd[0] === 'cat' && cmd.length === 1 && opts.stdin) {
      const input = new PassThrough();
      const out = new PassThrough();
      input.pipe(out);
      const exit = new Promise<number>((resolve) => out.on('end', () => resolve(0)));
      return { stdin: input, stdout: out, exit, kill: () => input.end() };
    }
    if (cmd[0]?.split('/').pop() === 'cat' && cmd.length > 1) {
      // File bytes as they are (binary files stay binary), as in ExecSync.
      const files = { '/etc/hostname': `${sb.config.hostname ?? ''}\n`, '/etc/resolv.conf': resolvConf(sb) };
      const out: Buffer[] = [];
      let err = '';
      for (const file of cmd.slice(1)) {
        const r = readSimFile(c, file, files, this.rootfs(c));
        if (r.ok) out.push(r.data);
        else err += `cat: ${file}: ${r.error}\n`;
      }
      return fixedSession(opts, Buffer.concat(out), err, err ? 1 : 0);
    }
    const r = this.run(sb, c, cmd);
    return fixedSession(opts, r.stdout, r.stderr, r.exitCode);
  }

  attach(_sb: SandboxRecord, c: ContainerRecord, opts: ExecOptions): StreamSession {
    const s = this.sim(c);
    const out = opts.stdout ? new PassThrough() : undefined;
    const input = opts.stdin ? new PassThrough() : undefined;
    let done!: (code: number) => void;
    const exit = new Promise<number>((resolve) => {
      done = resolve;
    });
    const onEnd = () => {
      out?.end();
      done(c.exitCode);
    };
    s.output.once('end', onEnd);
    // What is typed into an attached simulated container comes back on stdout, as with `cat`.
    input?.on('data', (d: Buffer) => {
      out?.write(d);
      s.log?.write('stdout', d);
    });
    return {
      stdin: input,
      stdout: out,
      exit,
      kill: () => {
        s.output.off('end', onEnd);
        out?.end();
        done(0);
      },
    };
  }

  async portForward(sb: SandboxRecord, port: number): Promise<Duplex> {
    const ports = new Set<number>((sb.config.portMappings ?? []).map((pm) => pm.containerPort ?? 0));
    let banner: string | undefined;
    for (const s of this.sandboxContainers(sb)) {
      const script = simScript(sb, s);
      for (const p of script.listen) ports.add(p);
      banner ??= script.banner;
    }
    if (!ports.has(port)) throw new Error(`connection refused: nothing listens on port ${port} in sandbox ${sb.id}`);
    // An echo server, after the pod's banner if it has one (so a client can tell which pod answered).
    const conn = new Duplex({
      read() {},
      write(chunk, _enc, cb) {
        this.push(chunk);
        cb();
      },
      final(cb) {
        this.push(null);
        cb();
      },
    });
    if (banner) conn.push(banner);
    return conn;
  }


  private sandboxContainers(sb: SandboxRecord): ContainerRecord[] {
    return [...(this.containersBySandbox.get(sb.id) ?? [])].filter((c) => c.state === 'running');
  }

  private track(c: ContainerRecord) {
    let set = this.containersBySandbox.get(c.sandboxId);
    if (!set) {
      set = new Set();
      this.containersBySandbox.set(c.sandboxId, set);
    }
    set.add(c);
  }

  private untrack(c: ContainerRecord) {
    this.containersBySandbox.get(c.sandboxId)?.delete(c);
  }

  async updateResources(_c: ContainerRecord): Promise<void> {}

  async reopenLog(c: ContainerRecord): Promise<void> {
    this.live.get(c.id)?.log?.reopen();
  }

  async containerUsage(c: ContainerRecord): Promise<UsageSample> {
    const script = simScript(this.sandboxes.get(c.sandboxId), c);
    const runningNs = c.state === 'running' ? Math.max(0, nowNs() - c.startedAt) : 0;
    const mem = script.memoryMiB * 1024 * 1024;
    return {
      cpuCoreNanoSeconds: Math.floor((runningNs * script.cpuMillicores) / 1000),
      memoryWorkingSetBytes: mem,
      memoryUsageBytes: mem,
      rssBytes: mem,
      processCount: c.state === 'running' ? 1 : 0,
    };
  }

  async networkUsage(sb: SandboxRecord): Promise<NetworkUsageSample[]> {
    if (!sb.netnsPath || !this.opts.networkUsage) return [];
    return this.opts.networkUsage(sb.netnsPath);
  }

  async recover(sandboxes: SandboxRecord[], containers: ContainerRecord[]): Promise<void> {
    for (const sb of sandboxes) this.sandboxes.set(sb.id, sb);
    for (const c of containers) {
      this.track(c);
      // Simulated containers have no process to lose: a running one resumes its script where it was.
      if (c.state === 'running') this.schedule(c, this.sandboxes.get(c.sandboxId), c.startedAt);
    }
  }

  async close(): Promise<void> {
    for (const s of this.live.values()) {
      if (s.timer) clearTimeout(s.timer);
      s.abort?.abort();
      s.log?.close();
    }
    this.live.clear();
    if (this.tmpRootfs) fs.rmSync(this.tmpRootfs, { recursive: true, force: true });
    this.tmpRootfs = undefined;
  }
}
