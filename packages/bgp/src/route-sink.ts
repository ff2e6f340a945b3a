/**
 * Where the speaker puts the routes it selects: a {@link RouteSink}. {@link DatapathRouteSink} programs them
 * into a `@kemu/cni` Datapath (Linux kernel or simulator) as `<prefix> via <next hop>`, or through a tunnel
 * device when an encapsulation mode applies (calico's ipipMode/vxlanMode Always | CrossSubnet).
 */
import type { Datapath, NetnsRef, RouteSpec } from '@kemu/cni';
import { parseIpAddr, parsePrefix, prefixContainsIp } from '@kemu/ip';
import type { Afi } from './router-id.js';

export interface InstalledRoute {
  prefix: string;
  afi: Afi;
  nextHop: string;
  asPath: number[];
  /** Address of the neighbour the route was learned from. */
  peer: string;
}

export interface RouteSink {
  /** Adds the route or replaces the one for the same prefix (synchronous sinks may return nothing). */
  install(route: InstalledRoute): Promise<void> | void;
  /** Removes the route for `route.prefix` (already gone is not an error). */
  remove(route: InstalledRoute): Promise<void> | void;
}

export interface TunnelOptions {
  /** Tunnel device routes go out on (e.g. `tunl0` for IP-in-IP, `vxlan.calico`). */
  dev: string;
  /** `Always`: every route uses the tunnel; `CrossSubnet`: only next hops outside `localSubnet`. */
  mode: 'Always' | 'CrossSubnet';
  /** The node's underlay subnet, required for `CrossSubnet`. */
  localSubnet?: string;
}

export interface DatapathRouteSinkOptions {
  /** Namespace to program (default the node's, `host`). */
  netns?: NetnsRef;
  table?: number;
  tunnel?: TunnelOptions;
}

/** The host namespace name of the Datapath contract (`HOST_NETNS` in @kemu/cni). */
const HOST: NetnsRef = 'host';

export class DatapathRouteSink implements RouteSink {
  private readonly netns: NetnsRef;
  private readonly localSubnet;

  constructor(
    private readonly datapath: Datapath,
    private readonly opts: DatapathRouteSinkOptions = {},
  ) {
    this.netns = opts.netns ?? HOST;
    if (opts.tunnel?.mode === 'CrossSubnet') {
      const s = opts.tunnel.localSubnet ? parsePrefix(opts.tunnel.localSubnet) : undefined;
      if (!s)
        throw new Error(
          'tunnel.localSubnet: CrossSubnet needs the node subnet as a CIDR such as 192.168.1.0/24',
        );
      this.localSubnet = s;
    }
  }

  /** The Datapath route that stands for a BGP route. */
  routeSpec(r: InstalledRoute): RouteSpec {
    const spec: RouteSpec = { dst: r.prefix, via: r.nextHop, protocol: 'bgp' };
    if (this.opts.table !== undefined) spec.table = this.opts.table;
    const t = this.opts.tunnel;
    if (t) {
      const nh = parseIpAddr(r.nextHop);
      const sameSubnet = this.localSubnet && nh ? prefixContainsIp(this.localSubnet, nh) : false;
      if (t.mode === 'Always' || !sameSubnet) {
        spec.dev = t.dev;
        spec.onlink = true;
      }
    }
    return spec;
  }

  async install(r: InstalledRoute): Promise<void> {
    await this.datapath.addRoute(this.netns, this.routeSpec(r), { replace: true });
  }

  async remove(r: InstalledRoute): Promise<void> {
    try {
      await this.datapath.delRoute(this.netns, { dst: r.prefix, table: this.opts.table });
    } catch (e) {
      if ((e as { code?: string }).code !== 'ENOENT') throw e;
    }
  }
}

/** Keeps what it was told in a map: for simulations, tests and the CLI without a datapath. */
export class MemoryRouteSink implements RouteSink {
  readonly routes = new Map<string, InstalledRoute>();
  installs = 0;
  removals = 0;
  constructor(
    private readonly onChange?: (
      prefix: string,
      route: InstalledRoute | undefined,
      previous: InstalledRoute | undefined,
    ) => void,
  ) {}
  install(r: InstalledRoute): void {
    const prev = this.onChange ? this.routes.get(r.prefix) : undefined;
    this.routes.set(r.prefix, r);
    this.installs++;
    this.onChange?.(r.prefix, r, prev);
  }
  remove(r: InstalledRoute): void {
    const prev = this.onChange ? this.routes.get(r.prefix) : undefined;
    this.routes.delete(r.prefix);
    this.removals++;
    this.onChange?.(r.prefix, undefined, prev);
  }
}
