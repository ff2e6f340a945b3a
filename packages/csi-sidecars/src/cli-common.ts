// What the sidecar commands share: upstream-style duration flags, the store to watch, the CSI connection,
// leader-election flags and one-line fatal errors.
import { type Command, InvalidArgumentError, Option } from 'commander';
import { createEtcdStore, createFileStore, createMemoryStore, type Store } from '@kemu/core';
import { connectCsiSocket, type CsiConnection } from './connection.js';
import { runWithLeaderElection } from './leader.js';

/** Go-style durations as the upstream flags take them: 300ms, 10s, 5m, 1h, 1m30s. */
export function parseDuration(v: string): number {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let m: RegExpExecArray | null;
  let consumed = 0;
  for (;;) {
    m = re.exec(v);
    if (!m) break;
    consumed = re.lastIndex;
    total += Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
  }
  if (v === '0') return 0;
  if (!v || consumed !== v.length)
    throw new InvalidArgumentError(`invalid duration "${v}" (use e.g. 300ms, 10s, 5m)`);
  return total;
}

export function parseCount(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1)
    throw new InvalidArgumentError(`expected a positive whole number, got "${v}"`);
  return Number(v);
}

/** The gRPC client to reach the driver with (kemu's servers have --grpc-engine; this is the other end). */
export function grpcClientOption(): Option {
  return new Option('--grpc-client <kind>', 'gRPC client implementation (default: $KEMU_GRPC_CLIENT, else http2)').choices([
    'http2',
    'grpc-js',
  ]);
}

export function addCommonOptions(cmd: Command, defaults: { timeout: string; leaseNote: string }): Command {
  return cmd
    .option('--csi-address <path>', 'address of the CSI driver socket', '/run/csi/socket')
    .addOption(grpcClientOption())
    .option(
      '--store <url>',
      'API store to watch: etcd://host:port[,host:port] (shared with the cluster), file:<dir> (this process only) or memory',
      process.env.KEMU_STORE ?? 'memory',
    )
    .option(
      '--driver-name <name>',
      'skip asking the driver its name with GetPluginInfo (start even while the socket is absent)',
    )
    .addOption(
      new Option('--timeout <duration>', 'timeout of every CSI call')
        .default(defaults.timeout)
        .argParser(parseDuration),
    )
    .option('--leader-election', `enable leader election (${defaults.leaseNote})`, false)
    .option(
      '--leader-election-namespace <ns>',
      'namespace of the leader election Lease',
      process.env.NAMESPACE ?? 'default',
    )
    .addOption(
      new Option('--leader-election-lease-duration <duration>', 'lease validity for non-leaders')
        .default('15s')
        .argParser(parseDuration),
    )
    .addOption(
      new Option('--leader-election-renew-deadline <duration>', 'how long the leader retries renewing')
        .default('10s')
        .argParser(parseDuration),
    )
    .addOption(
      new Option('--leader-election-retry-period <duration>', 'wait between acquire/renew attempts')
        .default('5s')
        .argParser(parseDuration),
    )
    .option('-v, --verbose', 'log every retry', false);
}

export function fail(bin: string, msg: string): never {
  process.stderr.write(`${bin}: ${msg}\n`);
  process.exit(2);
}

/** Durations were parsed to ms by commander (defaults come in as strings). */
export function ms(v: unknown): number {
  return typeof v === 'number' ? v : parseDuration(String(v));
}

export async function openStore(url: string): Promise<Store> {
  if (url === 'memory') return createMemoryStore();
  if (url.startsWith('file:')) {
    const dir = url.slice('file:'.length).replace(/^\/\/(?=\/)/, '');
    if (!dir) throw new Error('--store file:<dir> needs a directory');
    return createFileStore({ dir });
  }
  if (url.startsWith('etcd://') || url.startsWith('http://') || url.startsWith('https://')) {
    const endpoints = url
      .replace(/^etcd:\/\//, '')
      .split(',')
      .map((h) => (h.startsWith('http') ? h : `http://${h}`));
    return createEtcdStore({ endpoints });
  }
  throw new Error(`--store "${url}" is not understood; use etcd://host:port, file:<dir> or memory`);
}

export function connect(address: string, client?: 'http2' | 'grpc-js'): CsiConnection {
  if (!address || address.includes('\0')) throw new Error('--csi-address must name a unix socket');
  return connectCsiSocket(address.startsWith('unix:') ? address : `unix://${address}`, { client });
}

export function logError(bin: string, verbose: boolean) {
  return (what: string, err: unknown) => {
    if (verbose) process.stderr.write(`${bin}: ${what}: ${(err as Error)?.message ?? String(err)}\n`);
  };
}

/** Like upstream, waits for the driver (asking its name until it answers) unless the name was given. */
export async function waitForDriverName(
  bin: string,
  conn: CsiConnection,
  given: string | undefined,
  ask: () => Promise<string>,
): Promise<string> {
  let driverName = given;
  while (!driverName) {
    try {
      driverName = await ask();
    } catch (e) {
      process.stderr.write(`${bin}: still connecting to ${conn.address}: ${(e as Error).message}\n`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  return driverName;
}

/** The leader-election flags of addCommonOptions, as parsed by commander. */
export interface LeaderFlags {
  leaderElection: boolean;
  leaderElectionNamespace?: string;
  leaderElectionLeaseDuration: unknown;
  leaderElectionRenewDeadline: unknown;
  leaderElectionRetryPeriod: unknown;
}

/**
 * Runs a sidecar's work under leader election (when enabled) until SIGTERM/SIGINT, then stops it, closes
 * the CSI connection and the store, and exits 0. Losing the lease exits with an error so a restart can
 * contend again.
 */
export function runSidecar(
  bin: string,
  o: Partial<LeaderFlags>,
  deps: { store: Store; conn: CsiConnection; leaseName: string },
  work: { start(): Promise<void>; stop(): Promise<void> },
  banner: string,
): void {
  const handle = runWithLeaderElection(
    {
      enabled: o.leaderElection ?? false,
      store: deps.store,
      leaseName: deps.leaseName,
      namespace: o.leaderElectionNamespace,
      leaseDurationMs: ms(o.leaderElectionLeaseDuration),
      renewDeadlineMs: ms(o.leaderElectionRenewDeadline),
      retryPeriodMs: ms(o.leaderElectionRetryPeriod),
    },
    work,
    () => fail(bin, 'lost the leader election lease; exiting so a restart can contend again'),
  );
  process.stderr.write(`${bin}: ${banner} through ${deps.conn.address}\n`);
  const stop = async () => {
    await handle.stop();
    deps.conn.close();
    await deps.store.close();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
