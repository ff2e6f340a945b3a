/** Where host-local keeps one network's allocations: the reference on-disk layout, or memory. */
export interface IpamStore {
  /** Creates what the store needs (directories); STATUS reports a failure here as code 50. */
  init(): Promise<void>;
  /** Runs `fn` with the network's allocations to itself, against other callers of this store. */
  lock<T>(fn: () => Promise<T>): Promise<T>;
  /** Takes `ip` for the attachment unless someone holds it (false then); records it as the set's last. */
  reserve(id: string, ifname: string, ip: string, setIndex: number): Promise<boolean>;
  /** The address last reserved in range set `setIndex`, where the next allocation search starts. */
  lastReserved(setIndex: number): Promise<string | undefined>;
  /** Records which addresses an attachment got, so DEL and CHECK find them without a scan. */
  indexAdd(id: string, ifname: string, ips: string[]): Promise<void>;
  /** Addresses the attachment holds according to the index alone (what ADD's duplicate check uses). */
  indexedByID(id: string, ifname: string): Promise<string[]>;
  /** Addresses the attachment holds (index first, a scan where the index knows nothing). */
  getByID(id: string, ifname: string): Promise<string[]>;
  /** Frees one address; freeing a free one is not an error. */
  release(ip: string): Promise<void>;
  /** Frees every address of the attachment and forgets it; returns what was freed. */
  releaseByID(id: string, ifname: string): Promise<string[]>;
  /** Every allocation as `ip` and its owner record (`<id>\r\n<ifname>`, or a legacy bare `<id>`). */
  scan(): Promise<{ ip: string; content: string }[]>;
  /** Index entries as `<id>@<ifname>`. */
  indexEntries(): Promise<string[]>;
  removeIndex(name: string): Promise<void>;
}

/** Gives the store of one network under one dataDir. */
export type IpamStoreProvider = (dataDir: string, network: string) => IpamStore;

export const LINE_BREAK = '\r\n';

/** The owner record host-local writes for an attachment; a bare ID is what older plugins wrote. */
export const ownerRecord = (id: string, ifname: string): string => `${id.trim()}${LINE_BREAK}${ifname}`;

export function ownedBy(content: string | undefined, id: string, ifname: string): boolean {
  return content === ownerRecord(id, ifname) || content === id.trim();
}
