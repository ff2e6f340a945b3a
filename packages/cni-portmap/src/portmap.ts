import { canonicalNetwork, contains, parseCidr, parseIP } from '@kemu/ip';
import { CniError, CniErrorCode, type CniPlugin, type ConfFields, conf, type Datapath, type DnatRule, HOST_NETNS, invalidConfig, type PluginContext } from '@kemu/cni';

export interface PortMapping {
  hostPort: number;
  containerPort: number;
  protocol: 'tcp' | 'udp' | 'sctp';
  hostIP?: string;
}

type Condition = NonNullable<DnatRule['conditions']>[number];

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** The reference portmap's config and capability fields (runtimes spell them in more than one case). */
export const PORTMAP_FIELDS: ConfFields = {
  snat: true,
  conditionsV4: true,
  conditionsV6: true,
  masqAll: true,
  markMasqBit: true,
  externalSetMarkChain: true,
  runtimeConfig: { portMappings: [{ hostPort: true, containerPort: true, protocol: true, hostIP: true }] },
};

export function parsePortMappings(ctx: PluginContext): PortMapping[] {
  const rc = ctx.conf.runtimeConfig;
  const raw = isObj(rc) ? rc.portMappings : undefined;
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw invalidConfig('"runtimeConfig.portMappings" must be a list');
  return raw.map((m: unknown, i) => {
    const where = `"runtimeConfig.portMappings"[${i}]`;
    if (!isObj(m)) throw invalidConfig(`${where} must be an object`);
    const hostPort = conf.int(m, 'hostPort', 1, 65535);
    const containerPort = conf.int(m, 'containerPort', 1, 65535);
    if (hostPort === undefined) throw invalidConfig(`${where}: missing "hostPort"`);
    if (containerPort === undefined) throw invalidConfig(`${where}: missing "containerPort"`);
    const protocol = (conf.str(m, 'protocol', 'tcp') ?? 'tcp').toLowerCase();
    if (protocol !== 'tcp' && protocol !== 'udp' && protocol !== 'sctp') {
      throw invalidConfig(`${where}: unknown "protocol" ${JSON.stringify(m.protocol)}`);
    }
    const hostIP = conf.str(m, 'hostIP');
    if (hostIP && !parseIP(hostIP)) throw invalidConfig(`${where}: invalid "hostIP" ${JSON.stringify(hostIP)}`);
    const out: PortMapping = { hostPort, containerPort, protocol };
    if (hostIP && hostIP !== '0.0.0.0' && hostIP !== '::') out.hostIP = hostIP;
    return out;
  });
}

/** The reference takes raw iptables match arguments; we accept the structured subset we can model. */
function parseConditions(raw: unknown, key: string): Condition[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw) || !raw.every((x) => typeof x === 'string')) throw invalidConfig(`"${key}" must be a list of strings`);
  const cond: Condition = {};
  const a = raw as string[];
  for (let i = 0; i < a.length; i++) {
    const neg = a[i] === '!';
    const flag = neg ? a[++i] : a[i];
    const val = a[++i];
    if (val === undefined) throw invalidConfig(`"${key}": ${flag} needs a value`);
    if (!neg && (flag === '-s' || flag === '--source') && parseCidr(val.includes('/') ? val : `${val}/32`)) cond.srcCidr = val;
    else if (!neg && (flag === '-i' || flag === '--in-interface')) cond.iif = val;
    else if (neg && (flag === '-i' || flag === '--in-interface')) cond.notIif = val;
    else throw new CniError(CniErrorCode.UnsupportedField, `"${key}": match ${neg ? '! ' : ''}${flag} is not supported`);
  }
  return [cond];
}

const owner = (ctx: PluginContext): string => `portmap ${ctx.conf.name} ${ctx.containerId}`;

/** The pod's first address of each family, and its network (what the reference's hairpin rule matches). */
function containerIPs(ctx: PluginContext): { v4?: string; v6?: string; net4?: string; net6?: string } {
  const r = ctx.prevResult!;
  const out: { v4?: string; v6?: string; net4?: string; net6?: string } = {};
  for (const ip of r.ips ?? []) {
    const iface = ip.interface !== undefined ? r.interfaces?.[ip.interface] : undefined;
    if (ip.interface !== undefined && !iface?.sandbox) continue;
    const addr = ip.address.slice(0, ip.address.indexOf('/'));
    const c = parseCidr(ip.address);
    const net = c ? canonicalNetwork(c) : undefined;
    if (addr.includes(':')) {
      if (!out.v6) [out.v6, out.net6] = [addr, net];
    } else if (!out.v4) [out.v4, out.net4] = [addr, net];
  }
  return out;
}

/** The node interface whose route reaches `ip` (longest prefix in the main table), as the kernel would pick it. */
async function routableHostIf(dp: Datapath, ip: string): Promise<string | undefined> {
  const p = parseIP(ip)!;
  let best: { dev: string; prefix: number } | undefined;
  for (const r of await dp.listRoutes(HOST_NETNS, { family: p.family })) {
    if (!r.dev || (r.table !== undefined && r.table !== 254) || (r.type !== undefined && r.type !== 'unicast')) continue;
    const c = parseCidr(r.dst);
    if (c && contains(c, p.family, p.value) && (!best || c.prefix > best.prefix)) best = { dev: r.dev, prefix: c.prefix };
  }
  return best?.dev;
}

/**
 * Lets 127.0.0.1 cross into the pod network: DNAT rewrites only the destination of a node-local connection
 * to 127.0.0.1:hostPort, and the kernel drops a packet with a 127/8 source routed out of any interface
 * without `route_localnet` (the reference sets it on the same interface; the SNAT rule replaces the source).
 */
async function enableLocalnetRouting(dp: Datapath, podIP: string): Promise<void> {
  const dev = await routableHostIf(dp, podIP);
  if (!dev) return;
  // The slash form keeps an interface name with a dot (eth0.100) in one path segment.
  const key = dev.includes('.') ? `net/ipv4/conf/${dev}/route_localnet` : `net.ipv4.conf.${dev}.route_localnet`;
  if ((await dp.getSysctl(HOST_NETNS, key)) !== '1') await dp.setSysctl(HOST_NETNS, key, '1');
}

export const portmap: CniPlugin = {
  name: 'kemu-portmap',
  confFields: PORTMAP_FIELDS,

  async add(ctx) {
    if (!ctx.prevResult) {
      throw invalidConfig('must be called as chained plugin: missing "prevResult"');
    }
    const c = ctx.conf as Record<string, unknown>;
    const snat = conf.bool(c, 'snat', true);
    for (const key of ['markMasqBit', 'externalSetMarkChain', 'masqAll'] as const) {
      if (c[key] !== undefined && c[key] !== null && c[key] !== false) {
        throw new CniError(CniErrorCode.UnsupportedField, `"${key}" is not supported by kemu-portmap`);
      }
    }
    const condV4 = parseConditions(c.conditionsV4, 'conditionsV4');
    const condV6 = parseConditions(c.conditionsV6, 'conditionsV6');
    const mappings = parsePortMappings(ctx);
    if (mappings.length === 0) return ctx.prevResult;
    const ips = containerIPs(ctx);
    if (!ips.v4 && !ips.v6) throw invalidConfig('"prevResult" has no container IP to forward to');
    const rules: DnatRule[] = [];
    for (const m of mappings) {
      for (const [fam, toIP] of [
        [4, ips.v4],
        [6, ips.v6],
      ] as const) {
        if (!toIP) continue;
        if (m.hostIP && (m.hostIP.includes(':') ? 6 : 4) !== fam) continue;
        const rule: DnatRule = {
          kind: 'dnat',
          owner: owner(ctx),
          protocol: m.protocol,
          hostPort: m.hostPort,
          toIP,
          toPort: m.containerPort,
          snat,
        };
        const net = fam === 4 ? ips.net4 : ips.net6;
        if (snat && net) rule.masqSrc = net;
        if (m.hostIP) rule.hostIP = m.hostIP;
        const cond = fam === 4 ? condV4 : condV6;
        if (cond) rule.conditions = cond;
        rules.push(rule);
      }
    }
    const dp = await ctx.datapath();
    try {
      await dp.addNatRules(HOST_NETNS, rules);
      if (snat && ips.v4) await enableLocalnetRouting(dp, ips.v4);
    } catch (e) {
      await dp.delNatRules(HOST_NETNS, owner(ctx)).catch(() => undefined);
      throw e;
    }
    return ctx.prevResult;
  },

  async del(ctx) {
    const dp = await ctx.datapath();
    // The ADD forwarded to the pod addresses of its prevResult: given it, DEL reads only their families.
    let families: (4 | 6)[] | undefined;
    if (ctx.prevResult) {
      const ips = containerIPs(ctx);
      families = [...(ips.v4 ? [4 as const] : []), ...(ips.v6 ? [6 as const] : [])];
    }
    await dp.delNatRules(HOST_NETNS, owner(ctx), { families });
  },

  async check(ctx) {
    if (!ctx.prevResult) throw invalidConfig('must be called as chained plugin: missing "prevResult"');
    const mappings = parsePortMappings(ctx);
    if (mappings.length === 0) return;
    const dp = await ctx.datapath();
    const have = await dp.listNatRules(HOST_NETNS, owner(ctx));
    for (const m of mappings) {
      if (!have.some((r) => r.kind === 'dnat' && r.hostPort === m.hostPort && r.protocol === m.protocol)) {
        throw new CniError(CniErrorCode.CheckFailed, `port mapping ${m.protocol}/${m.hostPort} is not installed`);
      }
    }
  },
};
