import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseCidr } from '@kemu/ip';
import { CniError, CniErrorCode, type CniPlugin, type CniResult, invalidConfig, type PluginContext, parseResult, READ_LIMITS, readTextBoundedIfExists } from '@kemu/cni';

export const PLUGIN_NAME = 'kemu-vxlan';
export const DEFAULT_SUBNET_FILE = '/run/flannel/subnet.env';
export const DEFAULT_DATA_DIR = '/var/lib/cni/flannel';

const isObj = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);

export interface SubnetEnv {
  network: string;
  /** The node's subnet in flannel's form: the gateway address with the prefix, e.g. `10.244.1.1/24`. */
  subnet: string;
  mtu: number;
  ipMasq: boolean;
}

/** Parses flannel's subnet.env (`KEY=value` lines). */
export function parseSubnetEnv(text: string, where = 'subnet.env'): SubnetEnv {
  const kv = new Map<string, string>();
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t || t.startsWith('#')) continue;
    const eq = t.indexOf('=');
    if (eq > 0) kv.set(t.slice(0, eq), t.slice(eq + 1));
  }
  const need = (k: string) => {
    const v = kv.get(k);
    if (!v) throw invalidConfig(`${where}: ${k} is missing`);
    return v;
  };
  const network = need('FLANNEL_NETWORK');
  const subnet = need('FLANNEL_SUBNET');
  if (!parseCidr(network))
    throw invalidConfig(`${where}: FLANNEL_NETWORK ${JSON.stringify(network)} is not a CIDR`);
  if (!parseCidr(subnet))
    throw invalidConfig(`${where}: FLANNEL_SUBNET ${JSON.stringify(subnet)} is not a CIDR`);
  const mtu = Number(kv.get('FLANNEL_MTU') ?? '1450');
  if (!Number.isInteger(mtu) || mtu < 68)
    throw invalidConfig(`${where}: FLANNEL_MTU ${kv.get('FLANNEL_MTU')} is not a valid MTU`);
  return { network, subnet, mtu, ipMasq: kv.get('FLANNEL_IPMASQ') === 'true' };
}

export interface VxlanCniConfig {
  subnetFile: string;
  dataDir: string;
  /** Extra settings merged into the delegate's config (type, bridge, hairpinMode, ...). */
  delegate: Record<string, unknown>;
}

export function loadVxlanConfig(ctx: PluginContext): VxlanCniConfig {
  const c = ctx.conf as Record<string, unknown>;
  const subnetFile = c.subnetFile ?? DEFAULT_SUBNET_FILE;
  if (typeof subnetFile !== 'string' || !subnetFile.startsWith('/') || subnetFile.includes('\0')) {
    throw invalidConfig('"subnetFile" must be an absolute path');
  }
  const dataDir = c.dataDir ?? DEFAULT_DATA_DIR;
  if (typeof dataDir !== 'string' || !dataDir.startsWith('/') || dataDir.includes('\0')) {
    throw invalidConfig('"dataDir" must be an absolute path');
  }
  const delegate = c.delegate ?? {};
  if (!isObj(delegate)) throw invalidConfig('"delegate" must be an object');
  if (delegate.type !== undefined && (typeof delegate.type !== 'string' || delegate.type === '')) {
    throw invalidConfig('"delegate.type" must be a plugin name');
  }
  return { subnetFile, dataDir, delegate };
}

/**
 * Builds the delegate's network config from the node's subnet the way flannel's CNI plugin does: a bridge
 * that is the pods' gateway, host-local IPAM over the node subnet, and a route to the whole cluster network.
 */
export function delegateConfig(
  ctx: PluginContext,
  env: SubnetEnv,
  cfg: VxlanCniConfig,
): Record<string, unknown> {
  const d = { ...cfg.delegate };
  const sn = parseCidr(env.subnet)!;
  const conf: Record<string, unknown> = {
    cniVersion: ctx.version,
    name: ctx.conf.name,
    type: 'kemu-bridge',
    bridge: 'cni0',
    isGateway: true,
    hairpinMode: true,
    // flanneld masquerades for the whole network itself when FLANNEL_IPMASQ is set; otherwise the bridge does.
    ipMasq: !env.ipMasq,
    mtu: env.mtu,
    ...d,
  };
  if (!isObj(d.ipam)) {
    conf.ipam = {
      type: 'kemu-host-local',
      ranges: [[{ subnet: canonicalSubnet(sn.family, sn.ip, sn.prefix) }]],
      routes: [{ dst: env.network }],
      ...(typeof ctx.conf.ipam === 'object' && ctx.conf.ipam
        ? { dataDir: (ctx.conf.ipam as Record<string, unknown>).dataDir }
        : {}),
    };
  }
  if (ctx.conf.runtimeConfig !== undefined) conf.runtimeConfig = ctx.conf.runtimeConfig;
  if (ctx.conf.args !== undefined) conf.args = ctx.conf.args;
  return conf;
}

function canonicalSubnet(family: 4 | 6, ip: bigint, prefix: number): string {
  const bits = family === 4 ? 32 : 128;
  const m = ((1n << BigInt(bits)) - 1n) ^ ((1n << BigInt(bits - prefix)) - 1n);
  const v = ip & m;
  if (family === 4) return `${[24n, 16n, 8n, 0n].map((s) => String((v >> s) & 255n)).join('.')}/${prefix}`;
  throw invalidConfig('IPv6 node subnets are not supported by kemu-vxlan');
}

const CID_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

async function saveDelegate(dir: string, containerId: string, conf: Record<string, unknown>): Promise<void> {
  if (!CID_RE.test(containerId)) throw new CniError(CniErrorCode.InvalidEnvironment, 'invalid container ID');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, containerId);
  await writeFile(`${file}.tmp`, JSON.stringify(conf), { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

async function loadDelegate(dir: string, containerId: string): Promise<Record<string, unknown> | undefined> {
  if (!CID_RE.test(containerId)) return undefined;
  const text = readTextBoundedIfExists(join(dir, containerId), { what: 'saved delegate config', maxBytes: READ_LIMITS.config });
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    throw new CniError(CniErrorCode.DecodingFailure, `saved delegate config ${join(dir, containerId)}: ${(e as Error).message}`);
  }
}

async function readSubnetEnv(file: string): Promise<SubnetEnv> {
  let text: string | undefined;
  let failure = 'ENOENT';
  try {
    // Not a regular file, or too large: the config names the wrong file (code 7).
    text = readTextBoundedIfExists(file, {
      what: '"subnetFile"',
      maxBytes: READ_LIMITS.small,
      badFileCode: CniErrorCode.InvalidNetworkConfig,
    });
  } catch (e) {
    if (e instanceof CniError && e.code === CniErrorCode.InvalidNetworkConfig) throw e;
    failure = (e instanceof CniError && e.details) || (e as Error).message;
  }
  if (text === undefined) {
    // Missing or unreadable: the agent has not written it (yet).
    throw new CniError(CniErrorCode.TryAgainLater, `cannot read ${file}: ${failure} (is the kemu-vxlan agent running on this node?)`);
  }
  return parseSubnetEnv(text, file);
}

export const vxlan: CniPlugin = {
  name: PLUGIN_NAME,
  async add(ctx): Promise<CniResult> {
    const cfg = loadVxlanConfig(ctx);
    const env = await readSubnetEnv(cfg.subnetFile);
    const conf = delegateConfig(ctx, env, cfg);
    // Saved first, so a DEL after an ADD that died half-way still knows what to undo.
    await saveDelegate(cfg.dataDir, ctx.containerId, conf);
    try {
      const res = await ctx.delegate(conf.type as string, 'ADD', conf, ctx);
      return parseResult(res ?? { cniVersion: ctx.version });
    } catch (e) {
      // The delegate failed and undid its own part (or its result was unusable: undo it here): nothing stays.
      await ctx.delegate(conf.type as string, 'DEL', conf, ctx).catch(() => undefined);
      await rm(join(cfg.dataDir, ctx.containerId), { force: true });
      throw e;
    }
  },
  async del(ctx): Promise<void> {
    const cfg = loadVxlanConfig(ctx);
    let conf = await loadDelegate(cfg.dataDir, ctx.containerId);
    if (!conf) {
      // Nothing saved: ADD never got far, or DEL already ran. Clean up with the current config if we can.
      const env = await readSubnetEnv(cfg.subnetFile).catch(() => undefined);
      if (!env) return;
      conf = delegateConfig(ctx, env, cfg);
    }
    await ctx.delegate(conf.type as string, 'DEL', conf, ctx);
    await rm(join(cfg.dataDir, ctx.containerId), { force: true });
  },
  async check(ctx): Promise<void> {
    const cfg = loadVxlanConfig(ctx);
    const conf = await loadDelegate(cfg.dataDir, ctx.containerId);
    if (!conf)
      throw new CniError(
        CniErrorCode.InvalidNetworkConfig,
        `no saved attachment for container ${ctx.containerId}`,
      );
    await ctx.delegate(conf.type as string, 'CHECK', { ...conf, prevResult: ctx.conf.prevResult }, ctx);
  },
  async status(ctx): Promise<void> {
    const cfg = loadVxlanConfig(ctx);
    await readSubnetEnv(cfg.subnetFile);
  },
};
