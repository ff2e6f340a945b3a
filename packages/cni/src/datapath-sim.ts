/**
 * The `sim` Datapath: every plugin operation lands in a @kemu/netsim world instead of the kernel, so the
 * plugins run unchanged with no root, and packets can then be pinged and traced through what they built.
 *
 * Two modes, one implementation:
 * - in memory (in-process invoker): `createSimDatapath()` or `createSimDatapath({ world })`;
 * - persisted (exec'd plugins, `KEMU_DATAPATH=sim KEMU_NETSIM_STATE=<file>`): each operation takes an
 *   exclusive flock on `<file>.lock`, loads the world (cached while the file is unchanged), applies the
 *   change, and replaces the file atomically (write to a temp file, rename). A crashed writer leaves the
 *   previous state; the kernel drops its lock. A file that does not parse is reported with its path and
 *   never overwritten.
 *
 * Errors follow the linux datapath's mapping of kernel errnos (ENODEV/ESRCH/EADDRNOTAVAIL -> ENOENT,
 * ENETUNREACH/ERANGE -> EINVAL, ...) and keep the kernel's text in the message.
 */
import { mkdirSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  type NatRule as SimNatRule,
  isNetsimError,
  type PingOptions,
  type PingResult,
  type SendOptions,
  type TcpConnectResult,
  World,
  type WorldJSON,
} from '@kemu/netsim';
import {
  type AddrInfo,
  type Datapath,
  DatapathError,
  type DatapathErrorCode,
  isDatapathError,
  type DatapathOptions,
  type FdbSpec,
  HOST_NETNS,
  type LinkChanges,
  type LinkInfo,
  type LinkSpec,
  type NatRule,
  type NeighSpec,
  type NetnsRef,
  type RouteInfo,
  type RouteSpec,
} from './datapath.js';
import { withFileLock } from './file-lock.js';
import { READ_LIMITS } from './read-bounded.js';
import { readTextBounded } from './read-file-bounded.js';

export const SIM_STATE_FORMAT = 'kemu-netsim-state';

export interface SimDatapathOptions extends DatapathOptions {
  /** Persist to this file (exec path). Without it the world lives in memory. */
  statePath?: string;
  /** In-memory mode: use this world (default: a new one with the host namespace). */
  world?: World;
  /** Seeds MAC generation of a new world, so several simulated nodes never collide. */
  seed?: number;
  /** Most recent frames kept across all devices for pcap export (default 65536; 0 disables capture). */
  captureLimit?: number;
  /**
   * The world namespace that stands for this node's {@link HOST_NETNS} (default `host`). Several simulated
   * nodes share one world by each naming its own, e.g. `/run/kemu/nodes/node-1`; it is created (with lo up)
   * if the world lacks it.
   */
  hostNamespace?: string;
}

interface SimState {
  world: World;
  /** NAT rules as the plugins gave them, per namespace, so listNatRules returns them verbatim. */
  nat: Map<string, NatRule[]>;
}

interface StateFile {
  format: typeof SIM_STATE_FORMAT;
  version: 1;
  world: WorldJSON;
  nat: Record<string, NatRule[]>;
}

function errnoToDatapath(code: string): DatapathErrorCode {
  switch (code) {
    case 'ENOENT':
    case 'ENODEV':
    case 'ESRCH':
    case 'EADDRNOTAVAIL':
      return 'ENOENT';
    case 'EEXIST':
      return 'EEXIST';
    case 'EINVAL':
    case 'ERANGE':
    case 'ENETUNREACH':
    case 'ELOOP':
    case 'ENETDOWN':
      return 'EINVAL';
    case 'EBUSY':
      return 'EBUSY';
    case 'EPERM':
    case 'EACCES':
      return 'EPERM';
    case 'ENOTSUP':
      return 'ENOTSUP';
    case 'EADDRINUSE':
      return 'EADDRINUSE';
    default:
      return 'EIO';
  }
}

function wrap<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (isNetsimError(e)) throw new DatapathError(errnoToDatapath(e.code), `${what}: ${e.message}`);
    throw e;
  }
}

function newWorld(opts: SimDatapathOptions): World {
  const w = new World({ seed: opts.seed, captureLimit: opts.captureLimit });
  ensureHost(w, opts.hostNamespace ?? HOST_NETNS);
  return w;
}

function ensureHost(w: World, name: string): void {
  if (w.hasNamespace(name)) return;
  w.addNamespace(name);
  // The node's own namespace has lo up, as on a booted host.
  w.setLink(name, 'lo', { up: true });
}

function simRoute(r: RouteSpec): Parameters<World['addRoute']>[1] {
  if (!r || typeof r.dst !== 'string') throw new DatapathError('EINVAL', 'route needs a "dst"');
  const fam: 4 | 6 = r.dst.includes(':') ? 6 : 4;
  return {
    dst: r.dst,
    family: fam,
    via: r.via,
    dev: r.dev,
    onlink: r.onlink,
    type: r.type,
    table: r.table,
    src: r.src,
    metric: r.metric,
    proto: r.protocol,
    scope: r.scope,
  };
}

/** The netsim rules that implement one Datapath NAT rule, exactly as the linux datapath writes iptables. */
function compileNat(r: NatRule): SimNatRule[] {
  if (!r || typeof r !== 'object' || typeof r.owner !== 'string' || r.owner.length === 0) {
    throw new DatapathError('EINVAL', 'NAT rule needs an "owner"');
  }
  if (r.kind === 'masquerade') {
    return [{ type: 'masquerade', src: r.src, notDst: r.excludeDst, comment: r.comment, owner: r.owner }];
  }
  if (r.kind === 'dnat') {
    if (r.protocol !== 'tcp' && r.protocol !== 'udp') {
      throw new DatapathError('ENOTSUP', `NAT for protocol ${String(r.protocol)} is not simulated`);
    }
    const to = r.toIP.includes(':') ? `[${r.toIP}]:${r.toPort}` : `${r.toIP}:${r.toPort}`;
    const conds = r.conditions?.length ? r.conditions : [{}];
    const out: SimNatRule[] = conds.map((c) => ({
      type: 'dnat',
      proto: r.protocol as 'tcp' | 'udp',
      dport: r.hostPort,
      dst: r.hostIP,
      to,
      src: c.srcCidr,
      iif: c.iif,
      notIif: c.notIif,
      comment: r.comment,
      owner: r.owner,
    }));
    if (r.snat) {
      // Hairpin: a pod reaching itself through its host port gets its replies back via the node.
      const host = r.toIP.includes(':') ? `${r.toIP}/128` : `${r.toIP}/32`;
      out.push({
        type: 'masquerade',
        src: r.masqSrc ?? host,
        dst: host,
        proto: r.protocol as 'tcp' | 'udp',
        dport: r.toPort,
        owner: r.owner,
      });
    }
    return out;
  }
  throw new DatapathError(
    'EINVAL',
    `unknown NAT rule kind ${JSON.stringify((r as { kind?: unknown }).kind)}`,
  );
}

export class SimDatapath implements Datapath {
  readonly kind = 'sim';
  private readonly statePath: string | undefined;
  private mem: SimState | undefined;
  private cache: { key: string; state: SimState } | undefined;
  /** The world namespace behind HOST_NETNS. */
  private readonly hostNs: string;

  constructor(private readonly opts: SimDatapathOptions = {}) {
    this.statePath = opts.statePath;
    this.hostNs = opts.hostNamespace ?? HOST_NETNS;
    if (typeof this.hostNs !== 'string' || this.hostNs.length === 0 || this.hostNs.includes('\0')) {
      throw new DatapathError('EINVAL', `invalid host namespace ${JSON.stringify(this.hostNs)}`);
    }
    if (this.statePath !== undefined) {
      if (
        typeof this.statePath !== 'string' ||
        this.statePath.length === 0 ||
        this.statePath.includes('\0')
      ) {
        throw new DatapathError('EINVAL', `invalid netsim state path ${JSON.stringify(this.statePath)}`);
      }
    } else {
      if (opts.world) ensureHost(opts.world, this.hostNs);
      this.mem = { world: opts.world ?? newWorld(opts), nat: new Map() };
    }
  }

  // ---------------------------------------------------------------- state handling

  private fileKey(): string | null {
    try {
      const st = statSync(this.statePath!);
      return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new DatapathError('EIO', `netsim state file ${this.statePath}: ${(e as Error).message}`);
    }
  }

  private load(): SimState {
    const path = this.statePath!;
    const key = this.fileKey();
    if (key === null) {
      this.cache = undefined;
      return { world: newWorld(this.opts), nat: new Map() };
    }
    if (this.cache?.key === key) return this.cache.state;
    let text: string;
    try {
      text = readTextBounded(path, { what: 'netsim state file', maxBytes: READ_LIMITS.simState });
    } catch (e) {
      throw new DatapathError('EIO', (e as Error).message);
    }
    const broken = (why: string) =>
      new DatapathError(
        'EIO',
        `netsim state file ${path} is unreadable (${why}); it was left untouched: move it away to start from an empty network`,
      );
    let doc: StateFile;
    try {
      doc = JSON.parse(text) as StateFile;
    } catch (e) {
      throw broken(`not JSON: ${(e as Error).message}`);
    }
    if (!doc || doc.format !== SIM_STATE_FORMAT || doc.version !== 1) {
      throw broken(`expected {"format":"${SIM_STATE_FORMAT}","version":1}`);
    }
    let world: World;
    try {
      world = World.fromJSON(doc.world, { captureLimit: this.opts.captureLimit });
    } catch (e) {
      throw broken((e as Error).message);
    }
    const nat = new Map<string, NatRule[]>();
    for (const [ns, rules] of Object.entries(doc.nat ?? {})) {
      if (!Array.isArray(rules)) throw broken(`nat rules of ${ns} are not a list`);
      nat.set(ns, rules);
    }
    const state = { world, nat };
    this.cache = { key, state };
    return state;
  }

  private save(state: SimState): void {
    const path = this.statePath!;
    const doc: StateFile = {
      format: SIM_STATE_FORMAT,
      version: 1,
      world: state.world.toJSON(),
      nat: Object.fromEntries(state.nat),
    };
    const tmp = `${path}.${process.pid}.tmp`;
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      writeFileSync(tmp, JSON.stringify(doc), { mode: 0o600 });
      renameSync(tmp, path);
    } catch (e) {
      try {
        unlinkSync(tmp);
      } catch {}
      throw new DatapathError('EIO', `cannot write netsim state file ${path}: ${(e as Error).message}`);
    }
    const key = this.fileKey();
    this.cache = key ? { key, state } : undefined;
  }

  private async read<T>(fn: (s: SimState) => T): Promise<T> {
    if (this.mem) return fn(this.mem);
    // Readers need no lock: writers replace the file by rename, so a read sees one whole version.
    return fn(this.load());
  }

  private async write<T>(fn: (s: SimState) => T): Promise<T> {
    if (this.mem) return fn(this.mem);
    try {
      return await withFileLock(`${this.statePath}.lock`, async () => {
        const state = this.load();
        let out: T;
        try {
          out = fn(state);
        } catch (e) {
          // Whatever fn half-did is discarded with the cache; the file still holds the last good state.
          this.cache = undefined;
          throw e;
        }
        this.save(state);
        return out;
      });
    } catch (e) {
      if (isDatapathError(e)) throw e;
      const code = (e as { code?: unknown }).code;
      if (code === 11) throw new DatapathError('EBUSY', (e as Error).message);
      if (isNetsimError(e)) throw new DatapathError(errnoToDatapath(e.code), e.message);
      throw new DatapathError('EIO', `netsim state ${this.statePath}: ${(e as Error).message}`);
    }
  }

  private ns(netns: NetnsRef): string {
    if (netns === HOST_NETNS || (this.opts.hostNetns !== undefined && netns === this.opts.hostNetns))
      return this.hostNs;
    if (
      typeof netns !== 'string' ||
      !netns.startsWith('/') ||
      netns.includes('\0') ||
      netns.split('/').includes('..')
    ) {
      throw new DatapathError('EINVAL', `invalid netns path ${JSON.stringify(netns)}`);
    }
    return netns;
  }

  private requireNs(s: SimState, ns: string, ref: NetnsRef): void {
    if (!s.world.hasNamespace(ns))
      throw new DatapathError('ENOENT', `network namespace ${ref} does not exist`);
  }

  // ---------------------------------------------------------------- namespaces (sim only)

  /** `ip netns add`: the container runtime creates a sandbox's namespace before CNI ADD. */
  async addNetns(netns: NetnsRef): Promise<void> {
    const ns = this.ns(netns);
    await this.write((s) => wrap(`add netns ${netns}`, () => s.world.addNamespace(ns)));
  }

  /** `ip netns delete`: the namespace and its devices go (veth peers elsewhere with them). */
  async delNetns(netns: NetnsRef): Promise<void> {
    const ns = this.ns(netns);
    if (ns === this.hostNs) throw new DatapathError('EINVAL', 'the host namespace cannot be deleted');
    await this.write((s) => {
      wrap(`delete netns ${netns}`, () => s.world.deleteNamespace(ns));
      s.nat.delete(ns);
    });
  }

  async netnsExists(netns: NetnsRef): Promise<boolean> {
    const ns = this.ns(netns);
    return this.read((s) => s.world.hasNamespace(ns));
  }

  // ---------------------------------------------------------------- links

  private linkInfo(s: SimState, ns: string, name: string): LinkInfo {
    const l = s.world.getLink(ns, name);
    const info: LinkInfo = { name: l.name, index: l.index, kind: l.kind, mac: l.mac, mtu: l.mtu, up: l.up };
    if (l.master) {
      info.master = l.master;
      info.hairpin = l.port?.hairpin ?? false;
    }
    if (l.promisc) info.promisc = true;
    if (l.peer) info.peerIndex = s.world.getLink(l.peer.ns, l.peer.name).index;
    if (l.vxlan) {
      info.vxlan = { vni: l.vxlan.vni, port: l.vxlan.port, learning: l.vxlan.learning };
      if (l.vxlan.local) info.vxlan.local = l.vxlan.local;
      if (l.vxlan.dev) info.vxlan.dev = l.vxlan.dev;
    }
    if (l.kind === 'bridge') info.bridge = { vlanFiltering: false };
    return info;
  }

  async getLink(netns: NetnsRef, name: string): Promise<LinkInfo | undefined> {
    const ns = this.ns(netns);
    return this.read((s) => {
      this.requireNs(s, ns, netns);
      if (!s.world.hasLink(ns, name)) return undefined;
      return this.linkInfo(s, ns, name);
    });
  }

  async listLinks(netns: NetnsRef): Promise<LinkInfo[]> {
    const ns = this.ns(netns);
    return this.read((s) => {
      this.requireNs(s, ns, netns);
      return s.world.links(ns).map((l) => this.linkInfo(s, ns, l.name));
    });
  }

  async addLink(netns: NetnsRef, spec: LinkSpec): Promise<LinkInfo> {
    const ns = this.ns(netns);
    if (!spec || typeof spec !== 'object') throw new DatapathError('EINVAL', 'link spec missing');
    const peerNs = spec.kind === 'veth' ? this.ns(spec.peer?.netns ?? netns) : undefined;
    return this.write((s) => {
      this.requireNs(s, ns, netns);
      const what = `add ${String(spec.kind)} ${String(spec.name)}`;
      wrap(what, () => {
        switch (spec.kind) {
          case 'veth':
            this.requireNs(s, peerNs!, spec.peer.netns);
            s.world.addLink(ns, {
              kind: 'veth',
              name: spec.name,
              mac: spec.mac,
              mtu: spec.mtu,
              peer: { name: spec.peer.name, ns: peerNs, mac: spec.peer.mac },
            });
            break;
          case 'bridge':
          case 'dummy':
            s.world.addLink(ns, { kind: spec.kind, name: spec.name, mac: spec.mac, mtu: spec.mtu });
            break;
          case 'vxlan':
            if (!spec.vxlan) throw new DatapathError('EINVAL', `${what}: missing vxlan parameters`);
            s.world.addLink(ns, {
              kind: 'vxlan',
              name: spec.name,
              mac: spec.mac,
              mtu: spec.mtu,
              vni: spec.vxlan.vni,
              port: spec.vxlan.port,
              local: spec.vxlan.local,
              dev: spec.vxlan.dev,
              learning: spec.vxlan.learning,
            });
            break;
          default:
            throw new DatapathError('ENOTSUP', `${what}: link kind not supported`);
        }
        if (spec.up) s.world.setLink(ns, spec.name, { up: true });
      });
      return this.linkInfo(s, ns, spec.name);
    });
  }

  async setLink(netns: NetnsRef, name: string, c: LinkChanges): Promise<void> {
    const ns = this.ns(netns);
    if (!c || typeof c !== 'object') throw new DatapathError('EINVAL', 'link changes missing');
    const target = c.netns === undefined ? undefined : this.ns(c.netns);
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      if (target !== undefined) {
        this.requireNs(s, target, c.netns!);
        const newName = c.name ?? name;
        if (target !== ns && s.world.hasLink(target, newName)) {
          throw new DatapathError('EEXIST', `set link ${name}: link ${newName} exists in ${c.netns}`);
        }
      }
      // Same steps, same order as the linux datapath: attributes (incl. rename), hairpin, up/down, move.
      wrap(`set link ${name}`, () => {
        s.world.setLink(ns, name, {
          mtu: c.mtu,
          mac: c.mac,
          master: c.master,
          name: c.name,
          promisc: c.promisc,
        });
        const current = c.name ?? name;
        if (c.hairpin !== undefined) s.world.setLink(ns, current, { hairpin: c.hairpin });
        if (c.up !== undefined) s.world.setLink(ns, current, { up: c.up });
        if (target !== undefined && target !== ns) s.world.setLink(ns, current, { netns: target });
      });
    });
  }

  async delLink(netns: NetnsRef, name: string): Promise<void> {
    const ns = this.ns(netns);
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      wrap(`delete link ${name}`, () => s.world.deleteLink(ns, name));
    });
  }

  // ---------------------------------------------------------------- addresses

  async listAddrs(netns: NetnsRef, link?: string): Promise<AddrInfo[]> {
    const ns = this.ns(netns);
    return this.read((s) => {
      this.requireNs(s, ns, netns);
      return wrap('list addresses', () =>
        s.world
          .addresses(ns, link)
          .map((a) => ({ link: a.dev, cidr: a.cidr, family: a.family, scope: a.scope })),
      );
    });
  }

  async addAddr(netns: NetnsRef, link: string, cidr: string): Promise<void> {
    const ns = this.ns(netns);
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      wrap(`add address ${cidr} dev ${link}`, () => s.world.addAddress(ns, link, cidr));
    });
  }

  async delAddr(netns: NetnsRef, link: string, cidr: string): Promise<void> {
    const ns = this.ns(netns);
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      wrap(`delete address ${cidr} dev ${link}`, () => s.world.deleteAddress(ns, link, cidr));
    });
  }

  // ---------------------------------------------------------------- routes

  async listRoutes(
    netns: NetnsRef,
    f?: { table?: number; dev?: string; family?: 4 | 6 },
  ): Promise<RouteInfo[]> {
    const ns = this.ns(netns);
    return this.read((s) => {
      this.requireNs(s, ns, netns);
      return s.world
        .routes(ns, { table: f?.table, family: f?.family })
        .filter((r) => f?.dev === undefined || r.dev === f.dev)
        .map((r) => {
          const info: RouteInfo = {
            family: r.family,
            dst: r.dst === 'default' ? (r.family === 4 ? '0.0.0.0/0' : '::/0') : r.dst,
            table: r.table,
            type: r.type,
            scope: r.scope,
            protocol: r.proto,
          };
          if (r.via) info.via = r.via;
          if (r.dev) info.dev = r.dev;
          // The kernel only reports a priority for IPv4 routes that have one.
          if (r.family === 6 || r.metric !== 0) info.metric = r.metric;
          if (r.src) info.src = r.src;
          if (r.onlink) info.onlink = true;
          return info;
        });
    });
  }

  async addRoute(netns: NetnsRef, route: RouteSpec, opts?: { replace?: boolean }): Promise<void> {
    const ns = this.ns(netns);
    const spec = simRoute(route);
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      wrap(`add route ${route.dst}`, () =>
        opts?.replace ? s.world.replaceRoute(ns, spec) : s.world.addRoute(ns, spec),
      );
    });
  }

  async delRoute(netns: NetnsRef, route: RouteSpec): Promise<void> {
    const ns = this.ns(netns);
    const spec = simRoute(route);
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      wrap(`delete route ${route.dst}`, () => s.world.deleteRoute(ns, spec));
    });
  }

  // ---------------------------------------------------------------- neighbours and FDB

  async listNeighs(netns: NetnsRef, dev?: string): Promise<NeighSpec[]> {
    const ns = this.ns(netns);
    return this.read((s) => {
      this.requireNs(s, ns, netns);
      return wrap('list neighbours', () =>
        s.world
          .neighbours(ns, dev)
          .filter((n) => n.mac !== null)
          .map((n) => ({ ip: n.ip, mac: n.mac!, dev: n.dev, permanent: n.state === 'PERMANENT' })),
      );
    });
  }

  async setNeigh(netns: NetnsRef, n: NeighSpec): Promise<void> {
    const ns = this.ns(netns);
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      wrap(`set neighbour ${n?.ip}`, () =>
        s.world.addNeighbour(
          ns,
          { dev: n.dev, ip: n.ip, mac: n.mac, state: n.permanent === false ? 'REACHABLE' : 'PERMANENT' },
          true,
        ),
      );
    });
  }

  async delNeigh(netns: NetnsRef, n: Pick<NeighSpec, 'ip' | 'dev'>): Promise<void> {
    const ns = this.ns(netns);
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      wrap(`delete neighbour ${n?.ip}`, () => s.world.deleteNeighbour(ns, n.dev, n.ip));
    });
  }

  async listFdb(netns: NetnsRef, dev?: string): Promise<FdbSpec[]> {
    const ns = this.ns(netns);
    return this.read((s) => {
      this.requireNs(s, ns, netns);
      return wrap('list fdb', () => {
        const devs =
          dev !== undefined
            ? [dev]
            : s.world
                .links(ns)
                .filter((l) => l.kind === 'bridge' || l.kind === 'vxlan')
                .map((l) => l.name);
        const out: FdbSpec[] = [];
        for (const d of devs) {
          for (const e of s.world.fdb(ns, d)) {
            if (dev !== undefined && e.dev !== dev) continue;
            const f: FdbSpec = { mac: e.mac, dev: e.dev, permanent: e.permanent };
            if (e.dst) f.dst = e.dst;
            if (e.master) f.master = e.master;
            out.push(f);
          }
        }
        return out;
      });
    });
  }

  async setFdb(netns: NetnsRef, e: FdbSpec): Promise<void> {
    const ns = this.ns(netns);
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      wrap(`set fdb ${e?.mac}`, () => {
        if (e.master !== undefined) {
          const l = s.world.getLink(ns, e.dev);
          if (l.master !== e.master)
            throw new DatapathError('EINVAL', `set fdb ${e.mac}: ${e.dev} is not a port of ${e.master}`);
        }
        s.world.addFdb(ns, e.dev, { mac: e.mac, dst: e.dst, permanent: e.permanent !== false }, 'replace');
      });
    });
  }

  async delFdb(netns: NetnsRef, e: Pick<FdbSpec, 'mac' | 'dev' | 'dst'>): Promise<void> {
    const ns = this.ns(netns);
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      wrap(`delete fdb ${e?.mac}`, () => s.world.deleteFdb(ns, e.dev, e.mac, e.dst));
    });
  }

  // ---------------------------------------------------------------- sysctls

  async getSysctl(netns: NetnsRef, key: string): Promise<string> {
    const ns = this.ns(netns);
    return this.read((s) => {
      this.requireNs(s, ns, netns);
      return wrap(`sysctl ${key}`, () => s.world.getSysctl(ns, key));
    });
  }

  async setSysctl(netns: NetnsRef, key: string, value: string): Promise<void> {
    const ns = this.ns(netns);
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      wrap(`sysctl ${key}=${value}`, () => s.world.setSysctl(ns, key, value));
    });
  }

  // ---------------------------------------------------------------- NAT

  async addNatRules(netns: NetnsRef, rules: NatRule[]): Promise<void> {
    const ns = this.ns(netns);
    if (!Array.isArray(rules)) throw new DatapathError('EINVAL', 'NAT rules must be a list');
    const compiled = rules.map((r) => ({ r, sim: compileNat(r) }));
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      const owners = new Set(rules.map((r) => r.owner));
      // Validate every rule in a scratch namespace first, so a bad rule installs nothing.
      wrap('add NAT rules', () => {
        const probe = new World({ captureLimit: 0 });
        probe.addNamespace('probe');
        for (const { sim } of compiled) for (const x of sim) probe.addNatRule('probe', x);
      });
      for (const o of owners) s.world.deleteNatRulesByOwner(ns, o);
      for (const { sim } of compiled) for (const x of sim) s.world.addNatRule(ns, x);
      const kept = (s.nat.get(ns) ?? []).filter((r) => !owners.has(r.owner));
      s.nat.set(ns, [...kept, ...rules.map((r) => structuredClone(r))]);
    });
  }

  async delNatRules(netns: NetnsRef, owner: string): Promise<void> {
    const ns = this.ns(netns);
    await this.write((s) => {
      // DEL is idempotent: a namespace that is gone has no rules left to remove.
      if (!s.world.hasNamespace(ns)) return;
      s.world.deleteNatRulesByOwner(ns, owner);
      const kept = (s.nat.get(ns) ?? []).filter((r) => r.owner !== owner);
      if (kept.length) s.nat.set(ns, kept);
      else s.nat.delete(ns);
    });
  }

  async listNatRules(netns: NetnsRef, owner?: string): Promise<NatRule[]> {
    const ns = this.ns(netns);
    return this.read((s) => {
      this.requireNs(s, ns, netns);
      return (s.nat.get(ns) ?? [])
        .filter((r) => owner === undefined || r.owner === owner)
        .map((r) => structuredClone(r));
    });
  }

  // ---------------------------------------------------------------- traffic

  /** ping(8) through the simulated network; neighbour and FDB state it learns is kept. */
  async ping(from: NetnsRef, to: string, opts?: PingOptions): Promise<PingResult> {
    const ns = this.ns(from);
    return this.write((s) => {
      this.requireNs(s, ns, from);
      return wrap(`ping ${to}`, () => s.world.ping(ns, to, opts));
    });
  }

  /** A TCP handshake through the simulated network (something must `listen` on the far side). */
  async tcpConnect(from: NetnsRef, to: string, port: number, opts?: SendOptions): Promise<TcpConnectResult> {
    const ns = this.ns(from);
    return this.write((s) => {
      this.requireNs(s, ns, from);
      return wrap(`connect ${to}:${port}`, () => s.world.tcpConnect(ns, to, port, opts));
    });
  }

  async listen(netns: NetnsRef, proto: 'tcp' | 'udp', port: number, ip?: string): Promise<void> {
    const ns = this.ns(netns);
    await this.write((s) => {
      this.requireNs(s, ns, netns);
      wrap(`listen ${proto}/${port}`, () => s.world.listen(ns, { proto, port, ip }));
    });
  }

  /**
   * Runs `fn` on the world itself (traces, pcap export, scripted traffic). With `write`, changes are
   * persisted; the exec-path lock is held while `fn` runs.
   */
  async withWorld<T>(fn: (w: World) => T, opts: { write?: boolean } = {}): Promise<T> {
    return opts.write ? this.write((s) => fn(s.world)) : this.read((s) => fn(s.world));
  }

  async close(): Promise<void> {
    this.cache = undefined;
  }
}

export function createSimDatapath(opts: SimDatapathOptions = {}): SimDatapath {
  return new SimDatapath(opts);
}
