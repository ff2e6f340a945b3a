import { parseArgs } from 'node:util';
import { datapathFromEnv } from '@kemu/cni';
import { createEtcdStore, createFileStore, type Store } from '@kemu/core';
import { DEFAULT_NETWORK, DEFAULT_PORT, DEFAULT_SUBNET_LEN, DEFAULT_VNI, VxlanAgent } from './agent.js';
import { DEFAULT_SUBNET_FILE } from './plugin.js';

export const AGENT_USAGE = `usage: kemu-vxlan agent --store etcd://HOST:PORT|file:/DIR --node NAME --public-ip IP
                        [--iface DEV] [--vni N] [--port N] [--network CIDR] [--subnet-len N]
                        [--subnet-file PATH] [--direct-routing] [--no-ip-masq] [--once]
Runs the node side of the overlay (as flanneld does); without a subcommand kemu-vxlan is the CNI plugin.
The datapath follows KEMU_DATAPATH (linux, default; or sim with KEMU_NETSIM_STATE).`;

export class UsageError extends Error {}

export interface AgentArgs {
  store: string;
  node: string;
  publicIp: string;
  iface?: string;
  vni: number;
  port: number;
  network: string;
  subnetLen: number;
  subnetFile: string;
  ipMasq: boolean;
  directRouting: boolean;
  once: boolean;
}

function int(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name}: ${JSON.stringify(v)} is not a number`);
  return Number(v);
}

export function parseAgentArgs(argv: string[]): AgentArgs {
  let v: ReturnType<typeof parse>['values'];
  function parse(a: string[]) {
    return parseArgs({
      args: a,
      options: {
        store: { type: 'string' },
        node: { type: 'string' },
        'public-ip': { type: 'string' },
        iface: { type: 'string' },
        vni: { type: 'string' },
        port: { type: 'string' },
        network: { type: 'string' },
        'subnet-len': { type: 'string' },
        'subnet-file': { type: 'string' },
        'no-ip-masq': { type: 'boolean' },
        'direct-routing': { type: 'boolean' },
        once: { type: 'boolean' },
      },
      strict: true,
    });
  }
  try {
    v = parse(argv).values;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  for (const k of ['store', 'node', 'public-ip'] as const)
    if (!v[k]) throw new UsageError(`--${k} is required`);
  if (!/^(etcd:\/\/[^/\s]+|file:\/\S+)$/.test(v.store!)) {
    throw new UsageError(`--store must be etcd://host:port or file:/path, got ${JSON.stringify(v.store)}`);
  }
  return {
    store: v.store!,
    node: v.node!,
    publicIp: v['public-ip']!,
    iface: v.iface,
    vni: int('vni', v.vni, DEFAULT_VNI),
    port: int('port', v.port, DEFAULT_PORT),
    network: v.network ?? DEFAULT_NETWORK,
    subnetLen: int('subnet-len', v['subnet-len'], DEFAULT_SUBNET_LEN),
    subnetFile: v['subnet-file'] ?? DEFAULT_SUBNET_FILE,
    ipMasq: !v['no-ip-masq'],
    directRouting: !!v['direct-routing'],
    once: !!v.once,
  };
}

async function openStore(url: string): Promise<Store> {
  if (url.startsWith('file:')) return createFileStore({ dir: url.slice('file:'.length) });
  return createEtcdStore({
    endpoints: url
      .slice('etcd://'.length)
      .split(',')
      .map((h) => `http://${h}`),
  });
}

/** `kemu-vxlan agent ...`: runs until SIGINT/SIGTERM (or one pass with --once). Returns the exit status. */
export async function runAgent(argv: string[]): Promise<number> {
  let args: AgentArgs;
  try {
    args = parseAgentArgs(argv);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`kemu-vxlan: ${e.message}\n${AGENT_USAGE}\n`);
      return 2;
    }
    throw e;
  }
  const store = await openStore(args.store);
  const datapath = await datapathFromEnv(process.env as Record<string, string | undefined>);
  let agent: VxlanAgent;
  try {
    agent = new VxlanAgent({
      store,
      datapath,
      node: args.node,
      publicIp: args.publicIp,
      underlayDevice: args.iface,
      vni: args.vni,
      port: args.port,
      network: args.network,
      subnetLen: args.subnetLen,
      subnetFile: args.subnetFile,
      ipMasq: args.ipMasq,
      directRouting: args.directRouting,
      onError: (e) => process.stderr.write(`kemu-vxlan: reconcile: ${(e as Error).message}\n`),
    });
    if (args.once) {
      await agent.setup();
      const r = await agent.reconcile();
      process.stdout.write(
        `${JSON.stringify({ node: args.node, subnet: agent.podSubnet, remotes: r.remotes })}\n`,
      );
      return 0;
    }
    await agent.start();
    process.stderr.write(
      `kemu-vxlan: node ${args.node} subnet ${agent.podSubnet} vni ${args.vni} port ${args.port}\n`,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await agent.stop();
    return 0;
  } catch (e) {
    process.stderr.write(`kemu-vxlan: ${(e as Error).message}\n`);
    return 1;
  } finally {
    await datapath.close?.();
    await store.close();
  }
}
