import { join } from 'node:path';
import { type IpamStore, ownedBy, ownerRecord } from './store.js';

/**
 * One network's allocations in memory, with the disk store's semantics (owner records, last reserved
 * address per range set, index by attachment, a lock serialising allocations) and none of its files.
 * For one process that owns the node's IPAM, e.g. a composed cluster calling plugins in process.
 */
export class MemoryStore implements IpamStore {
  /** ip -> owner record, in allocation order. */
  private readonly owners = new Map<string, string>();
  private readonly last = new Map<number, string>();
  /** `<id>@<ifname>` -> addresses. */
  private readonly index = new Map<string, string[]>();
  private tail: Promise<unknown> = Promise.resolve();

  constructor(readonly network: string) {}

  async init(): Promise<void> {}

  lock<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }

  async reserve(id: string, ifname: string, ip: string, setIndex: number): Promise<boolean> {
    if (this.owners.has(ip)) return false;
    this.owners.set(ip, ownerRecord(id, ifname));
    this.last.set(setIndex, ip);
    return true;
  }

  async lastReserved(setIndex: number): Promise<string | undefined> {
    return this.last.get(setIndex);
  }

  async indexAdd(id: string, ifname: string, ips: string[]): Promise<void> {
    this.index.set(`${id}@${ifname}`, [...ips]);
  }

  async indexedByID(id: string, ifname: string): Promise<string[]> {
    return (this.index.get(`${id}@${ifname}`) ?? []).filter((ip) => ownedBy(this.owners.get(ip), id, ifname));
  }

  async getByID(id: string, ifname: string): Promise<string[]> {
    const listed = this.index.get(`${id}@${ifname}`);
    if (listed) return listed.filter((ip) => ownedBy(this.owners.get(ip), id, ifname));
    return [...this.owners].filter(([, c]) => ownedBy(c, id, ifname)).map(([ip]) => ip);
  }

  async release(ip: string): Promise<void> {
    this.owners.delete(ip);
  }

  async releaseByID(id: string, ifname: string): Promise<string[]> {
    const ips = await this.getByID(id, ifname);
    for (const ip of ips) this.owners.delete(ip);
    this.index.delete(`${id}@${ifname}`);
    return ips;
  }

  async scan(): Promise<{ ip: string; content: string }[]> {
    return [...this.owners].map(([ip, content]) => ({ ip, content }));
  }

  async indexEntries(): Promise<string[]> {
    return [...this.index.keys()];
  }

  async removeIndex(name: string): Promise<void> {
    this.index.delete(name);
  }
}

/**
 * Memory stores by dataDir and network, so networks (and nodes with their own dataDir) stay apart
 * exactly as they do on disk. Pass one to `createHostLocal({ store })` to share or inspect it.
 */
export class MemoryIpam {
  private readonly stores = new Map<string, MemoryStore>();

  /** The store of `network` under `dataDir`, created empty on first use. */
  open(dataDir: string, network: string): MemoryStore {
    const key = join(dataDir, network);
    let s = this.stores.get(key);
    if (!s) {
      s = new MemoryStore(network);
      this.stores.set(key, s);
    }
    return s;
  }

  /** Current allocations of a network as ip -> owner record (`<id>\r\n<ifname>`). */
  async allocations(dataDir: string, network: string): Promise<Map<string, string>> {
    const s = this.stores.get(join(dataDir, network));
    return new Map((await s?.scan())?.map((e) => [e.ip, e.content]) ?? []);
  }

  /** Forgets every allocation under `dataDir` (a node going away). */
  drop(dataDir: string): void {
    const prefix = join(dataDir, '/');
    for (const k of [...this.stores.keys()]) if (k.startsWith(prefix)) this.stores.delete(k);
  }
}
