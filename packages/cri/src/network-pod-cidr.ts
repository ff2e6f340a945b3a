// Fallback pod networking with no datapath at all: hands out addresses from the pod CIDR, nothing more.
// Used when no CNI runtime is wired in; it makes pod IPs show up in PodSandboxStatus but moves no
// packets. Allocations are not persisted separately: after a restart they are rebuilt from the IPs the
// recovered sandboxes hold.
import { bigIntToBytes, bytesToBigInt, formatIPv4, networkOf, parseCidr, parseIPv4 } from '@kemu/ip';
import { invalidArgument, unavailable } from './errors.js';
import type { NetworkManager, NetworkStatus, PodNetworkRequest, PodNetworkResult } from './types.js';

function ipToInt(ip: string): number {
  const b = parseIPv4(ip);
  if (!b) throw invalidArgument(`invalid IPv4 address ${ip}`);
  return Number(bytesToBigInt(b));
}

function intToIp(n: number): string {
  return formatIPv4(bigIntToBytes(4, BigInt(n)));
}

export interface PodCidrIpamOptions {
  podCidr?: string;
}

export class PodCidrIpam implements NetworkManager {
  readonly name = 'pod-cidr-ipam';
  private base = 0;
  private size = 0;
  private next = 0;
  private readonly allocated = new Map<number, string>();

  constructor(opts: PodCidrIpamOptions = {}) {
    this.setCidr(opts.podCidr ?? '10.88.0.0/16');
  }

  private setCidr(cidr: string) {
    const first = cidr.split(',').map((c) => c.trim()).find((c) => c.includes('.'));
    if (!first) throw invalidArgument(`pod CIDR ${JSON.stringify(cidr)} has no IPv4 range`);
    const c = parseCidr(first);
    if (!c || c.family !== 4) throw invalidArgument(`invalid pod CIDR ${first}`);
    if (!(c.prefix >= 8 && c.prefix <= 30)) throw invalidArgument(`pod CIDR ${first}: prefix must be between /8 and /30`);
    this.base = Number(networkOf(c));
    this.size = 2 ** (32 - c.prefix);
    this.next = 2; // .1 is the gateway
  }

  status(): NetworkStatus {
    return { ready: true, reason: '', message: '' };
  }

  async setUp(req: PodNetworkRequest): Promise<PodNetworkResult> {
    for (const [n, owner] of this.allocated) if (owner === req.sandboxId) return { ips: [intToIp(n)] };
    for (let i = 0; i < this.size - 3; i++) {
      const off = ((this.next - 2 + i) % (this.size - 3)) + 2;
      const n = (this.base + off) >>> 0;
      if (this.allocated.has(n)) continue;
      this.allocated.set(n, req.sandboxId);
      this.next = off + 1;
      return { ips: [intToIp(n)] };
    }
    throw unavailable(`no IP addresses available in pod CIDR ${intToIp(this.base)}/${32 - Math.log2(this.size)}`);
  }

  async tearDown(req: PodNetworkRequest): Promise<void> {
    for (const [n, owner] of this.allocated) if (owner === req.sandboxId) this.allocated.delete(n);
  }

  async updatePodCidr(cidr: string): Promise<void> {
    this.setCidr(cidr);
  }

  async recover(held: PodNetworkRequest[]): Promise<void> {
    this.allocated.clear();
    for (const h of held) for (const ip of h.ips ?? []) if (ip.includes('.')) this.allocated.set(ipToInt(ip), h.sandboxId);
  }

  /** Addresses currently handed out (for tests and diagnostics). */
  allocations(): Record<string, string> {
    return Object.fromEntries([...this.allocated].map(([n, o]) => [intToIp(n), o]));
  }
}
