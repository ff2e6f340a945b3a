import { closeSync, mkdirSync, openSync, readdirSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { parseIP } from '@kemu/ip';
import { READ_LIMITS, readTextBoundedIfExists, withFileLock } from '@kemu/cni';
import { type IpamStore, ownedBy, ownerRecord } from './store.js';

const LAST_IP_PREFIX = 'last_reserved_ip.';
/** Our per-attachment index lives beside the network directories; network names cannot start with '.'. */
const INDEX_DIR = '.kemu-index';

/** A state file's text, or undefined if it does not exist; devices, FIFOs and oversized files are errors. */
const readText = (path: string): string | undefined =>
  readTextBoundedIfExists(path, { what: 'host-local state', maxBytes: READ_LIMITS.small });

/**
 * The reference plugin's directory layout (`<dataDir>/<network>/<ip>` = `<id>\r\n<ifname>`,
 * `last_reserved_ip.<set>`, `lock`) plus an index by attachment, so ADD and DEL never walk the directory.
 * The index is a hint: every entry is verified against the IP file before use, so allocations or releases
 * made by the reference plugin on the same dataDir stay correct.
 *
 * File calls are synchronous: each is a few microseconds on a local file system, while an asynchronous one
 * costs a thread-pool round trip, which on a busy node dominates a plugin start.
 */
export class DiskStore implements IpamStore {
  readonly dir: string;
  private readonly indexDir: string;

  constructor(
    dataDir: string,
    readonly network: string,
  ) {
    this.dir = join(dataDir, network);
    this.indexDir = join(dataDir, INDEX_DIR, network);
  }

  async init(): Promise<void> {
    mkdirSync(this.dir, { recursive: true, mode: 0o755 });
    mkdirSync(this.indexDir, { recursive: true, mode: 0o755 });
  }

  lock<T>(fn: () => Promise<T>): Promise<T> {
    return withFileLock(join(this.dir, 'lock'), fn);
  }

  private indexPath(id: string, ifname: string): string {
    return join(this.indexDir, `${id}@${ifname}`);
  }

  /** O_EXCL create, like the reference: false if someone holds the address. */
  async reserve(id: string, ifname: string, ip: string, setIndex: number): Promise<boolean> {
    const file = join(this.dir, ip);
    let fd: number;
    try {
      fd = openSync(file, 'wx', 0o644);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    }
    try {
      writeSync(fd, ownerRecord(id, ifname));
    } catch (e) {
      closeSync(fd);
      rmSync(file, { force: true });
      throw e;
    }
    closeSync(fd);
    writeFileSync(join(this.dir, `${LAST_IP_PREFIX}${setIndex}`), ip, { mode: 0o644 });
    return true;
  }

  async lastReserved(setIndex: number): Promise<string | undefined> {
    return readText(join(this.dir, `${LAST_IP_PREFIX}${setIndex}`))?.trim();
  }

  owner(ip: string): string | undefined {
    return readText(join(this.dir, ip))?.trim();
  }

  async indexAdd(id: string, ifname: string, ips: string[]): Promise<void> {
    writeFileSync(this.indexPath(id, ifname), ips.join('\n'), { mode: 0o644 });
  }

  private listed(id: string, ifname: string): string[] | undefined {
    return readText(this.indexPath(id, ifname))?.split('\n').filter(Boolean);
  }

  async indexedByID(id: string, ifname: string): Promise<string[]> {
    return (this.listed(id, ifname) ?? []).filter((ip) => ownedBy(this.owner(ip), id, ifname));
  }

  async getByID(id: string, ifname: string): Promise<string[]> {
    const listed = this.listed(id, ifname);
    if (listed) return listed.filter((ip) => ownedBy(this.owner(ip), id, ifname));
    return (await this.scan()).filter((e) => ownedBy(e.content, id, ifname)).map((e) => e.ip);
  }

  async release(ip: string): Promise<void> {
    try {
      unlinkSync(join(this.dir, ip));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }

  async releaseByID(id: string, ifname: string): Promise<string[]> {
    const ips = await this.getByID(id, ifname);
    for (const ip of ips) await this.release(ip);
    rmSync(this.indexPath(id, ifname), { force: true });
    return ips;
  }

  /** Every allocation file: used by GC, STATUS and an index-less DEL, never on the ADD path. */
  async scan(): Promise<{ ip: string; content: string }[]> {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: { ip: string; content: string }[] = [];
    for (const name of names) {
      if (!parseIP(name)) continue;
      const content = this.owner(name);
      if (content !== undefined) out.push({ ip: name, content });
    }
    return out;
  }

  async indexEntries(): Promise<string[]> {
    try {
      return readdirSync(this.indexDir);
    } catch {
      return [];
    }
  }

  async removeIndex(name: string): Promise<void> {
    rmSync(join(this.indexDir, name), { force: true });
  }
}
