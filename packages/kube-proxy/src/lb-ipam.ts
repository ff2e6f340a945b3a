// The part cloud-provider-kind or MetalLB plays in a cluster without a cloud: Services of type
// LoadBalancer get an address from a pool in status.loadBalancer.ingress (kube-proxy then programs it
// like an external IP). One address per Service, kept while the Service lives, released when it goes or
// stops being a LoadBalancer; an exhausted pool leaves the Service pending and says so through onError, and
// a pending Service gets the next address freed. A status write that fails (a conflict, a Forbidden while
// a role is missing) gives its address back and is retried with a growing delay, as a controller's
// rate-limited queue retries it, so a refused write neither sticks nor holds an address.
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
  /** Services waiting for an address, in the order they asked. */
  private readonly pending = new Set<string>();
  private readonly retries = new Map<string, { timer: NodeJS.Timeout; delayMs: number }>();
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly o: LoadBalancerIpamOptions) {
    const c = parseCidr(o.pool);
    if (!c || c.family !== 4 || c.prefix > 30) throw new Error(`invalid load-balancer pool "${o.pool}": an IPv4 CIDR of /30 or larger is needed`);
    for (let v = networkOf(c) + 1n; v < broadcastOf(c); v++) this.addresses.push(formatIPv4(bigIntToBytes(4, v)));
    this.factory = new InformerFactory(o.store);
    this.services = this.factory.informer('Service', { onError: (e) => o.onError?.(e) });
    this.services.addEventHandler({ onAdd: (s) => this.enqueue(s), onUpdate: (_, s) => this.enqueue(s), onDelete: (s) => this.enqueue(s, true) });
  }

  private enqueue(s: Service, gone = false): void {
    const key = `${s.metadata.namespace}/${s.metadata.name}`;
    this.chain = this.chain
      .then(() => this.reconcile(key, s, gone))
      .then(
        () => this.succeeded(key),
        (e) => this.failed(key, e),
      );
  }

  /** Reconciles a Service again from the informer's latest copy (a retry, or an address freed). */
  private requeue(key: string): void {
    if (this.stopped) return;
    const [ns, name] = key.split('/') as [string, string];
    const s = this.services.lister.get(ns, name);
    if (s) this.enqueue(s);
    else this.pending.delete(key);
  }

  private succeeded(key: string): void {
    const r = this.retries.get(key);
    if (r) clearTimeout(r.timer);
    this.retries.delete(key);
  }

  private failed(key: string, err: unknown): void {
    this.o.onError?.(err);
    if (this.stopped) return;
    const prev = this.retries.get(key);
    if (prev) clearTimeout(prev.timer);
    const delayMs = Math.min((prev?.delayMs ?? 50) * 2, MAX_RETRY_DELAY_MS);
    const timer = setTimeout(() => this.requeue(key), delayMs);
    timer.unref();
    this.retries.set(key, { timer, delayMs });
  }

  /** Gives `key`'s address back; the Services waiting for one try again. */
  private release(key: string): void {
    if (!this.busy.delete(key)) return;
    for (const k of [...this.pending]) if (k !== key) this.requeue(k);
  }

  async start(): Promise<void> {
    this.factory.start();
    await this.factory.waitForCacheSync();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const r of this.retries.values()) clearTimeout(r.timer);
    this.retries.clear();
    await this.factory.stop();
    await this.chain;
  }

  /** Waits for the work queued so far (for tests). */
  idle(): Promise<void> {
    return this.chain;
  }

  private async reconcile(key: string, s: Service, gone: boolean): Promise<void> {
    const lb = !gone && s.spec?.type === 'LoadBalancer';
    const have = s.status?.loadBalancer?.ingress?.[0]?.ip;
    if (!lb) {
      this.pending.delete(key);
      this.release(key);
      if (!gone && have) await this.writeIngress(s, undefined);
      return;
    }
    if (have && this.busy.get(key) === have) return;
    if (have && this.addresses.includes(have) && ![...this.busy].some(([k, ip]) => ip === have && k !== key)) {
      this.pending.delete(key);
      this.busy.set(key, have);
      return;
    }
    const taken = new Set(this.busy.values());
    const want = s.spec.loadBalancerIP && this.addresses.includes(s.spec.loadBalancerIP) ? s.spec.loadBalancerIP : undefined;
    const ip = want && !taken.has(want) ? want : this.addresses.find((a) => !taken.has(a));
    if (!ip) {
      if (!this.pending.has(key)) this.o.onError?.(new Error(`no address left in load-balancer pool ${this.o.pool} for service ${key}`));
      this.pending.add(key);
      return;
    }
    this.pending.delete(key);
    this.busy.set(key, ip);
    try {
      await this.writeIngress(s, ip);
    } catch (e) {
      // Not written: the address is not the Service's, so it goes back to the pool until the retry.
      if (this.busy.get(key) === ip) this.release(key);
      throw e;
    }
  }

  private writeIngress(s: Service, ip: string | undefined): Promise<unknown> {
    const loadBalancer = ip ? { ingress: [{ ip, ipMode: 'VIP' as const }] } : {};
    return this.o.store.patch('Service', s.metadata.namespace, s.metadata.name!, { status: { loadBalancer } }, 'application/merge-patch+json', { subresource: 'status' });
  }
}

/** The longest wait between two tries of a refused status write (upstream's controller queues cap at minutes). */
const MAX_RETRY_DELAY_MS = 30_000;
