import { closeSync, openSync, readFileSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import type * as NL from 'netlink';
import {
  type AddrInfo,
  type Datapath,
  DatapathError,
  type DatapathErrorCode,
  type DatapathOptions,
  type FdbSpec,
  HOST_NETNS,
  isDatapathError,
  type LinkChanges,
  type LinkInfo,
  type LinkKind,
  type LinkSpec,
  type NatRule,
  type NeighSpec,
  type NetnsRef,
  type RouteInfo,
  type RouteSpec,
  type RouteType,
} from './datapath.js';
import { formatIP, mask, parseCidr, parseIP } from '@kemu/ip';

/*
 * How this reaches into other network namespaces: netlink sockets stay bound to the namespace they were
 * created in, so we call setns(2) (through koffi) on the main thread, create the socket, and switch back
 * before yielding to the event loop. Sysctls (/proc/sys/net is resolved per calling task) and the
 * iptables child processes (forked from the main thread) use the same short synchronous switch.
 * No helper process per operation, no shell.
 */

const CLONE_NEWNET = 0x40000000;
const F_CREATE = 0x400;
const F_EXCL = 0x200;
const F_REPLACE = 0x100;
const AF_INET = 2;
const AF_INET6 = 10;
const AF_BRIDGE = 7;
const RTN_TYPES: Record<RouteType, number> = { unicast: 1, local: 2, blackhole: 6, unreachable: 7, prohibit: 8 };
const RTN_NAMES = new Map(Object.entries(RTN_TYPES).map(([k, v]) => [v, k as RouteType]));
/** Route origin tags as iproute2 names them (rt_protos); routes we write default to `boot`, as `ip route add` does. */
const RT_PROTOS: Record<string, number> = {
  redirect: 1,
  kernel: 2,
  boot: 3,
  static: 4,
  zebra: 11,
  bird: 12,
  dhcp: 16,
  bgp: 186,
  isis: 187,
  ospf: 188,
  rip: 189,
};
const RT_PROTO_NAMES = new Map(Object.entries(RT_PROTOS).map(([k, v]) => [v, k]));

const SCOPES = { global: 0, link: 253, host: 254 } as const;
const RTNH_F_ONLINK = 4;
const RTM_NEWLINK = 16;
const RTM_GETLINK = 18;
const NLM_F_DUMP = 0x300;
const IFF_UP = 0x1;
const IFF_LOOPBACK = 0x8;
const IFF_PROMISC = 0x100;
const IFINFOMSG_LEN = 16;
const IFLA = { address: 1, ifname: 3, mtu: 4, link: 5, master: 10, linkinfo: 18 } as const;

/** The part of a link message the datapath reads. */
interface LinkMsg {
  index: number;
  flags: number;
  ifname?: string;
  address?: Buffer;
  mtu?: number;
  link?: number;
  master?: number;
  linkinfo?: Buffer;
}

interface RawRequester {
  request(type: number, data: Buffer[], options: { flags?: number }): Promise<[{ type: number; data: Buffer }[], unknown]>;
}

/**
 * Reads ifinfomsg and the six attributes we use, skipping the rest (statistics, per-family
 * configuration, ...): the netlink package parses every attribute of every link, which costs more than
 * the request itself, above all in a freshly started plugin where that code is still cold.
 */
function parseLinkMsg(b: Buffer): LinkMsg {
  if (b.length < IFINFOMSG_LEN) throw new DatapathError('EIO', `short link message (${b.length} bytes)`);
  const m: LinkMsg = { index: b.readInt32LE(4), flags: b.readUInt32LE(8) };
  for (let off = IFINFOMSG_LEN; off + 4 <= b.length; ) {
    const len = b.readUInt16LE(off);
    if (len < 4 || off + len > b.length) break;
    const type = b.readUInt16LE(off + 2) & 0x3fff;
    const v = b.subarray(off + 4, off + len);
    switch (type) {
      case IFLA.address:
        m.address = Buffer.from(v);
        break;
      case IFLA.ifname: {
        const nul = v.indexOf(0);
        m.ifname = v.toString('utf8', 0, nul < 0 ? v.length : nul);
        break;
      }
      case IFLA.mtu:
        if (v.length >= 4) m.mtu = v.readUInt32LE(0);
        break;
      case IFLA.link:
        if (v.length >= 4) m.link = v.readUInt32LE(0);
        break;
      case IFLA.master:
        if (v.length >= 4) m.master = v.readUInt32LE(0);
        break;
      case IFLA.linkinfo:
        m.linkinfo = Buffer.from(v);
        break;
    }
    off += (len + 3) & ~3;
  }
  return m;
}

/** The parts of the netlink package this datapath uses. */
interface NetlinkModule {
  createRtNetlink: typeof NL.createRtNetlink;
  AttrStream: typeof NL.AttrStream;
  rt: typeof NL.rt;
  ifla: typeof NL.ifla;
}
let nlMod: NetlinkModule | undefined;
// Builtins only some operations need (iptables children) load on first use: every
// module a plugin executable imports up front is paid on each start, VERSION and DEL included.
const lazyRequire = createRequire(import.meta.url);
const childProcess = (): typeof import('node:child_process') => lazyRequire('node:child_process') as typeof import('node:child_process');
let setnsFn: ((fd: number, type: number) => number) | undefined;

/**
 * The package's index also loads its nl80211, generic-netlink and WireGuard modules, about 40% of its
 * load time; a plugin start only needs rtnetlink, so the modules are required one by one.
 */
function loadNetlink(require: NodeJS.Require): NetlinkModule {
  const rtMod = require('netlink/dist/rt/rt.js') as { createRtNetlink: typeof NL.createRtNetlink };
  const structs = require('netlink/dist/structs.js') as { AttrStream: typeof NL.AttrStream };
  return {
    createRtNetlink: rtMod.createRtNetlink,
    AttrStream: structs.AttrStream,
    rt: require('netlink/dist/rt/structs.js') as typeof NL.rt,
    ifla: require('netlink/dist/rt/ifla.js') as typeof NL.ifla,
  };
}

function loadNative(): { nl: NetlinkModule; setns: (fd: number, type: number) => number } {
  const require = createRequire(import.meta.url);
  nlMod ??= loadNetlink(require);
  if (!setnsFn) {
    const koffi = require('koffi') as typeof import('koffi');
    setnsFn = koffi.load('libc.so.6').func('int setns(int fd, int nstype)') as (fd: number, type: number) => number;
  }
  return { nl: nlMod, setns: setnsFn };
}

function errnoOf(e: unknown): DatapathErrorCode {
  const m = /Request rejected: (\w+)/.exec((e as Error)?.message ?? '');
  const code = m?.[1] ?? '';
  switch (code) {
    case 'ENODEV':
    case 'ENOENT':
    case 'ESRCH':
    case 'EADDRNOTAVAIL':
      return 'ENOENT';
    case 'EEXIST':
    case 'ENOTEMPTY':
      return 'EEXIST';
    case 'EINVAL':
    case 'ERANGE':
    case 'ENETUNREACH':
      return 'EINVAL';
    case 'EBUSY':
      return 'EBUSY';
    case 'EPERM':
    case 'EACCES':
      return 'EPERM';
    case 'EOPNOTSUPP':
    case 'ENOTSUP':
      return 'ENOTSUP';
    default:
      return 'EIO';
  }
}

/**
 * One netlink request in flight at a time: the netlink library matches multipart replies loosely, so
 * concurrent dumps could interleave, and a flood can overrun a socket's receive buffer. Each request
 * takes tens of microseconds, so the queue costs little even for many concurrent CNI calls.
 */
let queue: Promise<unknown> = Promise.resolve();

async function nlCall<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const run = queue.then(fn, fn);
  queue = run.catch(() => undefined);
  try {
    return await run;
  } catch (e) {
    if (e instanceof DatapathError) throw e;
    const code = errnoOf(e);
    throw new DatapathError(code, `${what}: ${(e as Error).message.replace('Request rejected: ', '')}`);
  }
}

function ipBuf(ip: string): Buffer {
  const p = parseIP(ip);
  if (!p) throw new DatapathError('EINVAL', `invalid IP address ${ip}`);
  const len = p.family === 4 ? 4 : 16;
  const b = Buffer.alloc(len);
  let v = p.value;
  for (let i = len - 1; i >= 0; i--) {
    b[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return b;
}

function bufIP(b: Buffer): string {
  let v = 0n;
  for (const x of b) v = (v << 8n) | BigInt(x);
  return formatIP(b.length === 4 ? 4 : 6, v);
}

function macBuf(mac: string): Buffer {
  if (!/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i.test(mac)) throw new DatapathError('EINVAL', `invalid MAC address ${mac}`);
  return Buffer.from(mac.split(':').map((h) => Number.parseInt(h, 16)));
}

const bufMac = (b: Buffer | undefined): string => (b ? [...b].map((x) => x.toString(16).padStart(2, '0')).join(':') : '');

function toBuffer(nl: NetlinkModule, data: NL.StreamData): Buffer {
  const s = new nl.AttrStream();
  s.emit(data);
  return Buffer.concat(s.bufs);
}

function cidrParts(cidr: string): { ip: string; prefix: number; family: 4 | 6 } {
  const c = parseCidr(cidr);
  if (!c) throw new DatapathError('EINVAL', `invalid CIDR ${cidr}`);
  return { ip: formatIP(c.family, c.ip), prefix: c.prefix, family: c.family };
}

function familyOf(ip: string): 4 | 6 {
  return ip.includes(':') ? 6 : 4;
}

/** statfs(2) file system types of a network namespace file: nsfs, or procfs for /proc/<pid>/ns/net. */
const NSFS_MAGIC = 0x6e736673;
const PROC_SUPER_MAGIC = 0x9fa0;

interface Resolved {
  /** null: the calling process's own namespace. */
  path: string | null;
  key: string;
}

export class LinuxDatapath implements Datapath {
  readonly kind = 'linux';
  private readonly sockets = new Map<string, NL.RtNetlinkSocket>();
  /** Pod netns path → socket key, so a socket can be released even after the path is gone. */
  private readonly pathKeys = new Map<string, string>();
  private readonly selfIno: string;
  private selfFd: number | undefined;

  constructor(private readonly opts: DatapathOptions = {}) {
    const st = statSync('/proc/self/ns/net');
    this.selfIno = `${st.dev}:${st.ino}`;
  }

  private resolve(netns: NetnsRef): Resolved {
    const path = netns === HOST_NETNS ? (this.opts.hostNetns ?? null) : netns;
    if (path === null) return { path: null, key: 'self' };
    if (!path.startsWith('/') || path.includes('\0')) throw new DatapathError('EINVAL', `invalid netns path ${path}`);
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(path);
    } catch {
      throw new DatapathError('ENOENT', `network namespace ${path} does not exist`);
    }
    // What setns(2) accepts: a bind-mounted namespace (nsfs) or /proc/<pid>/ns/net. Anything else (a device,
    // a directory, a plain file) is refused here with its reason instead of failing later as EPERM.
    const fsType = statfsSync(path).type;
    if (fsType !== NSFS_MAGIC && fsType !== PROC_SUPER_MAGIC) {
      throw new DatapathError('EINVAL', `${path} is not a network namespace (file system type 0x${fsType.toString(16)})`);
    }
    const key = `${st.dev}:${st.ino}`;
    if (key === this.selfIno) return { path: null, key: 'self' };
    return { path, key };
  }

  /** Runs `fn` synchronously with the main thread inside `netns`; never awaits while switched. */
  private inNs<T>(r: Resolved, fn: () => T): T {
    if (r.path === null) return fn();
    const { setns } = loadNative();
    let fd: number;
    try {
      fd = openSync(r.path, 'r');
    } catch {
      throw new DatapathError('ENOENT', `network namespace ${r.path} does not exist`);
    }
    this.selfFd ??= openSync('/proc/self/ns/net', 'r');
    try {
      if (setns(fd, CLONE_NEWNET) !== 0) throw new DatapathError('EPERM', `setns(${r.path}) failed`);
      try {
        return fn();
      } finally {
        if (setns(this.selfFd, CLONE_NEWNET) !== 0) {
          // Staying in a foreign namespace would corrupt every later operation: fail hard.
          process.abort();
        }
      }
    } finally {
      closeSync(fd);
    }
  }

  private sock(netns: NetnsRef): NL.RtNetlinkSocket {
    const r = this.resolve(netns);
    let s = this.sockets.get(r.key);
    if (!s) {
      const { nl } = loadNative();
      s = this.inNs(r, () => nl.createRtNetlink());
      // Socket-level errors (e.g. ENOBUFS) must not escape from the native callback and abort the process.
      s.socket.on('error', () => {});
      this.sockets.set(r.key, s);
      if (r.path !== null && netns !== HOST_NETNS) this.pathKeys.set(netns, r.key);
    }
    return s;
  }

  /**
   * Closes the cached socket of a pod namespace (a socket pins its namespace). Call it when no operation
   * on that namespace is in flight any more, e.g. after the CNI call for the pod returned.
   */
  releaseNetns(netns: NetnsRef): void {
    const key = this.pathKeys.get(netns);
    if (key === undefined) return;
    this.pathKeys.delete(netns);
    // The host namespace may be reachable under the same key: never close it here.
    let hostKey: string | undefined;
    try {
      hostKey = this.resolve(HOST_NETNS).key;
    } catch {
      hostKey = undefined;
    }
    if (key === hostKey || key === 'self' || [...this.pathKeys.values()].includes(key)) return;
    this.sockets.get(key)?.socket.close();
    this.sockets.delete(key);
  }

  async close(): Promise<void> {
    for (const s of this.sockets.values()) s.socket.close();
    this.sockets.clear();
    if (this.selfFd !== undefined) closeSync(this.selfFd);
    this.selfFd = undefined;
  }

  /** Checks the node's namespace (HOST_NETNS) as every operation will; throws ENOENT or EINVAL otherwise. */
  nodeNetnsKey(): string {
    return this.resolve(HOST_NETNS).key;
  }

  async netnsExists(netns: NetnsRef): Promise<boolean> {
    try {
      this.resolve(netns);
      return true;
    } catch (e) {
      if (isDatapathError(e, 'ENOENT')) return false;
      throw e;
    }
  }

  // ----- links

  private linkFromMsg(m: LinkMsg, names: Map<number, string>): LinkInfo {
    const { nl } = loadNative();
    let kind: LinkKind = m.flags & IFF_LOOPBACK ? 'loopback' : 'device';
    let vxlan: LinkInfo['vxlan'];
    if (m.linkinfo) {
      const info = nl.ifla.parseInfo(m.linkinfo);
      if (info.kind === 'bridge' || info.kind === 'veth' || info.kind === 'vxlan' || info.kind === 'dummy') kind = info.kind;
      else if (info.kind) kind = 'other';
      if (info.kind === 'vxlan' && info.data) {
        const v = nl.ifla.parseVxlan(info.data);
        vxlan = {
          vni: v.id ?? 0,
          port: v.port ? v.port.readUInt16BE(0) : undefined,
          local: v.local ? bufIP(v.local) : undefined,
          dev: v.link ? names.get(v.link) : undefined,
          learning: v.learning === undefined ? undefined : v.learning !== 0,
        };
      }
    }
    const out: LinkInfo = {
      name: m.ifname ?? '',
      index: m.index,
      kind,
      mac: bufMac(m.address),
      mtu: m.mtu ?? 0,
      up: !!(m.flags & IFF_UP),
      promisc: !!(m.flags & IFF_PROMISC),
    };
    if (m.master) out.master = names.get(m.master) ?? String(m.master);
    if (kind === 'veth' && m.link !== undefined) out.peerIndex = m.link;
    if (vxlan) out.vxlan = vxlan;
    return out;
  }

  /** RTM_GETLINK (one link by name, or a dump) answered with the few attributes we read. */
  private async getLinkRaw(netns: NetnsRef, what: string, name?: string): Promise<LinkMsg[]> {
    const { nl } = loadNative();
    const s = this.sock(netns);
    const req = [nl.rt.formatLink({}), ...(name ? [toBuffer(nl, nl.ifla.formatLinkAttrs({ ifname: name }))] : [])];
    const [msgs] = await nlCall(what, () =>
      (s.socket as unknown as RawRequester).request(RTM_GETLINK, req, name ? {} : { flags: NLM_F_DUMP }),
    );
    return msgs.filter((m) => m.type === RTM_NEWLINK).map((m) => parseLinkMsg(m.data));
  }

  private linkMsgs(netns: NetnsRef): Promise<LinkMsg[]> {
    return this.getLinkRaw(netns, 'list links');
  }

  private async names(netns: NetnsRef): Promise<Map<number, string>> {
    return new Map((await this.linkMsgs(netns)).map((m) => [m.index, m.ifname ?? '']));
  }

  async listLinks(netns: NetnsRef): Promise<LinkInfo[]> {
    const msgs = await this.linkMsgs(netns);
    const names = new Map(msgs.map((m) => [m.index, m.ifname ?? '']));
    return msgs.map((m) => this.linkFromMsg(m, names));
  }

  private async linkMsg(netns: NetnsRef, name: string): Promise<LinkMsg | undefined> {
    try {
      return (await this.getLinkRaw(netns, `get link ${name}`, name))[0];
    } catch (e) {
      if (e instanceof DatapathError && e.code === 'ENOENT') return undefined;
      throw e;
    }
  }

  async getLink(netns: NetnsRef, name: string): Promise<LinkInfo | undefined> {
    const m = await this.linkMsg(netns, name);
    if (!m) return undefined;
    const names = m.master ? await this.names(netns) : new Map<number, string>();
    return this.linkFromMsg(m, names);
  }

  private async index(netns: NetnsRef, name: string): Promise<number> {
    const m = await this.linkMsg(netns, name);
    if (!m) throw new DatapathError('ENOENT', `link ${name} not found`);
    return m.index;
  }

  async addLink(netns: NetnsRef, spec: LinkSpec): Promise<LinkInfo> {
    const { nl } = loadNative();
    const s = this.sock(netns);
    const attrs: NL.ifla.LinkAttrs = { ifname: spec.name };
    if (spec.mtu) attrs.mtu = spec.mtu;
    if (spec.mac) attrs.address = macBuf(spec.mac);
    let peerFd: number | undefined;
    try {
      if (spec.kind === 'veth') {
        const pr = this.resolve(spec.peer.netns);
        peerFd = openSync(pr.path ?? '/proc/self/ns/net', 'r');
        // txqlen 0 on both ends, as other CNI plugins create veths (visible in `ip link`).
        attrs.txqlen = 0;
        const peerAttrs: NL.ifla.LinkAttrs = { ifname: spec.peer.name, netNsFd: peerFd, txqlen: 0 };
        if (spec.mtu) peerAttrs.mtu = spec.mtu;
        if (spec.peer.mac) peerAttrs.address = macBuf(spec.peer.mac);
        const peer = Buffer.concat([nl.rt.formatLink({}), toBuffer(nl, nl.ifla.formatLinkAttrs(peerAttrs))]);
        attrs.linkinfo = toBuffer(
          nl,
          nl.ifla.formatInfo({ kind: 'veth', data: toBuffer(nl, nl.ifla.formatVethInfo({ peer })) }),
        );
      } else if (spec.kind === 'vxlan') {
        const v: NL.ifla.Vxlan = { id: spec.vxlan.vni, port: Buffer.from([0, 0]) };
        v.port!.writeUInt16BE(spec.vxlan.port ?? 4789, 0);
        if (spec.vxlan.local) {
          if (familyOf(spec.vxlan.local) === 4) v.local = ipBuf(spec.vxlan.local);
          else v.local6 = ipBuf(spec.vxlan.local);
        }
        if (spec.vxlan.dev) v.link = await this.index(netns, spec.vxlan.dev);
        if (spec.vxlan.learning !== undefined) v.learning = spec.vxlan.learning ? 1 : 0;
        attrs.linkinfo = toBuffer(nl, nl.ifla.formatInfo({ kind: 'vxlan', data: toBuffer(nl, nl.ifla.formatVxlan(v)) }));
      } else {
        attrs.linkinfo = toBuffer(nl, nl.ifla.formatInfo({ kind: spec.kind }));
      }
      await nlCall(`add ${spec.kind} ${spec.name}`, () => s.newLink({}, attrs, { flags: F_CREATE | F_EXCL }));
    } finally {
      if (peerFd !== undefined) closeSync(peerFd);
    }
    if (spec.up) await this.setLink(netns, spec.name, { up: true });
    const info = await this.getLink(netns, spec.name);
    if (!info) throw new DatapathError('EIO', `link ${spec.name} vanished after creation`);
    return info;
  }

  async setLink(netns: NetnsRef, name: string, c: LinkChanges): Promise<void> {
    const s = this.sock(netns);
    const index = await this.index(netns, name);
    const attrs: NL.ifla.LinkAttrs = {};
    const data: NL.rt.Link = { index };
    if (c.mtu !== undefined) attrs.mtu = c.mtu;
    if (c.mac !== undefined) attrs.address = macBuf(c.mac);
    if (c.master !== undefined) attrs.master = c.master === null ? 0 : await this.index(netns, c.master);
    if (c.name !== undefined && c.name !== name) attrs.ifname = c.name;
    if (c.promisc !== undefined) {
      data.flags = { ...data.flags, promisc: c.promisc || undefined };
      data.change = { ...data.change, promisc: true };
    }
    if (Object.keys(attrs).length > 0 || data.change) {
      await nlCall(`set link ${name}`, () => s.setLink(data, attrs));
    }
    const current = c.name ?? name;
    if (c.hairpin !== undefined) await this.setHairpin(s, current, index, c.hairpin);
    if (c.up !== undefined) {
      await nlCall(`set link ${current} ${c.up ? 'up' : 'down'}`, () =>
        s.setLink({ index, flags: c.up ? { up: true } : {}, change: { up: true } }),
      );
    }
    if (c.netns !== undefined) {
      const r = this.resolve(c.netns);
      const fd = openSync(r.path ?? '/proc/self/ns/net', 'r');
      try {
        await nlCall(`move link ${current}`, () => s.setLink({ index }, { netNsFd: fd }));
      } finally {
        closeSync(fd);
      }
    }
  }

  /**
   * Bridge port hairpin mode: RTM_SETLINK for AF_BRIDGE with a *nested* IFLA_PROTINFO holding
   * IFLA_BRPORT_MODE (built by hand: a non-nested PROTINFO would be read as an old-style port state).
   */
  private async setHairpin(s: NL.RtNetlinkSocket, name: string, index: number, on: boolean): Promise<void> {
    const { nl } = loadNative();
    const IFLA_PROTINFO = 12;
    const NLA_F_NESTED = 0x8000;
    const IFLA_BRPORT_MODE = 4;
    const inner = Buffer.alloc(8);
    inner.writeUInt16LE(5, 0);
    inner.writeUInt16LE(IFLA_BRPORT_MODE, 2);
    inner.writeUInt8(on ? 1 : 0, 4);
    const outer = Buffer.alloc(4);
    outer.writeUInt16LE(4 + inner.length, 0);
    outer.writeUInt16LE(IFLA_PROTINFO | NLA_F_NESTED, 2);
    const hdr = nl.rt.formatLink({ family: AF_BRIDGE, index });
    const RTM_SETLINK = 19;
    await nlCall(`set hairpin on ${name}`, () => s.request(RTM_SETLINK, [hdr, outer, inner]));
  }

  async delLink(netns: NetnsRef, name: string): Promise<void> {
    const s = this.sock(netns);
    const index = await this.index(netns, name);
    await nlCall(`delete link ${name}`, () => s.delLink({ index }));
  }

  // ----- addresses

  async listAddrs(netns: NetnsRef, link?: string): Promise<AddrInfo[]> {
    const s = this.sock(netns);
    const names = await this.names(netns);
    const msgs = await nlCall('list addresses', () => s.getAddresses());
    const out: AddrInfo[] = [];
    for (const m of msgs) {
      const name = names.get(m.data.index ?? 0) ?? '';
      if (link !== undefined && name !== link) continue;
      const addr = m.attrs.local ?? m.attrs.address;
      if (!addr) continue;
      const scope = m.data.scope === 253 ? 'link' : m.data.scope === 254 ? 'host' : 'global';
      out.push({ link: name, cidr: `${bufIP(addr)}/${m.data.prefixlen}`, family: addr.length === 4 ? 4 : 6, scope });
    }
    return out;
  }

  private addrMsg(index: number, cidr: string): { data: NL.rt.Address; attrs: NL.rt.AddressAttrs } {
    const p = cidrParts(cidr);
    const attrs: NL.rt.AddressAttrs = { local: ipBuf(p.ip), address: ipBuf(p.ip) };
    if (p.family === 4 && p.prefix < 31) {
      // The same broadcast address other netlink clients derive, so `ip addr` output matches theirs.
      const c = parseCidr(cidr)!;
      const bcast = (c.ip & mask(4, p.prefix)) | (0xffffffffn ^ mask(4, p.prefix));
      attrs.broadcast = ipBuf(formatIP(4, bcast));
    }
    return { data: { family: p.family === 4 ? AF_INET : AF_INET6, prefixlen: p.prefix, index }, attrs };
  }

  async addAddr(netns: NetnsRef, link: string, cidr: string): Promise<void> {
    const s = this.sock(netns);
    const m = this.addrMsg(await this.index(netns, link), cidr);
    await nlCall(`add address ${cidr} to ${link}`, () => s.newAddress(m.data, m.attrs, { flags: F_CREATE | F_EXCL }));
  }

  async delAddr(netns: NetnsRef, link: string, cidr: string): Promise<void> {
    const s = this.sock(netns);
    const m = this.addrMsg(await this.index(netns, link), cidr);
    await nlCall(`delete address ${cidr} from ${link}`, () => s.delAddress(m.data, m.attrs));
  }

  // ----- routes

  private async routeMsg(netns: NetnsRef, r: RouteSpec): Promise<{ data: NL.rt.Route; attrs: NL.rt.RouteAttrs }> {
    const dst = cidrParts(r.dst);
    const family = dst.family === 4 ? AF_INET : AF_INET6;
    const table = r.table ?? 254;
    const type = r.type ?? 'unicast';
    const attrs: NL.rt.RouteAttrs = { table };
    if (dst.prefix > 0) attrs.dst = ipBuf(dst.ip);
    if (r.via) attrs.gateway = ipBuf(r.via);
    if (r.dev) attrs.oif = await this.index(netns, r.dev);
    if (r.metric !== undefined) attrs.priority = r.metric;
    if (r.src) attrs.prefsrc = ipBuf(r.src);
    const scope = r.scope !== undefined ? SCOPES[r.scope] : type === 'unicast' && !r.via && r.dev ? SCOPES.link : 0;
    const data: NL.rt.Route = {
      family,
      dstLen: dst.prefix,
      table: table < 256 ? table : 252,
      protocol: (r.protocol !== undefined ? RT_PROTOS[r.protocol] : undefined) ?? RT_PROTOS.boot!,
      scope,
      type: RTN_TYPES[type],
    };
    if (r.onlink) data.flags = { __unknown: RTNH_F_ONLINK } as NL.rt.RouteFlags;
    return { data, attrs };
  }

  async listRoutes(netns: NetnsRef, f?: { table?: number; dev?: string; family?: 4 | 6 }): Promise<RouteInfo[]> {
    const s = this.sock(netns);
    const names = await this.names(netns);
    const msgs = await nlCall('list routes', () =>
      s.getRoutes(f?.family ? { family: f.family === 4 ? AF_INET : AF_INET6 } : undefined),
    );
    const out: RouteInfo[] = [];
    for (const m of msgs) {
      const fam = m.data.family === AF_INET ? 4 : m.data.family === AF_INET6 ? 6 : 0;
      if (fam === 0) continue;
      const table = m.attrs.table ?? m.data.table ?? 254;
      if (f?.table !== undefined && table !== f.table) continue;
      const dev = m.attrs.oif !== undefined ? names.get(m.attrs.oif) : undefined;
      if (f?.dev !== undefined && dev !== f.dev) continue;
      const dst = m.attrs.dst ? `${bufIP(m.attrs.dst)}/${m.data.dstLen}` : fam === 4 ? '0.0.0.0/0' : '::/0';
      const rtype = m.data.type;
      const typeName =
        typeof rtype === 'number' ? RTN_NAMES.get(rtype) : (rtype?.toLowerCase() as RouteType | undefined);
      const info: RouteInfo = { family: fam, dst, table, type: typeName ?? 'unicast' };
      if (m.attrs.gateway) info.via = bufIP(m.attrs.gateway);
      if (dev) info.dev = dev;
      if (m.attrs.priority !== undefined) info.metric = m.attrs.priority;
      if (m.attrs.prefsrc) info.src = bufIP(m.attrs.prefsrc);
      const scope = m.data.scope;
      info.scope = scope === 253 || scope === 'LINK' ? 'link' : scope === 254 || scope === 'HOST' ? 'host' : 'global';
      const flags = m.data.flags as unknown as { __unknown?: number } | undefined;
      if (flags?.__unknown && flags.__unknown & RTNH_F_ONLINK) info.onlink = true;
      const proto = m.data.protocol;
      if (typeof proto === 'number') info.protocol = RT_PROTO_NAMES.get(proto) ?? String(proto);
      else if (typeof proto === 'string') info.protocol = proto.toLowerCase();
      out.push(info);
    }
    return out;
  }

  async addRoute(netns: NetnsRef, route: RouteSpec, opts?: { replace?: boolean }): Promise<void> {
    const s = this.sock(netns);
    const m = await this.routeMsg(netns, route);
    const flags = F_CREATE | (opts?.replace ? F_REPLACE : F_EXCL);
    await nlCall(`add route ${route.dst}`, () => s.newRoute(m.data, m.attrs, { flags }));
  }

  async delRoute(netns: NetnsRef, route: RouteSpec): Promise<void> {
    const s = this.sock(netns);
    const m = await this.routeMsg(netns, route);
    delete m.data.protocol;
    m.data.scope = 255; // RT_SCOPE_NOWHERE: match any scope on delete
    await nlCall(`delete route ${route.dst}`, () => s.delRoute(m.data, m.attrs));
  }

  // ----- neighbours and FDB

  async listNeighs(netns: NetnsRef, dev?: string): Promise<NeighSpec[]> {
    const s = this.sock(netns);
    const names = await this.names(netns);
    const out: NeighSpec[] = [];
    for (const fam of [AF_INET, AF_INET6]) {
      const msgs = await nlCall('list neighbours', () => s.getNeighbors({ family: fam }));
      for (const m of msgs) {
        const d = names.get(m.data.ifindex ?? 0) ?? '';
        if ((dev !== undefined && d !== dev) || !m.attrs.dst || !m.attrs.lladdr) continue;
        out.push({ ip: bufIP(m.attrs.dst), mac: bufMac(m.attrs.lladdr), dev: d, permanent: !!m.data.state?.permanent });
      }
    }
    return out;
  }

  async setNeigh(netns: NetnsRef, n: NeighSpec): Promise<void> {
    const s = this.sock(netns);
    const ifindex = await this.index(netns, n.dev);
    await nlCall(`set neighbour ${n.ip}`, () =>
      s.newNeighbor(
        {
          family: familyOf(n.ip) === 4 ? AF_INET : AF_INET6,
          ifindex,
          state: n.permanent ? { permanent: true } : { reachable: true },
        },
        { dst: ipBuf(n.ip), lladdr: macBuf(n.mac) },
        { flags: F_CREATE | F_REPLACE },
      ),
    );
  }

  async delNeigh(netns: NetnsRef, n: Pick<NeighSpec, 'ip' | 'dev'>): Promise<void> {
    const s = this.sock(netns);
    const ifindex = await this.index(netns, n.dev);
    await nlCall(`delete neighbour ${n.ip}`, () =>
      s.delNeighbor({ family: familyOf(n.ip) === 4 ? AF_INET : AF_INET6, ifindex }, { dst: ipBuf(n.ip) }),
    );
  }

  async listFdb(netns: NetnsRef, dev?: string): Promise<FdbSpec[]> {
    const s = this.sock(netns);
    const names = await this.names(netns);
    const msgs = await nlCall('list fdb', () => s.getNeighbors({ family: AF_BRIDGE }));
    const out: FdbSpec[] = [];
    for (const m of msgs) {
      const d = names.get(m.data.ifindex ?? 0) ?? '';
      if ((dev !== undefined && d !== dev) || !m.attrs.lladdr) continue;
      const e: FdbSpec = { mac: bufMac(m.attrs.lladdr), dev: d, permanent: !!m.data.state?.permanent };
      if (m.attrs.dst) e.dst = bufIP(m.attrs.dst);
      if (m.attrs.master) e.master = names.get(m.attrs.master);
      out.push(e);
    }
    return out;
  }

  async setFdb(netns: NetnsRef, e: FdbSpec): Promise<void> {
    const s = this.sock(netns);
    const ifindex = await this.index(netns, e.dev);
    const attrs: NL.rt.NeighborAttrs = { lladdr: macBuf(e.mac) };
    if (e.dst) attrs.dst = ipBuf(e.dst);
    if (e.master) attrs.master = await this.index(netns, e.master);
    await nlCall(`set fdb ${e.mac}`, () =>
      s.newNeighbor(
        {
          family: AF_BRIDGE,
          ifindex,
          state: e.permanent === false ? { reachable: true } : { permanent: true },
          flags: e.master ? { master: true } : { self: true },
        },
        attrs,
        { flags: F_CREATE | F_REPLACE },
      ),
    );
  }

  async delFdb(netns: NetnsRef, e: Pick<FdbSpec, 'mac' | 'dev' | 'dst'>): Promise<void> {
    const s = this.sock(netns);
    const ifindex = await this.index(netns, e.dev);
    const attrs: NL.rt.NeighborAttrs = { lladdr: macBuf(e.mac) };
    if (e.dst) attrs.dst = ipBuf(e.dst);
    await nlCall(`delete fdb ${e.mac}`, () => s.delNeighbor({ family: AF_BRIDGE, ifindex, flags: { self: true } }, attrs));
  }

  // ----- sysctls

  private sysctlPath(key: string): string {
    if (!/^[a-zA-Z0-9_.\-/]+$/.test(key) || key.includes('..')) throw new DatapathError('EINVAL', `invalid sysctl key ${key}`);
    // Dotted form unless the key already uses '/' (needed for interface names containing '.').
    return `/proc/sys/${key.includes('/') ? key : key.replace(/\./g, '/')}`;
  }

  async getSysctl(netns: NetnsRef, key: string): Promise<string> {
    const p = this.sysctlPath(key);
    return this.inNs(this.resolve(netns), () => {
      try {
        return readFileSync(p, 'utf8').trim();
      } catch {
        throw new DatapathError('ENOENT', `sysctl ${key} not found`);
      }
    });
  }

  async setSysctl(netns: NetnsRef, key: string, value: string): Promise<void> {
    const p = this.sysctlPath(key);
    this.inNs(this.resolve(netns), () => {
      try {
        writeFileSync(p, value);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'ENOENT' : 'EPERM';
        throw new DatapathError(code, `sysctl ${key}=${value}: ${(e as Error).message}`);
      }
    });
  }

  // ----- child processes inside a namespace

  /** Spawns `cmd args` (argument array, no shell) with the child forked inside `netns`. */
  private run(netns: NetnsRef, cmd: string, args: string[], stdin?: string): Promise<string> {
    const r = this.resolve(netns);
    return new Promise((resolve, reject) => {
      const child = this.inNs(r, () => childProcess().spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] }));
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', (e) => reject(new DatapathError('EIO', `${cmd}: ${e.message}`)));
      child.on('close', (code) => {
        if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
        else {
          const msg = Buffer.concat(err).toString('utf8').trim();
          const ecode: DatapathErrorCode = /No such|does not exist|Cannot find/i.test(msg) ? 'ENOENT' : 'EIO';
          reject(new DatapathError(ecode, `${cmd} ${args.join(' ')}: ${msg || `exit ${code}`}`));
        }
      });
      // A child that exits without reading stdin makes the write fail with EPIPE; its exit code tells the story.
      child.stdin.on('error', () => {});
      if (stdin) child.stdin.end(stdin);
      else child.stdin.end();
    });
  }

  // ----- NAT with iptables (nat table), one chain per owner

  private static chain(prefix: 'KEMU-MASQ-' | 'KEMU-DN-' | 'KEMU-SN-', owner: string): string {
    // SHA-256 in JavaScript: node:crypto would initialise OpenSSL on a plugin start that needs nothing else of it.
    return prefix + bytesToHex(sha256(utf8ToBytes(owner))).slice(0, 16).toUpperCase();
  }

  private static ownerComment(owner: string): string {
    if (!/^[\w.:@=/ -]{1,200}$/.test(owner)) throw new DatapathError('EINVAL', `invalid NAT owner ${JSON.stringify(owner)}`);
    return `kemu owner=${owner}`;
  }

  private iptablesFor(rules: NatRule[] | string): string {
    const sample = typeof rules === 'string' ? rules : (rules[0]?.kind === 'dnat' ? rules[0].toIP : rules[0]?.src) ?? '';
    return sample.includes(':') ? 'ip6tables' : 'iptables';
  }

  /** restore lines that remove `owner`'s rules from a `-S` listing: the jumps to its chains, then the chains. */
  private static removalLines(existing: string, owner: string): string[] {
    const comment = LinuxDatapath.ownerComment(owner);
    const chains = [
      LinuxDatapath.chain('KEMU-MASQ-', owner),
      LinuxDatapath.chain('KEMU-DN-', owner),
      LinuxDatapath.chain('KEMU-SN-', owner),
    ];
    const out: string[] = [];
    for (const line of existing.split('\n')) {
      if (line.startsWith('-A ') && line.includes(`"${comment}"`) && chains.some((c) => line.endsWith(`-j ${c}`))) {
        out.push(line.replace(/^-A /, '-D '));
      }
    }
    const present = chains.filter((c) => existing.includes(`-N ${c}\n`));
    for (const c of present) out.push(`-F ${c}`);
    for (const c of present) out.push(`-X ${c}`);
    return out;
  }

  async addNatRules(netns: NetnsRef, rules: NatRule[]): Promise<void> {
    const byFamily = new Map<string, NatRule[]>();
    for (const r of rules) {
      const bin = this.iptablesFor([r]);
      byFamily.set(bin, [...(byFamily.get(bin) ?? []), r]);
    }
    // At most one listing and one restore per family: the owners' earlier rules there are replaced in the same
    // transaction (each iptables process costs a plugin call several milliseconds). Like the reference, an ADD
    // replaces rules only in the families it programs; DEL removes every family it is not told to skip.
    for (const [bin, list] of byFamily) {
      // An owner's first ADD (the usual case) needs no listing: `-N` of an owner's chain fails the whole
      // transaction when the chain exists (and without the chain there is no jump to it either), `-C` when
      // the jumps to KEMU-HOSTPORT-DNAT are missing. A repeated ADD, a node's first port mapping or any
      // failure takes the listing path below, which replaces the rules, adds what is missing or reports the error.
      try {
        await this.run(netns, `${bin}-restore`, ['-w', '--noflush'], LinuxDatapath.natRestore(undefined, list).join('\n'));
        continue;
      } catch {
        // listed and replaced below
      }
      const existing = await this.run(netns, bin, ['-w', '-t', 'nat', '-S']);
      await this.run(netns, `${bin}-restore`, ['-w', '--noflush'], LinuxDatapath.natRestore(existing, list).join('\n'));
    }
  }

  /**
   * The restore script that replaces the owners' rules in `existing` (a `-S` listing) with `list`; without a
   * listing, one that fails unless the owners have no chains yet and the jumps to KEMU-HOSTPORT-DNAT are there.
   */
  private static natRestore(existing: string | undefined, list: NatRule[]): string[] {
    const lines: string[] = ['*nat'];
    const declare = (c: string) => (existing === undefined ? `-N ${c}` : `:${c} - [0:0]`);
    if (existing !== undefined) {
      for (const owner of new Set(list.map((r) => r.owner))) lines.push(...LinuxDatapath.removalLines(existing, owner));
    }
    const haveChain = (c: string) => existing === undefined || existing.includes(`-N ${c}\n`) || lines.includes(`:${c} - [0:0]`);
    const jumps: string[] = [];
    if (list.some((r) => r.kind === 'dnat')) {
      if (!haveChain('KEMU-HOSTPORT-DNAT')) lines.push(':KEMU-HOSTPORT-DNAT - [0:0]');
      // The jumps are checked on their own: a flush of the built-in chains (a firewall reload) keeps ours.
      for (const j of ['-A PREROUTING -m addrtype --dst-type LOCAL -j KEMU-HOSTPORT-DNAT', '-A OUTPUT -m addrtype --dst-type LOCAL -j KEMU-HOSTPORT-DNAT']) {
        if (existing === undefined) lines.push(j.replace(/^-A /, '-C '));
        else if (!existing.split('\n').includes(j)) jumps.push(j);
      }
    }
    for (const owner of new Set(list.map((r) => r.owner))) {
      const comment = LinuxDatapath.ownerComment(owner);
      const mine = list.filter((r) => r.owner === owner);
      const masq = mine.filter((r) => r.kind === 'masquerade');
      const dnat = mine.filter((r) => r.kind === 'dnat');
      if (masq.length > 0) {
        const c = LinuxDatapath.chain('KEMU-MASQ-', owner);
        lines.push(declare(c));
        for (const r of masq) {
          for (const d of r.excludeDst ?? []) lines.push(`-A ${c} -d ${d} -m comment --comment "${comment}" -j ACCEPT`);
          lines.push(`-A ${c} -m comment --comment "${comment}" -j MASQUERADE`);
          jumps.push(`-A POSTROUTING -s ${r.src} -m comment --comment "${comment}" -j ${c}`);
        }
      }
      if (dnat.length > 0) {
        const dn = LinuxDatapath.chain('KEMU-DN-', owner);
        const sn = LinuxDatapath.chain('KEMU-SN-', owner);
        lines.push(declare(dn));
        const snat = dnat.filter((r) => r.snat);
        if (snat.length > 0) lines.push(declare(sn));
        for (const r of dnat) {
          const dest = r.toIP.includes(':') ? `[${r.toIP}]:${r.toPort}` : `${r.toIP}:${r.toPort}`;
          const conds = r.conditions?.length ? r.conditions : [{}];
          for (const cond of conds) {
            const m = [`-A ${dn} -p ${r.protocol}`];
            if (r.hostIP) m.push(`-d ${r.hostIP}`);
            if (cond.srcCidr) m.push(`-s ${cond.srcCidr}`);
            if (cond.iif) m.push(`-i ${cond.iif}`);
            if (cond.notIif) m.push(`! -i ${cond.notIif}`);
            m.push(`-m ${r.protocol} --dport ${r.hostPort} -m comment --comment "${comment}" -j DNAT --to-destination ${dest}`);
            lines.push(m.join(' '));
          }
          if (r.snat) {
            // Hairpin: a pod reaching itself through the host port must see replies come back via the node.
            lines.push(
              `-A ${sn} -s ${r.masqSrc ?? r.toIP} -d ${r.toIP} -p ${r.protocol} -m ${r.protocol} --dport ${r.toPort} -m comment --comment "${comment}" -j MASQUERADE`,
            );
            // Node-local clients of 127.0.0.1:hostPort: the pod cannot answer 127.0.0.1, so the node's address
            // on the way out replaces it (the packet leaves 127/8 only where route_localnet allows it).
            if (!r.toIP.includes(':')) {
              lines.push(
                `-A ${sn} -s 127.0.0.1/32 -d ${r.toIP}/32 -p ${r.protocol} -m ${r.protocol} --dport ${r.toPort} -m comment --comment "${comment}" -j MASQUERADE`,
              );
            }
          }
        }
        jumps.push(`-A KEMU-HOSTPORT-DNAT -m comment --comment "${comment}" -j ${dn}`);
        // First in POSTROUTING, as the reference puts its own: a masquerade chain of the bridge (ipMasq) ACCEPTs
        // traffic within the pod network, which would end the nat table's walk before the hairpin SNAT.
        if (snat.length > 0) jumps.push(`-I POSTROUTING 1 -m comment --comment "${comment}" -j ${sn}`);
      }
    }
    lines.push(...jumps, 'COMMIT', '');
    return lines;
  }

  async delNatRules(netns: NetnsRef, owner: string, opts?: { families?: readonly (4 | 6)[] }): Promise<void> {
    const bins = opts?.families
      ? (['iptables', 'ip6tables'] as const).filter((_, i) => opts.families!.includes(i === 0 ? 4 : 6))
      : ['iptables', 'ip6tables'];
    if (bins.length === 0 || !(await this.netnsExists(netns))) return;
    // The families at once (both when the caller does not know which ones its ADD programmed).
    await Promise.all(
      bins.map(async (bin) => {
        let existing: string;
        try {
          existing = await this.run(netns, bin, ['-w', '-t', 'nat', '-S']);
        } catch {
          return;
        }
        const out: string[] = ['*nat', ...LinuxDatapath.removalLines(existing, owner)];
        if (out.length === 1) return;
        out.push('COMMIT', '');
        await this.run(netns, `${bin}-restore`, ['-w', '--noflush'], out.join('\n'));
      }),
    );
  }

  async listNatRules(netns: NetnsRef, owner?: string): Promise<NatRule[]> {
    const out: NatRule[] = [];
    for (const bin of ['iptables', 'ip6tables']) {
      let existing: string;
      try {
        existing = await this.run(netns, bin, ['-w', '-t', 'nat', '-S']);
      } catch {
        continue;
      }
      for (const line of existing.split('\n')) {
        const m = /--comment "kemu owner=([^"]+)"/.exec(line);
        if (!m || (owner !== undefined && m[1] !== owner)) continue;
        const o = m[1]!;
        const dnat = /-A KEMU-DN-\S+ -p (\w+)(?: -d (\S+?)(?:\/\d+)?)?.* --dport (\d+) .*--to-destination \[?([^\]\s]+?)\]?:(\d+)$/.exec(line);
        if (dnat) {
          const r: NatRule = {
            kind: 'dnat',
            owner: o,
            protocol: dnat[1] as 'tcp' | 'udp' | 'sctp',
            hostPort: Number(dnat[3]),
            toIP: dnat[4]!,
            toPort: Number(dnat[5]),
          };
          if (dnat[2]) r.hostIP = dnat[2];
          out.push(r);
          continue;
        }
        const masq = /-A POSTROUTING -s (\S+) .* -j KEMU-MASQ-/.exec(line);
        if (masq) out.push({ kind: 'masquerade', owner: o, src: masq[1]! });
      }
    }
    return out;
  }
}

export function createLinuxDatapath(opts: DatapathOptions = {}): LinuxDatapath {
  const dp = new LinuxDatapath(opts);
  // The node's namespace must exist and be one: checked without opening it (a FIFO there would block).
  if (opts.hostNetns !== undefined) void dp.nodeNetnsKey();
  return dp;
}
