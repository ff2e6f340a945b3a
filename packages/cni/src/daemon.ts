/*
 * The resident side of kemu's plugin executables. A CNI plugin lives for one call, and a Node.js process
 * pays its own start plus loading netlink and koffi on every ADD; a plugin started while `kemu-cni daemon`
 * runs instead hands its call (environment, stdin, who it is) to the daemon over a unix socket and prints
 * the daemon's answer, so a call costs one bare Node start and the in-process work (the way cilium-cni
 * hands calls to its agent). Without a daemon, or when it declines, the executable does the work itself:
 * the daemon is only ever a faster path to the same result.
 *
 * Wire format: one request per connection, a JSON object and a newline each way.
 *   request  {v: 1, plugin, env, stdin, pid, net, mnt}   net/mnt: "dev:ino" of the caller's namespaces
 *   answer   {handled: true, stdout, exitCode} | {handled: false, reason}
 * The daemon checks the caller's claims against /proc/<pid>/ns. It serves callers that see the same files
 * (its own mount namespace, or another over the same root with the same CNI_NETNS, as under
 * `ip netns exec`), and programs the caller's network namespace as the "host" side, whichever namespace
 * the daemon itself runs in.
 */
import { chmodSync, lstatSync, mkdirSync, statSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import { dirname } from 'node:path';
import type { Datapath } from './datapath.js';
import { CniError, CniErrorCode } from './errors.js';
import { execDelegate, execPlugin, findInPath, interpretOutput } from './invoke-exec.js';
import { bundledDelegate } from './plugin-main.js';
import { type CniPlugin, type Delegate, invokePlugin } from './skeleton.js';
import { CURRENT_VERSION } from './types.js';

export { DEFAULT_DAEMON_SOCKET } from './launcher.js';
export const DAEMON_PROTOCOL = 1;
/** Largest request accepted; a network config with its prevResult is a few KiB. */
const MAX_REQUEST = 1 << 20;

export interface DaemonRequest {
  v: number;
  plugin: string;
  env: Record<string, string>;
  stdin: string;
  pid: number;
  net: string;
  mnt: string;
  /** The caller's "dev:ino" (or "" if absent) of CNI_NETNS and KEMU_HOST_NETNS as it sees them. */
  views: Record<string, string>;
}

export type DaemonAnswer = { handled: true; stdout: string; exitCode: number } | { handled: false; reason: string };

export interface CniDaemonOptions {
  /** Unix socket path; created with mode 0600 (its directory 0700 if the daemon creates it). */
  socketPath: string;
  /** The plugins served, by their `name` (the type in network configs). */
  plugins: Iterable<CniPlugin>;
  /** Datapath factory, for tests; default: the linux datapath, with `hostNetns` set for foreign callers. */
  datapath?: (hostNetns: string | undefined) => Promise<Datapath>;
  /** Called after each request (for logs and tests). */
  onRequest?: (info: { plugin: string; command: string; handled: boolean; reason?: string; ms: number }) => void;
}

export interface CniDaemon {
  readonly socketPath: string;
  readonly plugins: readonly string[];
  /** Requests answered so far, handled or declined. */
  readonly served: number;
  close(): Promise<void>;
}

function nsKey(path: string): string {
  const st = statSync(path);
  return `${st.dev}:${st.ino}`;
}

function isStringRecord(v: unknown): v is Record<string, string> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  return Object.values(v).every((x) => typeof x === 'string');
}

function parseRequest(line: string): DaemonRequest | string {
  let r: Partial<DaemonRequest>;
  try {
    r = JSON.parse(line) as Partial<DaemonRequest>;
  } catch {
    return 'request is not JSON';
  }
  if (typeof r !== 'object' || r === null) return 'request is not an object';
  if (r.v !== DAEMON_PROTOCOL) return `protocol version ${String(r.v)} is not ${DAEMON_PROTOCOL}`;
  if (typeof r.plugin !== 'string' || typeof r.stdin !== 'string' || !isStringRecord(r.env)) return 'malformed request';
  if (!Number.isSafeInteger(r.pid) || (r.pid as number) <= 0) return 'malformed request: pid';
  if (typeof r.net !== 'string' || typeof r.mnt !== 'string' || !isStringRecord(r.views)) return 'malformed request: namespaces';
  return r as DaemonRequest;
}

/** Serves `plugins` on a unix socket until closed. Fails if another daemon already answers there. */
export async function serveCniDaemon(opts: CniDaemonOptions): Promise<CniDaemon> {
  const plugins = new Map([...opts.plugins].map((p) => [p.name, p]));
  const own = { net: nsKey('/proc/self/ns/net'), mnt: nsKey('/proc/self/ns/mnt') };
  const makeDatapath =
    opts.datapath ??
    (async (hostNetns: string | undefined) => {
      const { createLinuxDatapath } = await import('./datapath-linux.js');
      return createLinuxDatapath({ hostNetns });
    });
  // One datapath for callers in the daemon's own namespace, kept open; others get one per call.
  let ownDatapath: Promise<Datapath> | undefined;
  let served = 0;

  const delegateFor = (hostNetns: string | undefined): Delegate => {
    // Types the daemon does not carry are exec'd from CNI_PATH as the plugin would, in the caller's
    // network namespace (nsenter) when that is not the daemon's.
    const exec: Delegate = hostNetns
      ? async (type, command, conf, ctx) => {
          const file = findInPath(type, ctx.path);
          const o = await execPlugin('nsenter', { ...ctx.env, CNI_COMMAND: command }, JSON.stringify(conf), 60_000, [
            `--net=${hostNetns}`,
            '--',
            file,
          ]);
          return interpretOutput(file, o, command === 'ADD');
        }
      : execDelegate;
    return bundledDelegate(plugins, exec);
  };

  async function handle(req: DaemonRequest): Promise<DaemonAnswer> {
    const plugin = plugins.get(req.plugin);
    if (!plugin) return { handled: false, reason: `plugin ${req.plugin} is not served here` };
    const kind = req.env.KEMU_DATAPATH || 'linux';
    if (kind !== 'linux') return { handled: false, reason: `KEMU_DATAPATH=${kind} is not served here` };
    let callerNet: string;
    try {
      if (nsKey(`/proc/${req.pid}/ns/mnt`) !== req.mnt || (callerNet = nsKey(`/proc/${req.pid}/ns/net`)) !== req.net) {
        return { handled: false, reason: 'the caller is not who it says it is' };
      }
    } catch {
      return { handled: false, reason: `process ${req.pid} is gone` };
    }
    // `ip netns exec` and the like give a caller its own mount namespace over the same root: fine as long
    // as the root and the namespace paths of the call are the same files for both. (The paths are compared
    // as the caller reports them: under /proc/<pid>/root an absolute symlink such as /var/run would lead
    // back into the daemon's own view.)
    try {
      if (req.mnt !== own.mnt && nsKey(`/proc/${req.pid}/root/`) !== nsKey('/'))
        return { handled: false, reason: 'the caller has another root directory' };
    } catch {
      return { handled: false, reason: `process ${req.pid} is gone` };
    }
    for (const p of [req.env.CNI_NETNS, req.env.KEMU_HOST_NETNS]) {
      if (!p) continue;
      let mine = '';
      try {
        mine = nsKey(p);
      } catch {
        mine = '';
      }
      if (req.views[p] !== mine) return { handled: false, reason: `${p} is not the same file for the caller and the daemon` };
    }
    const hostNetns = req.env.KEMU_HOST_NETNS || (callerNet !== own.net ? `/proc/${req.pid}/ns/net` : undefined);
    if (hostNetns && (!hostNetns.startsWith('/') || hostNetns.includes('\0'))) {
      return { handled: false, reason: 'KEMU_HOST_NETNS is not an absolute path' };
    }
    let dp: Promise<Datapath> | undefined;
    try {
      const out = await invokePlugin(plugin, {
        env: req.env,
        stdin: req.stdin,
        datapath: () => {
          dp ??= hostNetns ? makeDatapath(hostNetns) : (ownDatapath ??= makeDatapath(undefined));
          return dp;
        },
        delegate: delegateFor(hostNetns),
      });
      return { handled: true, stdout: out.stdout, exitCode: out.exitCode };
    } finally {
      if (dp && hostNetns) await (await dp.catch(() => undefined))?.close?.();
    }
  }

  // A socket file left by a daemon that died is replaced; one that still answers is not.
  try {
    if (lstatSync(opts.socketPath).isSocket()) {
      const alive = await new Promise<boolean>((resolve) => {
        const c = net.connect(opts.socketPath);
        c.once('connect', () => {
          c.destroy();
          resolve(true);
        });
        c.once('error', () => resolve(false));
      });
      if (alive) throw new Error(`another daemon is serving ${opts.socketPath}; stop it first`);
      unlinkSync(opts.socketPath);
    } else {
      throw new Error(`${opts.socketPath} exists and is not a socket; remove it or pick another --socket`);
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const dir = dirname(opts.socketPath);
  try {
    statSync(dir);
  } catch {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  const sockets = new Set<net.Socket>();
  // Half-open: callers end their side after the request and still read the answer.
  const server = net.createServer({ allowHalfOpen: true }, (sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => sock.destroy());
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const answer = (a: DaemonAnswer) => {
      served++;
      if (!sock.destroyed) sock.end(`${JSON.stringify(a)}\n`);
    };
    sock.on('data', (b: Buffer) => {
      if (done) return;
      const nl = b.indexOf(10);
      chunks.push(nl < 0 ? b : b.subarray(0, nl));
      size += b.length;
      if (nl < 0 && size <= MAX_REQUEST) return;
      done = true;
      if (size > MAX_REQUEST && nl < 0) {
        answer({ handled: false, reason: `request larger than ${MAX_REQUEST} bytes` });
        return;
      }
      const t0 = performance.now();
      const req = parseRequest(Buffer.concat(chunks).toString('utf8'));
      if (typeof req === 'string') {
        opts.onRequest?.({ plugin: '', command: '', handled: false, reason: req, ms: performance.now() - t0 });
        answer({ handled: false, reason: req });
        return;
      }
      handle(req).then(
        (a) => {
          opts.onRequest?.({
            plugin: req.plugin,
            command: req.env.CNI_COMMAND ?? '',
            handled: a.handled,
            reason: a.handled ? undefined : a.reason,
            ms: performance.now() - t0,
          });
          answer(a);
        },
        (e: unknown) => {
          // invokePlugin turns plugin failures into CNI errors itself; this is the daemon failing.
          const err = e instanceof CniError ? e : new CniError(CniErrorCode.Internal, `kemu-cni daemon: ${(e as Error).message}`);
          answer({ handled: true, stdout: JSON.stringify(err.toJSON(CURRENT_VERSION)), exitCode: 1 });
        },
      );
    });
  });
  const oldMask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    process.umask(oldMask);
  }
  chmodSync(opts.socketPath, 0o600);

  return {
    socketPath: opts.socketPath,
    plugins: [...plugins.keys()],
    get served() {
      return served;
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      try {
        unlinkSync(opts.socketPath);
      } catch {
        // already gone
      }
      const dp = ownDatapath;
      ownDatapath = undefined;
      if (dp) await (await dp.catch(() => undefined))?.close?.();
    },
  };
}
