#!/usr/bin/env node
/**
 * kemu-bgp: runs one BGP speaker. Flags or `--config FILE` (flags win); the Loc-RIB is written to
 * `--rib-out` as JSON after every change; SIGTERM/SIGINT send Cease to every peer before exiting.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { type BgpConfig, parsePeerSpec, readConfigFile, resolveConfig } from './config.js';
import { BgpConfigError } from './errors.js';
import type { RouteSink } from './route-sink.js';
import { BgpSpeaker } from './speaker.js';

const collect = (v: string, prev: string[] = []) => [...prev, v];

function log(line: string): void {
  process.stderr.write(`${new Date().toISOString()} ${line}\n`);
}

/** Writes the Loc-RIB atomically (temp file + rename), coalescing bursts of changes. */
class RibWriter {
  private writing = false;
  private again = false;
  constructor(
    private readonly file: string,
    private readonly speaker: BgpSpeaker,
  ) {}

  request(): void {
    if (this.writing) {
      this.again = true;
      return;
    }
    this.writing = true;
    setImmediate(() => void this.write());
  }

  private async write(): Promise<void> {
    do {
      this.again = false;
      const tmp = path.join(path.dirname(this.file), `.${path.basename(this.file)}.${process.pid}.tmp`);
      const body = `${JSON.stringify(this.speaker.locRib(), null, 2)}\n`;
      try {
        await fs.promises.writeFile(tmp, body, { mode: 0o640 });
        await fs.promises.rename(tmp, this.file);
      } catch (e) {
        log(`cannot write ${this.file}: ${(e as Error).message}`);
      }
    } while (this.again);
    this.writing = false;
  }

  async drain(): Promise<void> {
    while (this.writing) await new Promise((r) => setTimeout(r, 5));
  }
}

export async function main(argv: string[]): Promise<number> {
  const program = new Command('kemu-bgp')
    .description('A BGP-4 speaker: peers with BGP routers, advertises prefixes, and learns routes.')
    .option('--config <file>', 'YAML/JSON file with the same settings (flags override it)')
    .option('--router-id <id>', 'BGP identifier (dotted quad)')
    .option('--as <n>', 'our AS number (default 64512)')
    .option('--listen <addr:port>', 'where to accept BGP connections (default 0.0.0.0:179)')
    .option('--peer <addr:port:as>', 'a neighbour; repeatable ([v6addr]:port:as for IPv6)', collect)
    .option('--advertise <cidr>', 'a prefix to originate; repeatable', collect)
    .option('--rib-out <file>', 'write the Loc-RIB as JSON to this file on every change')
    .option('--route-reflector', 'act as a route reflector (RFC 4456)')
    .option('--cluster-id <id>', 'route-reflector cluster ID (default the router ID)')
    .option('--rr-client <addr:port:as>', 'a route-reflector client; repeatable', collect)
    .option('--hold-time <seconds>', 'proposed hold time (default 90)')
    .option('--connect-retry <seconds>', 'seconds between connection attempts (default 120)')
    .addOption(
      new Option('--family <afi>', 'address families to negotiate; repeatable')
        .choices(['ipv4', 'ipv6'])
        .argParser(collect),
    )
    .option(
      '--install-routes',
      'program learned routes through the Datapath chosen by KEMU_DATAPATH (default linux)',
    )
    .option('--tunnel-dev <name>', 'send routes over this tunnel device (with --install-routes)')
    .addOption(
      new Option('--tunnel-mode <mode>', 'when to use the tunnel').choices(['Always', 'CrossSubnet']),
    )
    .option('--local-subnet <cidr>', 'the node subnet, for --tunnel-mode CrossSubnet')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });

  try {
    program.parse(argv, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    throw e;
  }
  const o = program.opts<Record<string, any>>();

  let speaker: BgpSpeaker;
  let resolved: ReturnType<typeof resolveConfig>;
  try {
    const cfg: Record<string, unknown> = o.config ? readConfigFile(o.config) : {};
    const int = (v: string, flag: string) => {
      if (!/^\d+$/.test(v)) throw new BgpConfigError(flag, `${JSON.stringify(v)} is not a number`);
      return Number(v);
    };
    if (o.routerId !== undefined) cfg.routerId = o.routerId;
    if (o.as !== undefined) cfg.as = int(o.as, '--as');
    if (o.listen !== undefined) cfg.listen = o.listen;
    if (o.peer)
      cfg.peers = [
        ...((cfg.peers as unknown[]) ?? []),
        ...o.peer.map((p: string) => parsePeerSpec(p, '--peer')),
      ];
    if (o.rrClient) {
      cfg.rrClients = [
        ...((cfg.rrClients as unknown[]) ?? []),
        ...o.rrClient.map((p: string) => parsePeerSpec(p, '--rr-client')),
      ];
    }
    if (o.advertise) cfg.advertise = [...((cfg.advertise as string[]) ?? []), ...o.advertise];
    if (o.ribOut !== undefined) cfg.ribOut = o.ribOut;
    if (o.routeReflector) cfg.routeReflector = true;
    if (o.clusterId !== undefined) cfg.clusterId = o.clusterId;
    if (o.holdTime !== undefined) cfg.holdTime = int(o.holdTime, '--hold-time');
    if (o.connectRetry !== undefined) cfg.connectRetryTime = int(o.connectRetry, '--connect-retry');
    if (o.family) cfg.families = o.family;
    if (o.installRoutes) cfg.installRoutes = true;
    if (o.tunnelDev !== undefined || o.tunnelMode !== undefined) {
      if (!o.tunnelDev) throw new BgpConfigError('--tunnel-mode', 'needs --tunnel-dev');
      cfg.tunnel = {
        dev: o.tunnelDev,
        mode: o.tunnelMode ?? 'Always',
        ...(o.localSubnet ? { localSubnet: o.localSubnet } : {}),
      };
    }
    if (cfg.routerId === undefined)
      throw new BgpConfigError('routerId', 'missing: pass --router-id ID or routerId in --config');
    resolved = resolveConfig(cfg satisfies Partial<BgpConfig> | Record<string, unknown>);
    if (resolved.tunnel && !resolved.installRoutes)
      throw new BgpConfigError('tunnel', 'only applies with --install-routes');
    let sink: RouteSink | undefined;
    if (resolved.installRoutes) {
      const cni = await import('@kemu/cni');
      const { DatapathRouteSink } = await import('./route-sink.js');
      sink = new DatapathRouteSink(await cni.datapathFromEnv(process.env), { tunnel: resolved.tunnel });
    }
    speaker = new BgpSpeaker({ ...resolved.speaker, routeSink: sink, log });
    for (const a of resolved.advertise) speaker.advertise(a);
  } catch (e) {
    if (e instanceof BgpConfigError) {
      process.stderr.write(`kemu-bgp: ${e.message}\n`);
      return 2;
    }
    process.stderr.write(`kemu-bgp: ${(e as Error).message}\n`);
    return 1;
  }

  const writer = resolved.ribOut ? new RibWriter(resolved.ribOut, speaker) : undefined;
  speaker.on('route', () => writer?.request());
  writer?.request();
  try {
    await speaker.start();
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const l = resolved.speaker.listen;
    const where = l ? `${l.address}:${l.port}` : '';
    const hint =
      err.code === 'EADDRINUSE'
        ? ' (address in use: another BGP daemon? pick another --listen port)'
        : err.code === 'EADDRNOTAVAIL'
          ? ' (no interface has that address)'
          : err.code === 'EACCES'
            ? ' (ports below 1024 need root or CAP_NET_BIND_SERVICE)'
            : '';
    process.stderr.write(`kemu-bgp: cannot listen on ${where}: ${err.code ?? err.message}${hint}\n`);
    return 1;
  }
  const l = resolved.speaker.listen;
  log(
    `kemu-bgp: router id ${speaker.routerId}, AS ${speaker.as}${l ? `, listening on ${l.address}:${speaker.listenPort}` : ''}, ${resolved.speaker.neighbors?.length ?? 0} peer(s)`,
  );

  return await new Promise<number>((resolve) => {
    let stopping = false;
    const shutdown = async (sig: string) => {
      if (stopping) return;
      stopping = true;
      log(`${sig}: sending Cease to peers`);
      await speaker.stop();
      // Give the NOTIFICATIONs a moment to leave before the process exits.
      await new Promise((r) => setTimeout(r, 100));
      await writer?.drain();
      resolve(0);
    };
    process.once('SIGTERM', () => void shutdown('SIGTERM'));
    process.once('SIGINT', () => void shutdown('SIGINT'));
  });
}

const isMain = process.argv[1] && /kemu-bgp|cli\.(ts|js)$/.test(process.argv[1]);
if (isMain) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(`kemu-bgp: ${(e as Error).message}\n`);
      process.exit(1);
    },
  );
}
