// The part cloud-provider-kind or MetalLB plays in a cluster without a cloud: Services of type
// LoadBalancer get an address from a pool in status.loadBalancer.ingress (kube-proxy then programs it
// like an external IP). One address per Service, kept while the Service lives, released when it goes or
// stops being a LoadBalancer; an exhausted pool leaves the Service pending and says so through onError.
import { InformerFactory, type Service, type Store } from '@kemu/core';
import { bigIntToBytes, formatIPv4, networkOf, parseCidr, broadcastOf } from '@kemu/ip';

export interface LoadBalancerIpamOptions {
  store: Store;
  /** IPv4 CIDR the addresses come from (network and broadcast addresses excluded). */
  pool: string;
  onError?: (err: unknown) => void;
}

export class LoadBalancerIpam {
  private readonly factory: InformerFactory;
  private readonly services;
  private readonly addresses: string[] = [];
  private readonly busy = new Map<string, string>();
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly o: LoadBalancerIpamOptions) {
    const c = parseCidr(o.pool);
    if (!c || c.family !== 4 || c.prefix > 30) throw new Error(`invalid load-balancer pool "${o.pool}": an IPv4 CIDR of /30 or larger is needed`);
    for (let v = networkOf(c) + 1n; v < broadcastOf(c); v++) this.addresses.push(formatIPv4(bigIntToBytes(4, v)));
    this.factory = new InformerFactory(o.store);
    this.services = this.factory.informer('Service', { onError: (e) => o.onError?.(e) });
    const run = (s: Service, gone = false) => {
      this.chain = this.chain.then(() => this.reconcile(s, gone)).catch((e) => o.onError?.(e));
    };
    this.services.addEventHandler({ onAdd: (s) => run(s), onUpdate: (_, s) => run(s), onDelete: (s) => run(s, true) });
  }

  async start(): Promise<void> {
    this.factory.start();
    await this.factory.waitForCacheSync();
  }

  async stop(): Promise<void> {
    await this.factory.stop();
    await this.chain;
  }

  /** Waits for the work queued so far (for tests). */
  idle(): Promise<void> {
    return this.chain;
  }

  private async reconcile(s: Service, gone: boolean): Promise<void> {
    const key = `${s.metadata.namespace}/${s.metadata.name}`;
    const lb = !gone && s.spec?.type === 'LoadBalancer';
    const have = s.status?.loadBalancer?.ingress?.[0]?.ip;
    if (!lb) {
      this.busy.delete(key);
      if (!gone && have) await this.o.store.patch('Service', s.metadata.namespace, s.metadata.name!, { status: { loadBalancer: {} } }, 'application/merge-patch+json', { subresource: 'status' });
      return;
    }
    if (have && this.busy.get(key) === have) return;
    if (have && this.addresses.includes(have) && ![...this.busy].some(([k, ip]) => ip === have && k !== key)) {
      this.busy.set(key, have);
      return;
    }
    const taken = new Set(this.busy.values());
    const want = s.spec.loadBalancerIP && this.addresses.includes(s.spec.loadBalancerIP) ? s.spec.loadBalancerIP : undefined;
    const ip = want && !taken.has(want) ? want : this.addresses.find((a) => !taken.has(a));
    if (!ip) {
      this.o.onError?.(new Error(`no address left in load-balancer pool ${this.o.pool} for service ${key}`));
      return;
    }
    this.busy.set(key, ip);
    await this.o.store.patch('Service', s.metadata.namespace, s.metadata.name!, { status: { loadBalancer: { ingress: [{ ip, ipMode: 'VIP' }] } } }, 'application/merge-patch+json', { subresource: 'status' });
  }
}
