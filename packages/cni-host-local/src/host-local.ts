import { broadcastOf, type Cidr, contains, formatIP, networkOf, parseCidr, parseIP } from '@kemu/ip';
import { type CniDNS, CniError, CniErrorCode, type CniIPConfig, type CniPlugin, type CniResult, type CniRoute, type ConfFields, invalidConfig, type PluginContext, READ_LIMITS, readTextBounded } from '@kemu/cni';
import { type IpamStore, type IpamStoreProvider, LINE_BREAK } from './store.js';
import { DiskStore } from './store-disk.js';
import { MemoryIpam } from './store-memory.js';

export const DEFAULT_DATA_DIR = '/var/lib/cni/networks';

export interface Range {
  family: 4 | 6;
  subnet: Cidr;
  start: bigint;
  end: bigint;
  gateway: bigint;
  /** Whether the gateway was configured explicitly (it is reported in the result either way). */
}

export interface HostLocalConfig {
  network: string;
  dataDir: string;
  rangeSets: Range[][];
  routes: CniRoute[];
  dns?: CniDNS;
  requested: { family: 4 | 6; value: bigint; text: string }[];
}

const RANGE_FIELDS: ConfFields = { subnet: true, rangeStart: true, rangeEnd: true, gateway: true };
/** The reference host-local's config fields: keys that name one in another case are read as it reads them. */
export const HOST_LOCAL_FIELDS: ConfFields = {
  ipam: {
    ...RANGE_FIELDS,
    routes: [{ dst: true, gw: true }],
    dataDir: true,
    resolvConf: true,
    ranges: [[RANGE_FIELDS]],
  },
  runtimeConfig: { ipRanges: [[RANGE_FIELDS]], ips: true },
  args: { cni: { ips: true } },
};

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

function parseRange(raw: unknown, where: string): Range {
  if (!isObj(raw)) throw invalidConfig(`${where} must be an object`);
  if (raw.subnet === undefined || raw.subnet === null || raw.subnet === '') throw invalidConfig(`${where}: missing "subnet"`);
  if (typeof raw.subnet !== 'string') throw invalidConfig(`${where}: "subnet" must be a string, got ${JSON.stringify(raw.subnet)}`);
  const subnet = parseCidr(raw.subnet);
  if (!subnet) throw invalidConfig(`${where}: invalid "subnet" ${JSON.stringify(raw.subnet)}`);
  const bits = subnet.family === 4 ? 32 : 128;
  if (subnet.family === 6 && subnet.ip >> 32n === 0xffffn) {
    // The reference refuses these too (Go reads the address as IPv4 and the mask as IPv6).
    throw invalidConfig(`${where}: "subnet" ${raw.subnet} is an IPv4-mapped IPv6 network; write the IPv4 network instead`);
  }
  if (subnet.prefix === 0) {
    throw invalidConfig(`${where}: "subnet" ${raw.subnet} is the whole address space; give the pods' network`);
  }
  if (subnet.prefix > bits - 2) throw invalidConfig(`${where}: network ${raw.subnet} too small to allocate from`);
  const net = networkOf(subnet);
  if (net !== subnet.ip) {
    throw invalidConfig(
      `${where}: "subnet" ${raw.subnet} has host bits set; for a /${subnet.prefix} the network address is ${formatIP(subnet.family, net)}`,
    );
  }
  const ipField = (key: string): bigint | undefined => {
    const v = raw[key];
    if (v === undefined || v === null || v === '') return undefined;
    const p = typeof v === 'string' ? parseIP(v) : undefined;
    if (!p) throw invalidConfig(`${where}: invalid "${key}" ${JSON.stringify(v)}`);
    if (!contains(subnet, p.family, p.value)) throw invalidConfig(`${where}: "${key}" ${v} not in network ${raw.subnet}`);
    return p.value;
  };
  const gateway = ipField('gateway') ?? net + 1n;
  const start = ipField('rangeStart') ?? net + 1n;
  const end = ipField('rangeEnd') ?? (subnet.family === 4 ? broadcastOf(subnet) - 1n : broadcastOf(subnet));
  if (start > end) throw invalidConfig(`${where}: "rangeStart" is after "rangeEnd"`);
  return { family: subnet.family, subnet: { ...subnet, ip: net }, start, end, gateway };
}

function overlaps(a: Range, b: Range): boolean {
  return a.family === b.family && a.start <= b.end && b.start <= a.end;
}

function parseRequested(ctx: PluginContext, ipam: Record<string, unknown>): HostLocalConfig['requested'] {
  const texts: string[] = [];
  const argIP = ctx.args.get('IP');
  if (argIP) texts.push(...argIP.split(','));
  const cniArgs = isObj(ctx.conf.args) && isObj(ctx.conf.args.cni) ? ctx.conf.args.cni : undefined;
  if (cniArgs && Array.isArray(cniArgs.ips)) texts.push(...cniArgs.ips.map(String));
  const rc = ctx.conf.runtimeConfig;
  if (isObj(rc) && Array.isArray(rc.ips)) texts.push(...rc.ips.map(String));
  void ipam;
  return texts.map((t) => {
    const s = t.includes('/') ? t.slice(0, t.indexOf('/')) : t;
    const p = parseIP(s.trim());
    if (!p) throw new CniError(CniErrorCode.InvalidNetworkConfig, `invalid requested IP ${JSON.stringify(t)} ("ips")`);
    return { ...p, text: s.trim() };
  });
}

function parseResolvConf(text: string): CniDNS {
  const dns: CniDNS = {};
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (!f[0] || f[0].startsWith('#')) continue;
    if (f[0] === 'nameserver' && f[1]) dns.nameservers = [...(dns.nameservers ?? []), f[1]];
    else if (f[0] === 'domain' && f[1]) dns.domain = f[1];
    else if (f[0] === 'search') dns.search = f.slice(1);
    else if (f[0] === 'options') dns.options = [...(dns.options ?? []), ...f.slice(1)];
  }
  return dns;
}

export async function loadConfig(ctx: PluginContext): Promise<HostLocalConfig> {
  const ipam = ctx.conf.ipam;
  if (!isObj(ipam)) throw invalidConfig('missing "ipam" section');
  let rawSets: unknown = ipam.ranges;
  const rc = ctx.conf.runtimeConfig;
  if (isObj(rc) && Array.isArray(rc.ipRanges) && rc.ipRanges.length > 0) rawSets = rc.ipRanges;
  if (rawSets === undefined && ipam.subnet !== undefined) {
    rawSets = [[{ subnet: ipam.subnet, rangeStart: ipam.rangeStart, rangeEnd: ipam.rangeEnd, gateway: ipam.gateway }]];
  }
  if (rawSets !== undefined && !Array.isArray(rawSets)) {
    throw invalidConfig(`ipam "ranges" must be a list of range sets, got ${JSON.stringify(rawSets)}`);
  }
  if (!Array.isArray(rawSets) || rawSets.length === 0) {
    throw invalidConfig('ipam: no IP ranges specified ("ranges" or "subnet")');
  }
  const rangeSets = rawSets.map((set, i) => {
    if (!Array.isArray(set) || set.length === 0) throw invalidConfig(`ipam "ranges"[${i}] must be a non-empty list`);
    const ranges = set.map((r, j) => parseRange(r, `ipam "ranges"[${i}][${j}]`));
    for (let a = 0; a < ranges.length; a++) {
      if (ranges[a]!.family !== ranges[0]!.family) throw invalidConfig(`ipam "ranges"[${i}] mixes IPv4 and IPv6`);
      for (let b = a + 1; b < ranges.length; b++) {
        if (overlaps(ranges[a]!, ranges[b]!)) throw invalidConfig(`ipam "ranges"[${i}]: ranges ${a} and ${b} overlap`);
      }
    }
    return ranges;
  });
  for (let a = 0; a < rangeSets.length; a++) {
    for (let b = a + 1; b < rangeSets.length; b++) {
      if (rangeSets[a]!.some((x) => rangeSets[b]!.some((y) => overlaps(x, y)))) {
        throw invalidConfig(`ipam "ranges": range sets ${a} and ${b} overlap`);
      }
    }
  }
  const routes: CniRoute[] = [];
  if (ipam.routes !== undefined) {
    if (!Array.isArray(ipam.routes)) throw invalidConfig('ipam "routes" must be a list');
    for (const [i, r] of ipam.routes.entries()) {
      if (!isObj(r) || typeof r.dst !== 'string' || !parseCidr(r.dst)) {
        throw invalidConfig(`ipam "routes"[${i}]: invalid "dst"`);
      }
      if (r.gw !== undefined && (typeof r.gw !== 'string' || !parseIP(r.gw))) {
        throw invalidConfig(`ipam "routes"[${i}]: invalid "gw"`);
      }
      routes.push(r.gw !== undefined ? { dst: r.dst, gw: r.gw as string } : { dst: r.dst });
    }
  }
  if (ipam.dataDir !== undefined && (typeof ipam.dataDir !== 'string' || !ipam.dataDir.startsWith('/'))) {
    throw invalidConfig('ipam "dataDir" must be an absolute path');
  }
  let dns: CniDNS | undefined;
  if (typeof ipam.resolvConf === 'string' && ipam.resolvConf) {
    dns = parseResolvConf(
      readTextBounded(ipam.resolvConf, {
        what: 'ipam "resolvConf"',
        maxBytes: READ_LIMITS.small,
        badFileCode: CniErrorCode.InvalidNetworkConfig,
      }),
    );
  }
  return {
    network: ctx.conf.name,
    dataDir: (ipam.dataDir as string | undefined) ?? DEFAULT_DATA_DIR,
    rangeSets,
    routes,
    dns,
    requested: parseRequested(ctx, ipam),
  };
}

function rangeSetToString(set: Range[]): string {
  return set.map((r) => `${formatIP(r.family, r.start)}-${formatIP(r.family, r.end)}`).join(',');
}

/** Candidate addresses of one range set, starting after the last reserved one and wrapping once. */
function* candidates(set: Range[], last: bigint | undefined): Generator<{ range: Range; ip: bigint }> {
  let startRange = 0;
  let startIp = set[0]!.start;
  if (last !== undefined) {
    const i = set.findIndex((r) => last >= r.start && last <= r.end);
    if (i >= 0) {
      if (last < set[i]!.end) {
        startRange = i;
        startIp = last + 1n;
      } else {
        startRange = (i + 1) % set.length;
        startIp = set[startRange]!.start;
      }
    }
  }
  // First pass from the start point to the end of the set, then from the beginning up to the start point.
  for (let k = 0; k <= set.length; k++) {
    const ri = (startRange + k) % set.length;
    const r = set[ri]!;
    const from = k === 0 ? startIp : r.start;
    const to = k === set.length ? startIp - 1n : r.end;
    for (let ip = from; ip <= to; ip++) if (ip !== r.gateway) yield { range: r, ip };
  }
}

async function allocate(ctx: PluginContext, cfg: HostLocalConfig, store: IpamStore): Promise<CniResult> {
  const id = ctx.containerId;
  const ifname = ctx.ifname;
  const ips: CniIPConfig[] = [];
  const taken: string[] = [];
  const requested = [...cfg.requested];
  // Only our index is consulted here: a directory scan per ADD is exactly the cost this store avoids.
  const already = await store.indexedByID(id, ifname);
  try {
    for (const [si, set] of cfg.rangeSets.entries()) {
      for (const ip of already) {
        const p = parseIP(ip)!;
        if (set.some((r) => p.family === r.family && p.value >= r.start && p.value <= r.end)) {
          throw new CniError(
            CniErrorCode.AddressUnavailable,
            `${ip} has been allocated to ${id}, duplicate allocation is not allowed`,
          );
        }
      }
      const reqIdx = requested.findIndex((q) => set.some((r) => r.family === q.family && q.value >= r.start && q.value <= r.end));
      let got: { range: Range; ip: bigint } | undefined;
      if (reqIdx >= 0) {
        const q = requested.splice(reqIdx, 1)[0]!;
        const range = set.find((r) => r.family === q.family && q.value >= r.start && q.value <= r.end)!;
        if (q.value === range.gateway) {
          throw new CniError(CniErrorCode.AddressUnavailable, `requested ip ${q.text} is subnet's gateway`);
        }
        if (!(await store.reserve(id, ifname, formatIP(q.family, q.value), si))) {
          throw new CniError(
            CniErrorCode.AddressUnavailable,
            `requested IP address ${q.text} is not available in range set ${rangeSetToString(set)}`,
          );
        }
        got = { range, ip: q.value };
      } else {
        const lastText = await store.lastReserved(si);
        const last = lastText ? parseIP(lastText) : undefined;
        const lastVal = last && last.family === set[0]!.family ? last.value : undefined;
        for (const c of candidates(set, lastVal)) {
          if (await store.reserve(id, ifname, formatIP(c.range.family, c.ip), si)) {
            got = c;
            break;
          }
        }
        if (!got) {
          throw new CniError(
            CniErrorCode.NoAddressAvailable,
            `no IP addresses available in range set: ${rangeSetToString(set)}`,
          );
        }
      }
      const text = formatIP(got.range.family, got.ip);
      taken.push(text);
      ips.push({
        address: `${text}/${got.range.subnet.prefix}`,
        gateway: formatIP(got.range.family, got.range.gateway),
      });
    }
    if (requested.length > 0) {
      throw new CniError(
        CniErrorCode.AddressUnavailable,
        `requested IP ${requested.map((q) => q.text).join(',')} is not in any configured range`,
      );
    }
    await store.indexAdd(id, ifname, taken);
  } catch (e) {
    // Nothing half-done: give back what this call reserved.
    for (const ip of taken) await store.release(ip);
    throw e;
  }
  const result: CniResult = { cniVersion: ctx.version, ips };
  if (cfg.routes.length > 0) result.routes = cfg.routes;
  if (cfg.dns) result.dns = cfg.dns;
  return result;
}

export interface HostLocalOptions {
  /**
   * Where allocations live. `disk` (default): the reference layout under the config's dataDir, shareable
   * with the reference plugin and with other processes. `memory`: a private in-memory store per dataDir
   * and network, for one process that owns the node's IPAM (nothing else may use that dataDir). A
   * `MemoryIpam` shares its stores between plugin instances and lets the caller inspect them; a function
   * supplies any other store.
   */
  store?: 'disk' | 'memory' | MemoryIpam | IpamStoreProvider;
}

/** A host-local plugin object with the given store; `hostLocal` is the disk-backed one the executable runs. */
export function createHostLocal(opts: HostLocalOptions = {}): CniPlugin {
  const choice = opts.store ?? 'disk';
  let open: IpamStoreProvider;
  if (choice === 'disk') open = (dataDir, network) => new DiskStore(dataDir, network);
  else if (choice === 'memory' || choice instanceof MemoryIpam) {
    const mem = choice === 'memory' ? new MemoryIpam() : choice;
    open = (dataDir, network) => mem.open(dataDir, network);
  } else if (typeof choice === 'function') open = choice;
  else throw new TypeError(`createHostLocal: unknown store ${JSON.stringify(choice)}`);
  return {
    name: 'kemu-host-local',
    confFields: HOST_LOCAL_FIELDS,

    async add(ctx) {
      const cfg = await loadConfig(ctx);
      const store = open(cfg.dataDir, cfg.network);
      await store.init();
      return store.lock(() => allocate(ctx, cfg, store));
    },

    async del(ctx) {
      const cfg = await loadConfig(ctx);
      const store = open(cfg.dataDir, cfg.network);
      await store.init();
      await store.lock(() => store.releaseByID(ctx.containerId, ctx.ifname));
    },

    async check(ctx) {
      const cfg = await loadConfig(ctx);
      const store = open(cfg.dataDir, cfg.network);
      const held = await store.getByID(ctx.containerId, ctx.ifname);
      if (held.length === 0) {
        throw new CniError(
          CniErrorCode.CheckFailed,
          `host-local: failed to find address for container ${ctx.containerId} ifname ${ctx.ifname}`,
        );
      }
    },

    async status(ctx) {
      const cfg = await loadConfig(ctx);
      const store = open(cfg.dataDir, cfg.network);
      try {
        await store.init();
      } catch (e) {
        throw new CniError(CniErrorCode.PluginNotAvailable, `dataDir ${cfg.dataDir} is not usable: ${(e as Error).message}`);
      }
      const used = await store.scan();
      for (const [si, set] of cfg.rangeSets.entries()) {
        let size = 0n;
        for (const r of set) size += r.end - r.start + 1n - (r.gateway >= r.start && r.gateway <= r.end ? 1n : 0n);
        const inSet = used.filter((u) => {
          const p = parseIP(u.ip)!;
          return set.some((r) => r.family === p.family && p.value >= r.start && p.value <= r.end);
        }).length;
        if (BigInt(inSet) >= size) {
          throw new CniError(CniErrorCode.PluginNotAvailable, `range set ${si} (${rangeSetToString(set)}) is exhausted`);
        }
      }
    },

    async gc(ctx) {
      const cfg = await loadConfig(ctx);
      const store = open(cfg.dataDir, cfg.network);
      await store.init();
      const valid = new Set((ctx.validAttachments ?? []).map((a) => `${a.containerID}${LINE_BREAK}${a.ifname}`));
      const validIds = new Set((ctx.validAttachments ?? []).map((a) => a.containerID));
      await store.lock(async () => {
        for (const { ip, content } of await store.scan()) {
          const legacy = !content.includes(LINE_BREAK);
          if (legacy ? !validIds.has(content) : !valid.has(content)) await store.release(ip);
        }
        for (const name of await store.indexEntries()) {
          const at = name.indexOf('@');
          if (!valid.has(`${name.slice(0, at)}${LINE_BREAK}${name.slice(at + 1)}`)) await store.removeIndex(name);
        }
      });
    },
  };
}

export const hostLocal: CniPlugin = createHostLocal();
