/*
 * Starts a plugin executable's CommonJS bundle with V8's code cache. A CNI plugin lives for one call, so
 * compiling its bundle and the JavaScript of its native modules (netlink, koffi) is a large share of every
 * ADD; with the bytecode from an earlier ADD, V8 skips that work. Node 20 has no compile cache of its own
 * (module.enableCompileCache came with 22), hence this.
 *
 * The cache sits next to the bundle (`<bundle>.v8cache`), written after a successful ADD when there is
 * none yet, V8 rejected it (another Node version, a changed file) or it came from another command. It is
 * used only if owned by root or the current user and writable by nobody else: it is code. Failing to read
 * or write it changes nothing but speed. `KEMU_CNI_CODE_CACHE=off` disables it.
 *
 * Builtins come from process.getBuiltinModule: `import ... from 'node:fs'` would build the ESM facade of
 * fs, which loads the whole stream stack on every start.
 */
import type * as FsT from 'node:fs';
import type * as ModuleT from 'node:module';
import type * as PathT from 'node:path';
import type * as UrlT from 'node:url';
import type * as VmT from 'node:vm';
import { CniError } from './errors.js';
import { READ_LIMITS, readFdBounded } from './read-bounded.js';

type Compile = (this: NodeModule, content: string, filename: string) => unknown;
type ModuleInternals = typeof ModuleT & {
  wrap(src: string): string;
  _nodeModulePaths(dir: string): string[];
  prototype: { _compile: Compile };
  new (id: string, parent?: unknown): NodeModule & { paths: string[] };
};

const MAGIC = 'kemu-cni-v8cache 1';
/** Where the launcher leaves import() for the bundle (see plugin-main's datapathFromEnv). */
export const DYNAMIC_IMPORT = Symbol.for('kemu.cni.dynamicImport');

interface CacheHeader {
  magic: string;
  node: string;
  command: string;
  entries: { file: string; size: number }[];
}

/** What the launcher did, for tests and KEMU_CNI_CODE_CACHE=debug. */
export interface LaunchReport {
  cacheFile: string;
  /** The cache was read and trusted. */
  loaded: boolean;
  /** Scripts compiled from the cache / without it (or rejected by V8). */
  hits: number;
  misses: number;
  /** The cache was (re)written at exit. */
  written: boolean;
}

function readCache(fs: typeof FsT, file: string): { header: CacheHeader; data: Map<string, Buffer> } | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const st = fs.fstatSync(fd);
    const uid = process.getuid?.() ?? 0;
    if (!st.isFile() || (st.uid !== 0 && st.uid !== uid) || (st.mode & 0o022) !== 0) return undefined;
    const buf = fs.readFileSync(fd);
    const nl = buf.indexOf(10);
    if (nl < 0) return undefined;
    const header = JSON.parse(buf.subarray(0, nl).toString('utf8')) as CacheHeader;
    if (header.magic !== MAGIC || header.node !== process.version || !Array.isArray(header.entries)) return undefined;
    const data = new Map<string, Buffer>();
    let off = nl + 1;
    for (const e of header.entries) {
      if (off + e.size > buf.length) return undefined;
      data.set(e.file, buf.subarray(off, off + e.size));
      off += e.size;
    }
    return { header, data };
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}

function writeCache(fs: typeof FsT, file: string, command: string, scripts: Map<string, VmT.Script>): boolean {
  const bufs: Buffer[] = [];
  const entries: CacheHeader['entries'] = [];
  for (const [f, s] of scripts) {
    const b = s.createCachedData();
    entries.push({ file: f, size: b.length });
    bufs.push(b);
  }
  const header: CacheHeader = { magic: MAGIC, node: process.version, command, entries };
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(tmp, Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), ...bufs]), { mode: 0o644, flag: 'wx' });
    fs.renameSync(tmp, file);
    return true;
  } catch {
    try {
      fs.unlinkSync(tmp);
    } catch {
      // nothing was written
    }
    return false;
  }
}

/** Runs the CommonJS bundle at `bundle` (a path or file: URL) as this process's program. */
export function launch(bundle: string | URL): LaunchReport {
  const fs = process.getBuiltinModule('node:fs') as typeof FsT;
  const path = process.getBuiltinModule('node:path') as typeof PathT;
  const vm = process.getBuiltinModule('node:vm') as typeof VmT;
  const Module = process.getBuiltinModule('node:module') as ModuleInternals;
  const url = process.getBuiltinModule('node:url') as typeof UrlT;
  const file = typeof bundle === 'string' ? bundle : url.fileURLToPath(bundle);
  const mode = process.env.KEMU_CNI_CODE_CACHE ?? '';
  const report: LaunchReport = { cacheFile: `${file}.v8cache`, loaded: false, hits: 0, misses: 0, written: false };
  const useCache = mode !== 'off';
  const cache = useCache ? readCache(fs, report.cacheFile) : undefined;
  report.loaded = cache !== undefined;
  const scripts = new Map<string, VmT.Script>();

  // A script compiled by vm cannot run import() without an experimental option, so the bundle's one
  // dynamic import (the optional simulated datapath) borrows this module's; the bundle sits beside it,
  // so specifiers resolve the same.
  (globalThis as Record<symbol, unknown>)[DYNAMIC_IMPORT] = (specifier: string) => import(specifier);
  const compile = (filename: string, content: string): VmT.Script => {
    const cachedData = cache?.data.get(filename);
    const script = new vm.Script(Module.wrap(content), { filename, cachedData });
    if (cachedData && !script.cachedDataRejected) report.hits++;
    else report.misses++;
    scripts.set(filename, script);
    return script;
  };

  if (useCache) {
    // The JavaScript of native modules' packages (netlink, koffi) goes through the same cache.
    const original = Module.prototype._compile;
    Module.prototype._compile = function (this: NodeModule, content: string, filename: string) {
      if (!filename.includes(`${path.sep}node_modules${path.sep}`)) return original.call(this, content, filename);
      const fn = compile(filename, content).runInThisContext() as (...a: unknown[]) => unknown;
      const req = Module.createRequire(filename);
      return fn.call(this.exports, this.exports, req, this, filename, path.dirname(filename));
    };
  }

  const command = process.env.CNI_COMMAND ?? '';
  process.on('exit', (code) => {
    const stale = !cache || report.misses > 0 || (cache.header.command !== 'ADD' && command === 'ADD');
    if (useCache && code === 0 && command === 'ADD' && stale) report.written = writeCache(fs, report.cacheFile, command, scripts);
    if (mode === 'debug') process.stderr.write(`kemu-cni code cache: ${JSON.stringify(report)}\n`);
  });

  // The bundle keeps its #! line; inside the CommonJS wrapper it must become a comment.
  const src = fs.readFileSync(file, 'utf8').replace(/^#!/, '//');
  const main = new Module(file, null);
  main.filename = file;
  main.paths = Module._nodeModulePaths(path.dirname(file));
  const fn = (useCache ? compile(file, src) : new vm.Script(Module.wrap(src), { filename: file })).runInThisContext() as (
    ...a: unknown[]
  ) => unknown;
  fn.call(main.exports, main.exports, Module.createRequire(file), main, file, path.dirname(file));
  return report;
}

/** Commands a plugin may hand to `kemu-cni daemon` (VERSION is answered locally: it is cheap). */
const DAEMON_COMMANDS = new Set(['ADD', 'DEL', 'CHECK', 'STATUS', 'GC']);
/** Where plugin executables look for `kemu-cni daemon` unless KEMU_CNI_DAEMON names another socket (or `off`). */
export const DEFAULT_DAEMON_SOCKET = '/run/kemu/cni.sock';
/** Where launchPlugin leaves stdin it already read for the bundle (fd 0 is then at its end). */
export const STDIN_HANDOVER = Symbol.for('kemu.cni.stdin');

/** Stdin read whole for the daemon; undefined when it is a terminal or a non-blocking pipe (the plugin reads it). */
function readAllStdin(fs: typeof FsT): Buffer | undefined {
  try {
    if (fs.fstatSync(0).isCharacterDevice()) return undefined;
  } catch {
    return undefined;
  }
  let r: { data: Buffer; eof: boolean };
  try {
    r = readFdBounded(0, { what: 'network config on stdin', maxBytes: READ_LIMITS.config });
  } catch (e) {
    if (e instanceof CniError) {
      fs.writeSync(1, JSON.stringify(e.toJSON('1.1.0')));
      process.exit(1);
    }
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EBADF') return Buffer.alloc(0);
    throw e;
  }
  if (r.eof) return r.data;
  // A non-blocking pipe: let the plugin read it the usual way.
  if (r.data.length === 0) return undefined;
  throw new Error('stdin is a non-blocking pipe that was read in part');
}

/**
 * Starts plugin `name`: if `kemu-cni daemon` listens (KEMU_CNI_DAEMON names its socket, `off` disables;
 * default /run/kemu/cni.sock), the call is handed to it and its answer printed; otherwise, or when the
 * daemon declines, the bundle runs here through {@link launch}. The result is the same either way.
 */
export function launchPlugin(name: string, bundle: string | URL): void {
  const fs = process.getBuiltinModule('node:fs') as typeof FsT;
  const setting = process.env.KEMU_CNI_DAEMON ?? '';
  const socketPath = setting === '' ? DEFAULT_DAEMON_SOCKET : setting;
  const command = process.env.CNI_COMMAND ?? '';
  let stdin: Buffer | undefined;
  if (setting !== 'off' && DAEMON_COMMANDS.has(command)) {
    let present = false;
    try {
      present = fs.statSync(socketPath).isSocket();
    } catch {
      present = false;
    }
    if (present) stdin = readAllStdin(fs);
  }
  if (!stdin) {
    launch(bundle);
    return;
  }
  (globalThis as Record<symbol, unknown>)[STDIN_HANDOVER] = stdin;
  const key = (p: string) => {
    try {
      const st = fs.statSync(p);
      return `${st.dev}:${st.ino}`;
    } catch {
      return '';
    }
  };
  // What the namespace paths of the call are for this process, for the daemon to compare with its own view.
  const views: Record<string, string> = {};
  for (const p of [process.env.CNI_NETNS, process.env.KEMU_HOST_NETNS]) if (p) views[p] = key(p);
  const request = `${JSON.stringify({
    v: 1,
    plugin: name,
    env: process.env,
    stdin: stdin.toString('utf8'),
    pid: process.pid,
    net: key('/proc/self/ns/net'),
    mnt: key('/proc/self/ns/mnt'),
    views,
  })}\n`;
  let finished = false;
  const finish = (text: string, sent: boolean, failure?: string) => {
    if (finished) return;
    finished = true;
    let answer: { handled?: boolean; stdout?: unknown; exitCode?: unknown; reason?: unknown } | undefined;
    try {
      answer = JSON.parse(text) as typeof answer;
    } catch {
      answer = undefined;
    }
    if (answer?.handled === true && typeof answer.stdout === 'string' && typeof answer.exitCode === 'number') {
      let out = Buffer.from(answer.stdout);
      try {
        while (out.length > 0) out = out.subarray(fs.writeSync(1, out));
      } catch {
        // nobody reads the result any more
      }
      // Written with blocking writes: leave without tearing down the socket machinery.
      process.exit(answer.exitCode);
    }
    if (answer?.handled === false || !sent) {
      // Declined, or never reached (a stale socket): nothing was done, so do it here.
      if (process.env.KEMU_CNI_DAEMON_DEBUG) process.stderr.write(`kemu-cni daemon: ${String(answer?.reason ?? failure)}\n`);
      launch(bundle);
      return;
    }
    // The daemon took the call and went away: it may have applied it, so running it again could do it twice.
    const msg = `kemu-cni daemon at ${socketPath} closed the connection before answering${failure ? ` (${failure})` : ''}`;
    fs.writeSync(1, JSON.stringify({ cniVersion: '1.1.0', code: 11, msg, details: 'retry the call' }));
    process.exit(1);
  };
  // KEMU_CNI_DAEMON_TRANSPORT=net keeps to the public API (a way out should the fast path misbehave).
  if (process.env.KEMU_CNI_DAEMON_TRANSPORT === 'net' || !exchangeOverPipe(socketPath, request, finish)) {
    exchangeOverNet(socketPath, request, finish);
  }
}

type Finish = (answer: string, sent: boolean, failure?: string) => void;

/**
 * One request/answer over node:net. Loading node:net (and the stream machinery behind it) costs a
 * plugin start about 3 ms of CPU, as much as the rest of the hand-over; {@link exchangeOverPipe} avoids it.
 */
function exchangeOverNet(socketPath: string, request: string, finish: Finish): void {
  const net = process.getBuiltinModule('node:net') as typeof import('node:net');
  const sock = net.connect(socketPath);
  let sent = false;
  const chunks: Buffer[] = [];
  sock.on('connect', () => {
    sent = true;
  });
  // Queued until connected, then written in the same turn.
  sock.end(request);
  // The answer is one line: act on its newline rather than wait for the daemon to close the connection.
  sock.on('data', (b: Buffer) => {
    chunks.push(b);
    if (b.includes(10)) finish(Buffer.concat(chunks).toString('utf8'), sent);
  });
  sock.on('error', (e) => finish(Buffer.concat(chunks).toString('utf8'), sent, e.message));
  sock.on('close', () => finish(Buffer.concat(chunks).toString('utf8'), sent));
}

interface PipeBinding {
  Pipe: new (type: number) => {
    connect(req: object, path: string): number;
    writeUtf8String(req: object, s: string): number;
    readStart(): number;
    close(): void;
    onread: ((buf: ArrayBuffer | undefined) => void) | null;
  };
  PipeConnectWrap: new () => { oncomplete?: (status: number) => void };
  constants: { SOCKET: number };
}
interface StreamBinding {
  WriteWrap: new () => { handle?: unknown; oncomplete?: (status: number) => void; async?: boolean };
  streamBaseState: Int32Array;
  kReadBytesOrError: number;
  kArrayBufferOffset: number;
}

/**
 * The same exchange on libuv's pipe handle directly (what node:net wraps), without loading node:net.
 * This reaches Node's internal stream bindings, so it checks their shape first and returns false for
 * node:net to do the work when anything differs (another Node version); once connecting has begun it
 * reports to `finish` like the node:net path.
 */
function exchangeOverPipe(socketPath: string, request: string, finish: Finish): boolean {
  let pw: PipeBinding;
  let sw: StreamBinding;
  try {
    const proc = process as unknown as { binding(name: string): unknown };
    pw = proc.binding('pipe_wrap') as PipeBinding;
    sw = proc.binding('stream_wrap') as StreamBinding;
  } catch {
    return false;
  }
  if (
    typeof pw?.Pipe !== 'function' ||
    typeof pw.PipeConnectWrap !== 'function' ||
    typeof pw.constants?.SOCKET !== 'number' ||
    typeof sw?.WriteWrap !== 'function' ||
    !(sw.streamBaseState instanceof Int32Array) ||
    typeof sw.kReadBytesOrError !== 'number' ||
    typeof sw.kArrayBufferOffset !== 'number' ||
    typeof pw.Pipe.prototype.connect !== 'function'
  )
    return false;
  const handle = new pw.Pipe(pw.constants.SOCKET);
  if (typeof handle.writeUtf8String !== 'function' || typeof handle.readStart !== 'function') return false;
  const chunks: Buffer[] = [];
  const text = () => Buffer.concat(chunks).toString('utf8');
  const req = new pw.PipeConnectWrap();
  let write: InstanceType<StreamBinding['WriteWrap']> | undefined;
  req.oncomplete = (status: number) => {
    if (status < 0) {
      handle.close();
      finish('', false, `connect: error ${status}`);
      return;
    }
    write = new sw.WriteWrap();
    write.handle = handle;
    write.async = false;
    write.oncomplete = (st: number) => {
      if (st < 0) finish(text(), true, `write: error ${st}`);
    };
    const werr = handle.writeUtf8String(write, request);
    if (werr < 0) {
      finish(text(), true, `write: error ${werr}`);
      return;
    }
    handle.onread = (buf) => {
      const n = sw.streamBaseState[sw.kReadBytesOrError]!;
      if (n > 0 && buf) {
        const b = Buffer.from(Buffer.from(buf, sw.streamBaseState[sw.kArrayBufferOffset]!, n));
        chunks.push(b);
        if (b.includes(10)) finish(text(), true);
      } else if (n < 0) {
        handle.close();
        finish(text(), true, n === -4095 ? undefined : `read: error ${n}`);
      }
    };
    const rerr = handle.readStart();
    if (rerr < 0) finish(text(), true, `read: error ${rerr}`);
  };
  const err = handle.connect(req, socketPath);
  if (err < 0) {
    handle.close();
    return false;
  }
  return true;
}
