// The Service registry's allocations, run by the store on every write: cluster IPs from the service CIDR
// (one per IP family), node ports for NodePort and LoadBalancer services and the health-check node port
// of a LoadBalancer with externalTrafficPolicy Local. Allocator state lives per store and is rebuilt from
// the stored Services on first use, as the API server's repair loops rebuild it.
import type { KubeObject } from './api-meta.js';
import type { IPFamily, Service, ServiceSpec } from './api-service.js';
import { InternalError, InvalidError, type StatusCause } from './errors.js';
import { FieldErrors } from './field-errors.js';
import type { WriteEffect, WriteHookContext } from './kind-hooks.js';
import { NodePortAllocator } from './node-port-allocator.js';
import { ServiceIPAllocator } from './service-ip-allocator.js';

/** kubeadm's default service CIDR. */
export const DEFAULT_SERVICE_CIDR = '10.96.0.0/12';

/** Store options that configure the allocations. */
export interface ServiceNetworkOptions {
  /** One CIDR, or two of different families separated by a comma (dual-stack). Default 10.96.0.0/12. */
  serviceClusterIPRange?: string;
  /** `low-high`, default 30000-32767. */
  serviceNodePortRange?: string;
}

export class ServiceAllocators {
  readonly ips: ServiceIPAllocator[];
  readonly ports: NodePortAllocator;

  constructor(opts: ServiceNetworkOptions = {}) {
    const cidrs = (opts.serviceClusterIPRange ?? DEFAULT_SERVICE_CIDR).split(',').map((s) => s.trim()).filter(Boolean);
    if (cidrs.length < 1 || cidrs.length > 2) throw new RangeError('the service cluster IP range takes one or two CIDRs');
    this.ips = cidrs.map((c) => new ServiceIPAllocator(c));
    if (this.ips.length === 2 && this.ips[0].family === this.ips[1].family) {
      throw new RangeError('a dual-stack service cluster IP range needs one CIDR of each family');
    }
    this.ports = new NodePortAllocator(opts.serviceNodePortRange);
  }

  get dualStack(): boolean {
    return this.ips.length === 2;
  }

  forFamily(f: IPFamily): ServiceIPAllocator | undefined {
    return this.ips.find((a) => `IPv${a.family}` === f);
  }

  /** Mark what a stored Service holds (repair on start). */
  adopt(svc: Service): void {
    for (const ip of svc.spec?.clusterIPs ?? []) this.ips.find((a) => a.contains(ip))?.allocate(ip);
    for (const p of heldPorts(svc.spec)) this.ports.allocate(p);
  }
}

const perStore = new WeakMap<object, Promise<ServiceAllocators>>();

/** The allocators of a store, built (and filled from its Services) on first use. */
export function allocatorsOf(ctx: WriteHookContext): Promise<ServiceAllocators> {
  let p = perStore.get(ctx.owner);
  if (!p) {
    p = (async () => {
      const a = new ServiceAllocators(ctx.options as ServiceNetworkOptions);
      for (const s of await ctx.listAll('Service')) a.adopt(s as Service);
      return a;
    })();
    perStore.set(ctx.owner, p);
    p.catch(() => perStore.delete(ctx.owner));
  }
  return p;
}

function needsNodePorts(s: ServiceSpec | undefined): boolean {
  return s?.type === 'NodePort' || (s?.type === 'LoadBalancer' && s.allocateLoadBalancerNodePorts !== false);
}

function needsHealthCheckPort(s: ServiceSpec | undefined): boolean {
  return s?.type === 'LoadBalancer' && s.externalTrafficPolicy === 'Local';
}

function heldPorts(s: ServiceSpec | undefined): number[] {
  const out: number[] = [];
  for (const p of s?.ports ?? []) if (p?.nodePort) out.push(p.nodePort);
  if (s?.healthCheckNodePort) out.push(s.healthCheckNodePort);
  return out;
}

function heldIPs(s: ServiceSpec | undefined): string[] {
  return s?.type === 'ExternalName' ? [] : (s?.clusterIPs ?? []).filter((ip) => ip && ip !== 'None');
}

const familyOf = (ip: string): IPFamily => (ip.includes(':') ? 'IPv6' : 'IPv4');

/** Resolve ipFamilyPolicy and ipFamilies against the cluster's configuration (the registry's rules). */
function resolveFamilies(e: FieldErrors, a: ServiceAllocators, svc: Service): void {
  const s = svc.spec;
  if (s.type === 'ExternalName') {
    delete s.ipFamilies;
    delete s.ipFamilyPolicy;
    return;
  }
  const headless = s.clusterIP === 'None';
  const fromIPs = (s.clusterIPs ?? []).filter((ip) => ip !== 'None').map(familyOf);
  if (!s.ipFamilyPolicy) {
    s.ipFamilyPolicy = headless && s.selector && Object.keys(s.selector).length && a.dualStack && !s.ipFamilies?.length ? 'RequireDualStack' : 'SingleStack';
    if ((s.ipFamilies?.length ?? 0) > 1 || fromIPs.length > 1) s.ipFamilyPolicy = 'RequireDualStack';
  }
  if (s.ipFamilyPolicy === 'RequireDualStack' && !a.dualStack) {
    e.invalid('spec.ipFamilyPolicy', s.ipFamilyPolicy, 'this cluster is not configured for dual-stack services');
    return;
  }
  const fams: IPFamily[] = [...(s.ipFamilies ?? [])];
  fromIPs.forEach((f, i) => {
    if (fams[i] === undefined) fams[i] = f;
  });
  if (fams.length === 0) fams.push(`IPv${a.ips[0].family}` as IPFamily);
  if (s.ipFamilyPolicy !== 'SingleStack' && a.dualStack && fams.length === 1) {
    fams.push(`IPv${a.ips.find((x) => `IPv${x.family}` !== fams[0])!.family}` as IPFamily);
  }
  fams.forEach((f, i) => {
    if (!a.forFamily(f)) e.invalid(`spec.ipFamilies[${i}]`, f, 'not configured on this cluster');
  });
  s.ipFamilies = fams;
}

class Allocation implements WriteEffect {
  readonly taken: (() => void)[] = [];
  readonly keep = { ips: new Set<string>(), ports: new Set<number>() };

  constructor(
    private readonly a: ServiceAllocators,
    private readonly releaseOnCommit: { ips: string[]; ports: number[] } = { ips: [], ports: [] },
  ) {}

  undo(): void {
    for (const u of this.taken.splice(0)) u();
  }

  commit(): void {
    for (const ip of this.releaseOnCommit.ips) if (!this.keep.ips.has(ip)) this.a.ips.find((x) => x.contains(ip))?.release(ip);
    for (const p of this.releaseOnCommit.ports) if (!this.keep.ports.has(p)) this.a.ports.release(p);
  }
}

/** Allocate what the Service needs beyond what it already holds; throws Invalid (or Internal when full). */
function allocate(a: ServiceAllocators, svc: Service, held: { ips: string[]; ports: number[] }): Allocation {
  const alloc = new Allocation(a, held);
  const e = new FieldErrors();
  let full: string | undefined;
  const s = svc.spec;
  try {
    resolveFamilies(e, a, svc);
    if (e.ok && s.type !== 'ExternalName' && s.clusterIP !== 'None') {
      const ips = [...(s.clusterIPs ?? [])];
      (s.ipFamilies ?? []).forEach((fam, i) => {
        const pool = a.forFamily(fam)!;
        const want = ips[i];
        if (want) {
          if (held.ips.includes(want)) alloc.keep.ips.add(want);
          else {
            const r = pool.allocate(want);
            if (!r.ok) {
              const why = r.reason === 'allocated' ? 'provided IP is already allocated' : `provided IP (${want}) is not in the valid range. The range of valid IPs is ${pool.cidr}`;
              e.invalid('spec.clusterIPs', ips, `failed to allocate IP ${want}: ${why}`);
              return;
            }
            alloc.taken.push(() => pool.release(want));
            alloc.keep.ips.add(want);
          }
        } else {
          const ip = pool.allocateNext();
          if (!ip) {
            full = `failed to allocate a serviceIP: range is full`;
            return;
          }
          alloc.taken.push(() => pool.release(ip));
          alloc.keep.ips.add(ip);
          ips[i] = ip;
        }
      });
      s.clusterIPs = ips;
      s.clusterIP = ips[0];
    } else if (s.clusterIP === 'None') {
      s.clusterIPs = ['None'];
    }
    const takePort = (path: string, want: number | undefined): number | undefined => {
      if (want) {
        if (held.ports.includes(want)) {
          alloc.keep.ports.add(want);
          return want;
        }
        const r = a.ports.allocate(want);
        if (!r.ok) {
          e.invalid(path, want, r.reason === 'allocated' ? 'provided port is already allocated' : `provided port is not in the valid range. The range of valid ports is ${a.ports}`);
          return undefined;
        }
        alloc.taken.push(() => a.ports.release(want));
        alloc.keep.ports.add(want);
        return want;
      }
      const p = a.ports.allocateNext();
      if (p === undefined) {
        full = 'failed to allocate a nodePort: range is full';
        return undefined;
      }
      alloc.taken.push(() => a.ports.release(p));
      alloc.keep.ports.add(p);
      return p;
    };
    if (needsNodePorts(s)) {
      // Ports that share a port number (TCP and UDP of one service port) share the node port.
      const byPort = new Map<number, number>();
      (s.ports ?? []).forEach((p, i) => {
        if (!p.nodePort && byPort.has(p.port)) p.nodePort = byPort.get(p.port);
        else p.nodePort = takePort(`spec.ports[${i}].nodePort`, p.nodePort);
        if (p.nodePort) byPort.set(p.port, p.nodePort);
      });
    }
    if (needsHealthCheckPort(s)) s.healthCheckNodePort = takePort('spec.healthCheckNodePort', s.healthCheckNodePort);
    if (full) throw new InternalError(full);
    if (!e.ok) throw new InvalidError('Service', svc.metadata.name ?? '', '', e.list as StatusCause[]);
    return alloc;
  } catch (err) {
    alloc.undo();
    throw err;
  }
}

export async function serviceBeforeCreate(ctx: WriteHookContext, obj: KubeObject): Promise<WriteEffect> {
  return allocate(await allocatorsOf(ctx), obj as Service, { ips: [], ports: [] });
}

export async function serviceBeforeUpdate(ctx: WriteHookContext, next: KubeObject, prev: KubeObject): Promise<WriteEffect> {
  const p = (prev as Service).spec;
  return allocate(await allocatorsOf(ctx), next as Service, { ips: heldIPs(p), ports: heldPorts(p) });
}

export function serviceAfterDelete(ctx: WriteHookContext, obj: KubeObject): void {
  const p = perStore.get(ctx.owner);
  if (!p) return;
  void p.then((a) => {
    const s = (obj as Service).spec;
    for (const ip of heldIPs(s)) a.ips.find((x) => x.contains(ip))?.release(ip);
    for (const port of heldPorts(s)) a.ports.release(port);
  }, () => undefined);
}

/** Carry over allocated values an update leaves out, as the registry does for `kubectl replace`/apply. */
export function servicePrepareForUpdate(next: KubeObject, prev: KubeObject): void {
  const a = (prev as Service).spec;
  const b = (next as Service).spec;
  if (!a || !b || typeof b !== 'object') return;
  if (a.type !== 'ExternalName' && b.type !== 'ExternalName') {
    if (!b.clusterIP && !b.clusterIPs?.length) {
      if (a.clusterIP !== undefined) b.clusterIP = a.clusterIP;
      if (a.clusterIPs !== undefined) b.clusterIPs = [...a.clusterIPs];
    }
    b.ipFamilies ??= a.ipFamilies ? [...a.ipFamilies] : undefined;
    b.ipFamilyPolicy ??= a.ipFamilyPolicy;
    if (b.ipFamilies === undefined) delete b.ipFamilies;
    if (b.ipFamilyPolicy === undefined) delete b.ipFamilyPolicy;
  }
  if (needsNodePorts(a) && needsNodePorts(b)) {
    for (const port of b.ports ?? []) {
      if (port && !port.nodePort) {
        const old = (a.ports ?? []).find((o) => o.port === port.port && (o.protocol ?? 'TCP') === (port.protocol ?? 'TCP'));
        if (old?.nodePort) port.nodePort = old.nodePort;
      }
    }
  }
  if (needsHealthCheckPort(a) && needsHealthCheckPort(b) && !b.healthCheckNodePort) b.healthCheckNodePort = a.healthCheckNodePort;
}
