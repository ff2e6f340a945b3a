#!/usr/bin/env node
import { createHash } from 'node:crypto';
import { CniError, toCniError } from './errors.js';
import { CniRuntime, type RuntimeConf } from './runtime.js';
import { convertResult } from './types.js';

const USAGE = `Usage: kemu-cnitool add|check|del <network> <netns-path>
       kemu-cnitool status <network>
       kemu-cnitool gc <network> [<netns-path> ...]   (attachments of the given netns paths are kept)

Environment: NETCONFPATH (default /etc/cni/net.d), CNI_PATH (default /opt/cni/bin), CNI_IFNAME (default eth0),
CNI_ARGS ("K=V;K2=V2"), CAP_ARGS (JSON object of capability arguments), CNI_CACHE_DIR (default /var/lib/cni).`;

/** cnitool's container ID: derived from the netns path so add and del agree without state. */
export function containerIdFor(netns: string): string {
  return `cni-${createHash('sha512').update(netns).digest('hex').slice(0, 20)}`;
}

function fail(msg: string): never {
  process.stderr.write(`kemu-cnitool: ${msg}\n`);
  process.exit(1);
}

async function run(argv: string[]): Promise<void> {
  const [verb, network, ...rest] = argv;
  if (!verb || verb === '-h' || verb === '--help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (!['add', 'check', 'del', 'status', 'gc'].includes(verb)) fail(`unknown command "${verb}"\n${USAGE}`);
  if (!network) fail(`missing <network>\n${USAGE}`);
  const needsNetns = verb === 'add' || verb === 'check' || verb === 'del';
  if (needsNetns && !rest[0]) fail(`missing <netns-path> for ${verb}\n${USAGE}`);

  const env = process.env;
  let capabilityArgs: Record<string, unknown> | undefined;
  if (env.CAP_ARGS) {
    try {
      capabilityArgs = JSON.parse(env.CAP_ARGS);
    } catch {
      fail('CAP_ARGS is not valid JSON (expected an object such as {"portMappings":[...]})');
    }
  }
  const args: [string, string][] = [];
  for (const pair of (env.CNI_ARGS ?? '').split(';').filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) fail(`CNI_ARGS: invalid pair "${pair}" (expected K=V;K2=V2)`);
    args.push([pair.slice(0, eq), pair.slice(eq + 1)]);
  }
  const runtime = new CniRuntime({
    confDir: env.NETCONFPATH || '/etc/cni/net.d',
    binDirs: (env.CNI_PATH || '/opt/cni/bin').split(':').filter(Boolean),
    cacheDir: env.CNI_CACHE_DIR || '/var/lib/cni',
  });
  const list = await runtime.loadConfList(network);
  const ifname = env.CNI_IFNAME || 'eth0';
  const rtFor = (netns: string): RuntimeConf => ({ containerId: containerIdFor(netns), netns, ifname, args, capabilityArgs });
  switch (verb) {
    case 'add': {
      const result = await runtime.addNetworkList(list, rtFor(rest[0]!));
      process.stdout.write(`${JSON.stringify(convertResult(result, list.cniVersion), null, 4)}\n`);
      return;
    }
    case 'check':
      return runtime.checkNetworkList(list, rtFor(rest[0]!));
    case 'del':
      return runtime.delNetworkList(list, rtFor(rest[0]!));
    case 'status':
      return runtime.getStatus(list);
    case 'gc':
      return runtime.gcNetworkList(
        list,
        rest.map((ns) => ({ containerId: containerIdFor(ns), ifname })),
      );
  }
}

run(process.argv.slice(2)).catch((e: unknown) => {
  const err = e instanceof CniError ? e : toCniError(e);
  process.stderr.write(`kemu-cnitool: ${err.message}${err.details ? ` (${err.details})` : ''} [CNI error code ${err.code}]\n`);
  process.exit(1);
});
