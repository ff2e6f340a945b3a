// Where a node's rules go: a netfilter that reads back its tables (iptables-save) and takes a
// `--noflush` iptables-restore, and for nftables mode runs `nft -f` transactions and lists a table.
// One implementation drives the simulated datapath, one real Linux.
import { spawn } from 'node:child_process';

export interface RuleSink {
  /** The filter and nat tables as iptables-save prints them. */
  save(): Promise<string>;
  /** Applies iptables-restore input with --noflush; all of it or nothing. */
  restore(text: string): Promise<void>;
  /**
   * `conntrack -D -p udp`: forgets UDP flows to a Service address that went (`origDst`) or from an endpoint
   * that went (`replySrc`), so they stop following a stale DNAT. Absent where no conntrack tool exists.
   */
  clearUdpConntrack?(f: { origDst?: string; replySrc?: string }): Promise<void>;
  /**
   * A number that changes whenever anyone changes the node's tables; where a sink has one, the periodic
   * resync is skipped while neither the tables nor the Services and EndpointSlices changed since the last
   * sync (it would write what is there). Absent: every period resyncs, as upstream does.
   */
  generation?(): number;
  /** nftables: `nft -f -` (one transaction) and `nft list table FAMILY NAME` ('' when there is none). */
  nft?: {
    apply(script: string): Promise<void>;
    list(family: 'ip' | 'ip6', table: string): Promise<string>;
  };
}

/** What the simulated datapath offers (netsim's World). */
export interface SimNetfilter {
  iptablesSave(ns: string, o?: { table?: 'filter' | 'nat' }): string;
  iptablesRestore(ns: string, text: string, o?: { noflush?: boolean }): void;
  deleteConntrack(ns: string, f: { proto?: 'udp'; origDst?: string; replySrc?: string }): number;
  nft(ns: string, script: string): void;
  nftList(ns: string, family: 'ip' | 'ip6', table: string): string;
  nftTables(ns: string): string[];
  netfilterGeneration?(ns: string): number;
}

export function simRuleSink(world: SimNetfilter, ns: string): RuleSink {
  return {
    async save() {
      return world.iptablesSave(ns, { table: 'filter' }) + world.iptablesSave(ns, { table: 'nat' });
    },
    async restore(text) {
      world.iptablesRestore(ns, text, { noflush: true });
    },
    async clearUdpConntrack(f) {
      world.deleteConntrack(ns, { proto: 'udp', ...f });
    },
    generation: world.netfilterGeneration ? () => world.netfilterGeneration!(ns) : undefined,
    nft: {
      async apply(script) {
        world.nft(ns, script);
      },
      async list(family, table) {
        return world.nftTables(ns).includes(`${family} ${table}`) ? world.nftList(ns, family, table) : '';
      },
    },
  };
}

const NSENTER = '/usr/bin/nsenter';

function run(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(NSENTER, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], timeout: 60_000 });
    let out = '';
    let err = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (err += c));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${args.slice(2).join(' ')}: ${err.trim() || `exit ${code}`}`))));
    if (input !== undefined) {
      // A child that fails before reading its input must not turn into an EPIPE here.
      child.stdin!.on('error', () => {});
      child.stdin!.end(input);
    }
  });
}

/** Real iptables in the network namespace at `netnsPath` (entered with nsenter; no shell involved). */
export function linuxRuleSink(netnsPath: string): RuleSink {
  if (!netnsPath.startsWith('/') || netnsPath.includes('\0')) throw new Error(`invalid network namespace path ${netnsPath}`);
  const ns = `--net=${netnsPath}`;
  return {
    async save() {
      return (await run([ns, '--', 'iptables-save', '-t', 'filter'])) + (await run([ns, '--', 'iptables-save', '-t', 'nat']));
    },
    async restore(text) {
      await run([ns, '--', 'iptables-restore', '--noflush', '-w', '5'], text);
    },
    nft: {
      async apply(script) {
        await run([ns, '--', 'nft', '-f', '-'], script);
      },
      async list(family, table) {
        const tables = await run([ns, '--', 'nft', 'list', 'tables', family]);
        if (!tables.split('\n').includes(`table ${family} ${table}`)) return '';
        return run([ns, '--', 'nft', 'list', 'table', family, table]);
      },
    },
  };
}
