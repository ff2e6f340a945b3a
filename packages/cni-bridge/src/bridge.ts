import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { canonicalNetwork, parseCidr } from '@kemu/ip';
import { type CniInterface, CniError, CniErrorCode, type CniPlugin, type CniResult, type CniRoute, type ConfFields, conf, type Datapath, HOST_NETNS, ignoreNotFound, invalidConfig, isDatapathError, type NatRule, type PluginContext, parseResult, requireNetns, validateIfname } from '@kemu/cni';

export interface BridgeConfig {
  bridge: string;
  isGateway: boolean;
  isDefaultGateway: boolean;
  forceAddress: boolean;
  ipMasq: boolean;
  mtu: number;
  hairpinMode: boolean;
  promiscMode: boolean;
  ipamType?: string;
}

/** The reference bridge's config fields: keys that name one in another case are read as it reads them. */
export const BRIDGE_FIELDS: ConfFields = {
  bridge: true,
  isGateway: true,
  isDefaultGateway: true,
  forceAddress: true,
  ipMasq: true,
  mtu: true,
  hairpinMode: true,
  promiscMode: true,
  vlan: true,
  vlanTrunk: true,
  preserveDefaultVlan: true,
  macspoofchk: true,
  enabledad: true,
  runtimeConfig: { mac: true },
};

/** Fields the reference bridge accepts that this implementation does not program (yet): refused, not ignored. */
const UNSUPPORTED = ['vlan', 'vlanTrunk', 'macspoofchk', 'preserveDefaultVlan', 'enabledad'] as const;

export function loadBridgeConfig(ctx: PluginContext): BridgeConfig {
  const c = ctx.conf as Record<string, unknown>;
  for (const key of UNSUPPORTED) {
    const v = c[key];
    if (v !== undefined && v !== null && v !== false && v !== 0 && !(Array.isArray(v) && v.length === 0)) {
      throw new CniError(CniErrorCode.UnsupportedField, `"${key}" is not supported by kemu-bridge`);
    }
  }
  const bridge = conf.str(c, 'bridge', 'cni0')!;
  const bad = validateIfname(bridge);
  if (bad) throw invalidConfig(`"bridge": ${bad}`);
  const isDefaultGateway = conf.bool(c, 'isDefaultGateway');
  if (conf.bool(c, 'hairpinMode') && conf.bool(c, 'promiscMode')) {
    throw invalidConfig('cannot set "hairpinMode" and "promiscMode" at the same time');
  }
  const ipam = conf.obj(c, 'ipam');
  const ipamType = ipam ? conf.str(ipam, 'type') : undefined;
  return {
    bridge,
    isDefaultGateway,
    isGateway: conf.bool(c, 'isGateway') || isDefaultGateway,
    forceAddress: conf.bool(c, 'forceAddress'),
    ipMasq: conf.bool(c, 'ipMasq'),
    mtu: conf.int(c, 'mtu', 68, 65535, 1500)!,
    hairpinMode: conf.bool(c, 'hairpinMode'),
    promiscMode: conf.bool(c, 'promiscMode'),
    ipamType,
  };
}

/**
 * A stable host-side name: DEL can find it even when the container netns is gone. 11 hex digits (44 bits,
 * the most IFNAMSIZ allows after "veth") keep collisions unlikely even with tens of thousands of pods.
 */
export function hostVethName(network: string, containerId: string, ifname: string): string {
  // SHA-256 in JavaScript: node:crypto would initialise OpenSSL, about 6 ms of every plugin start.
  return `veth${bytesToHex(sha256(utf8ToBytes(`${network}\0${containerId}\0${ifname}`))).slice(0, 11)}`;
}

const natOwner = (ctx: PluginContext): string => `bridge ${ctx.conf.name} ${ctx.containerId}`;

async function ensureBridge(dp: Datapath, cfg: BridgeConfig): Promise<void> {
  const existing = await dp.getLink(HOST_NETNS, cfg.bridge);
  if (existing && existing.kind !== 'bridge') {
    throw invalidConfig(`"bridge": ${JSON.stringify(cfg.bridge)} already exists but is not a bridge`);
  }
  if (!existing) {
    try {
      await dp.addLink(HOST_NETNS, { kind: 'bridge', name: cfg.bridge, mtu: cfg.mtu });
    } catch (e) {
      // A concurrent ADD may have created it first.
      if (!isDatapathError(e, 'EEXIST')) throw e;
    }
  }
  if (cfg.promiscMode) await dp.setLink(HOST_NETNS, cfg.bridge, { promisc: true });
  if (!existing?.up) await dp.setLink(HOST_NETNS, cfg.bridge, { up: true });
}

async function ensureBridgeAddr(dp: Datapath, cfg: BridgeConfig, gwCidr: string): Promise<void> {
  const want = parseCidr(gwCidr)!;
  const addrs = await dp.listAddrs(HOST_NETNS, cfg.bridge);
  for (const a of addrs) {
    if (a.cidr === gwCidr) return;
    const have = parseCidr(a.cidr)!;
    if (have.family !== want.family || a.scope === 'link') continue;
    if (canonicalNetwork(have) === canonicalNetwork(want) || have.family === want.family) {
      if (canonicalNetwork(have) !== canonicalNetwork(want)) continue;
      if (!cfg.forceAddress) {
        throw new CniError(
          CniErrorCode.InvalidNetworkConfig,
          `"${cfg.bridge}" already has an IP address different from ${gwCidr} (set "forceAddress" to replace it)`,
        );
      }
      await dp.delAddr(HOST_NETNS, cfg.bridge, a.cidr);
    }
  }
  try {
    await dp.addAddr(HOST_NETNS, cfg.bridge, gwCidr);
  } catch (e) {
    if (!isDatapathError(e, 'EEXIST')) throw e;
  }
}

function ipamConf(ctx: PluginContext): Record<string, unknown> {
  // The IPAM plugin gets the whole network config, like the reference bridge passes its stdin through.
  const { prevResult: _p, ...rest } = ctx.conf;
  return rest;
}

export const bridge: CniPlugin = {
  name: 'kemu-bridge',
  confFields: BRIDGE_FIELDS,

  async add(ctx) {
    const cfg = loadBridgeConfig(ctx);
    // Without an IPAM type the bridge works at layer 2 only, as the reference does: links, no addresses.
    const ipamType = cfg.ipamType;
    const dp = await ctx.datapath();
    await requireNetns(dp, ctx.netns);
    if (await dp.getLink(ctx.netns, ctx.ifname)) {
      throw new CniError(CniErrorCode.Datapath, `container veth name "${ctx.ifname}" already exists`, 'EEXIST');
    }
    await ensureBridge(dp, cfg);
    const hostVeth = hostVethName(ctx.conf.name, ctx.containerId, ctx.ifname);
    let ipamDone = false;
    let vethDone = false;
    try {
      await dp.addLink(HOST_NETNS, {
        kind: 'veth',
        name: hostVeth,
        mtu: cfg.mtu,
        peer: { name: ctx.ifname, netns: ctx.netns },
      });
      vethDone = true;
      await dp.setLink(HOST_NETNS, hostVeth, { master: cfg.bridge, up: true });
      if (cfg.hairpinMode) await dp.setLink(HOST_NETNS, hostVeth, { hairpin: true });

      let r: CniResult = { cniVersion: ctx.version, ips: [] };
      if (ipamType) {
        const ipamRes = await ctx.delegate(ipamType, 'ADD', ipamConf(ctx), ctx);
        ipamDone = true;
        r = parseResult(ipamRes ?? { cniVersion: ctx.version });
        if (!r.ips || r.ips.length === 0) throw new CniError(CniErrorCode.Internal, 'IPAM plugin returned missing IP config');
      }
      const ips = r.ips ?? [];

      const routes: CniRoute[] = [...(r.routes ?? [])];
      const gws = new Map<4 | 6, string>();
      for (const ip of ips) {
        ip.interface = 2;
        const fam = ip.address.includes(':') ? 6 : 4;
        if (ip.gateway && !gws.has(fam)) gws.set(fam, ip.gateway);
      }
      if (cfg.isDefaultGateway) {
        for (const [fam, gw] of gws) {
          const dst = fam === 4 ? '0.0.0.0/0' : '::/0';
          if (!routes.some((rt) => rt.dst === dst)) routes.push({ dst, gw });
        }
      }

      // Container side: addresses, link up, routes (a route without gw goes via the family's gateway).
      const c = ctx.netns;
      for (const ip of ips) await dp.addAddr(c, ctx.ifname, ip.address);
      await dp.setLink(c, ctx.ifname, { up: true });
      for (const rt of routes) {
        const fam = rt.dst.includes(':') ? 6 : 4;
        const via = rt.gw ?? gws.get(fam);
        await dp.addRoute(c, { dst: rt.dst, via, dev: ctx.ifname });
      }

      if (cfg.isGateway) {
        for (const ip of ips) {
          if (!ip.gateway) continue;
          const prefix = ip.address.slice(ip.address.indexOf('/'));
          await ensureBridgeAddr(dp, cfg, `${ip.gateway}${prefix}`);
          const fam = ip.address.includes(':') ? 6 : 4;
          const key = fam === 4 ? 'net.ipv4.ip_forward' : 'net.ipv6.conf.all.forwarding';
          // Read first: writing a forwarding sysctl resets per-interface settings in the kernel.
          if ((await dp.getSysctl(HOST_NETNS, key)) !== '1') await dp.setSysctl(HOST_NETNS, key, '1');
        }
      }
      if (cfg.ipMasq && ips.length > 0) {
        const rules: NatRule[] = ips.map((ip) => {
          const net = canonicalNetwork(parseCidr(ip.address)!);
          const v6 = ip.address.includes(':');
          const addr = ip.address.slice(0, ip.address.indexOf('/'));
          return {
            kind: 'masquerade',
            owner: natOwner(ctx),
            src: `${addr}/${v6 ? 128 : 32}`,
            excludeDst: [net, v6 ? 'ff00::/8' : '224.0.0.0/4'],
            comment: `name: "${ctx.conf.name}" id: "${ctx.containerId}"`,
          };
        });
        await dp.addNatRules(HOST_NETNS, rules);
      }

      const br = await dp.getLink(HOST_NETNS, cfg.bridge);
      const hv = await dp.getLink(HOST_NETNS, hostVeth);
      const cv = await dp.getLink(c, ctx.ifname);
      const interfaces: CniInterface[] = [
        { name: cfg.bridge, mac: br?.mac },
        { name: hostVeth, mac: hv?.mac },
        { name: ctx.ifname, mac: cv?.mac, sandbox: ctx.netns },
      ];
      const result: CniResult = { cniVersion: ctx.version, interfaces, dns: ctx.conf.dns ?? {} };
      if (ipamType) result.ips = ips;
      if (routes.length > 0) result.routes = routes;
      return result;
    } catch (e) {
      // Leave nothing behind: the address goes back to IPAM, the veth pair and NAT rules go away.
      if (ipamDone && ipamType) await ctx.delegate(ipamType, 'DEL', ipamConf(ctx), ctx).catch(() => undefined);
      if (vethDone) await ignoreNotFound(() => dp.delLink(HOST_NETNS, hostVeth)).catch(() => undefined);
      if (cfg.ipMasq) await dp.delNatRules(HOST_NETNS, natOwner(ctx)).catch(() => undefined);
      throw e;
    }
  },

  async del(ctx) {
    const cfg = loadBridgeConfig(ctx);
    if (cfg.ipamType) await ctx.delegate(cfg.ipamType, 'DEL', ipamConf(ctx), ctx);
    const dp = await ctx.datapath();
    // The container netns may be gone already (DEL must still succeed); the host end has a stable name.
    if (ctx.netns && (await dp.netnsExists(ctx.netns))) await ignoreNotFound(() => dp.delLink(ctx.netns, ctx.ifname));
    await ignoreNotFound(() => dp.delLink(HOST_NETNS, hostVethName(ctx.conf.name, ctx.containerId, ctx.ifname)));
    if (cfg.ipMasq) {
      // The ADD masqueraded the addresses of its result: given that result, DEL reads only their families.
      const families = ctx.prevResult
        ? [...new Set((ctx.prevResult.ips ?? []).map((ip) => (ip.address.includes(':') ? 6 : 4) as 4 | 6))]
        : undefined;
      await dp.delNatRules(HOST_NETNS, natOwner(ctx), { families });
    }
  },

  async check(ctx) {
    const cfg = loadBridgeConfig(ctx);
    if (!ctx.prevResult) throw new CniError(CniErrorCode.InvalidNetworkConfig, 'CHECK requires "prevResult"');
    if (cfg.ipamType) await ctx.delegate(cfg.ipamType, 'CHECK', ipamConf(ctx), ctx);
    const dp = await ctx.datapath();
    const br = await dp.getLink(HOST_NETNS, cfg.bridge);
    if (br?.kind !== 'bridge') throw new CniError(CniErrorCode.CheckFailed, `bridge ${cfg.bridge} not found`);
    const cv = await dp.getLink(ctx.netns, ctx.ifname);
    if (!cv) throw new CniError(CniErrorCode.CheckFailed, `interface ${ctx.ifname} not found in ${ctx.netns}`);
    const hv = await dp.getLink(HOST_NETNS, hostVethName(ctx.conf.name, ctx.containerId, ctx.ifname));
    if (!hv || hv.master !== cfg.bridge) {
      throw new CniError(CniErrorCode.CheckFailed, `host veth of ${ctx.ifname} is not attached to ${cfg.bridge}`);
    }
    const have = new Set((await dp.listAddrs(ctx.netns, ctx.ifname)).map((a) => a.cidr));
    for (const ip of ctx.prevResult.ips ?? []) {
      if (!have.has(ip.address)) throw new CniError(CniErrorCode.CheckFailed, `address ${ip.address} missing on ${ctx.ifname}`);
    }
    const routes = await dp.listRoutes(ctx.netns, { dev: ctx.ifname });
    for (const rt of ctx.prevResult.routes ?? []) {
      if (!routes.some((x) => x.dst === rt.dst && (!rt.gw || x.via === rt.gw))) {
        throw new CniError(CniErrorCode.CheckFailed, `route ${rt.dst} missing in ${ctx.netns}`);
      }
    }
  },

  async status(ctx) {
    const cfg = loadBridgeConfig(ctx);
    if (cfg.ipamType) await ctx.delegate(cfg.ipamType, 'STATUS', ipamConf(ctx), ctx);
  },

  async gc(ctx) {
    const cfg = loadBridgeConfig(ctx);
    if (cfg.ipamType) await ctx.delegate(cfg.ipamType, 'GC', ipamConf(ctx), ctx);
  },
};
