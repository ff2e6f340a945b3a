import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { READ_LIMITS } from './read-bounded.js';
import { readTextBoundedIfExists } from './read-file-bounded.js';
import type { NetworkConfigList, RuntimeConf } from './runtime.js';
import { type CniResult, convertResult, parseResult } from './types.js';

/**
 * Where the runtime keeps each attachment's ADD result (for DEL's prevResult, CHECK and GC): libcni's
 * files under a cache dir, or memory.
 */
export interface ResultCache {
  put(list: NetworkConfigList, rt: RuntimeConf, result: CniResult): Promise<void>;
  get(list: NetworkConfigList, rt: RuntimeConf): Promise<CniResult | undefined>;
  delete(list: NetworkConfigList, rt: RuntimeConf): Promise<void>;
  /** Attachments of the network with a cached result: what GC compares with the valid list. */
  attachments(list: NetworkConfigList): Promise<RuntimeConf[]>;
}

interface CacheEntry {
  kind: 'cniCacheV1';
  containerId: string;
  config: string;
  ifName: string;
  networkName: string;
  netns: string;
  cniArgs?: [string, string][];
  capabilityArgs?: Record<string, unknown>;
  result?: unknown;
}

function entryOf(list: NetworkConfigList, rt: RuntimeConf, result: CniResult): CacheEntry {
  const entry: CacheEntry = {
    kind: 'cniCacheV1',
    containerId: rt.containerId,
    config: list.bytes.toString('base64'),
    ifName: rt.ifname,
    networkName: list.name,
    netns: rt.netns,
  };
  if (rt.args?.length) entry.cniArgs = rt.args;
  if (rt.capabilityArgs && Object.keys(rt.capabilityArgs).length > 0) entry.capabilityArgs = rt.capabilityArgs;
  // Stored in the network's version, as libcni does: a reader gets what the chain's last plugin returned.
  entry.result = convertResult(result, list.cniVersion);
  return entry;
}

const attachmentOf = (e: Partial<CacheEntry>): RuntimeConf => ({
  containerId: e.containerId!,
  ifname: e.ifName!,
  netns: e.netns ?? '',
  args: e.cniArgs,
  capabilityArgs: e.capabilityArgs,
});

const CACHE_READ = { what: 'cached result', maxBytes: READ_LIMITS.cacheEntry };

/**
 * libcni's layout: `<cacheDir>/results/<network>-<containerID>-<ifname>` holding a `cniCacheV1` JSON
 * entry, written to a temporary name and renamed so a reader never sees half of one.
 */
export class DiskResultCache implements ResultCache {
  constructor(readonly cacheDir: string) {}

  path(network: string, containerId: string, ifname: string): string {
    return join(this.cacheDir, 'results', `${network}-${containerId}-${ifname}`);
  }

  async put(list: NetworkConfigList, rt: RuntimeConf, result: CniResult): Promise<void> {
    mkdirSync(join(this.cacheDir, 'results'), { recursive: true, mode: 0o700 });
    const path = this.path(list.name, rt.containerId, rt.ifname);
    const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
    writeFileSync(tmp, JSON.stringify(entryOf(list, rt, result)), { mode: 0o600 });
    renameSync(tmp, path);
  }

  /** An entry that is missing or not JSON is no result; one that cannot be read (a device, too large) is an error. */
  async get(list: NetworkConfigList, rt: RuntimeConf): Promise<CniResult | undefined> {
    const text = readTextBoundedIfExists(this.path(list.name, rt.containerId, rt.ifname), CACHE_READ);
    if (text === undefined) return undefined;
    try {
      const entry = JSON.parse(text) as { result?: unknown };
      return entry.result ? parseResult(entry.result) : undefined;
    } catch {
      return undefined;
    }
  }

  async delete(list: NetworkConfigList, rt: RuntimeConf): Promise<void> {
    rmSync(this.path(list.name, rt.containerId, rt.ifname), { force: true });
  }

  async attachments(list: NetworkConfigList): Promise<RuntimeConf[]> {
    const dir = join(this.cacheDir, 'results');
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return [];
    }
    const out: RuntimeConf[] = [];
    for (const n of names) {
      if (!n.startsWith(`${list.name}-`) || n.includes('.tmp-')) continue;
      try {
        const e = JSON.parse(readTextBoundedIfExists(join(dir, n), CACHE_READ) ?? '') as Partial<CacheEntry>;
        if (e.networkName !== list.name || !e.containerId || !e.ifName) continue;
        out.push(attachmentOf(e));
      } catch {
        // unreadable entries are not ours to judge
      }
    }
    return out;
  }
}

/**
 * The same entries in memory, for a runtime that is the only user of its results (a composed cluster
 * calling plugins in process): no file per ADD, gone with the process. Each entry is kept as its JSON
 * text, one string instead of a tree of objects per attachment (a 5,000-node cluster holds 150,000 of
 * them), and without the network config, which nothing reads back from memory.
 */
export class MemoryResultCache implements ResultCache {
  private readonly networks = new Map<string, Map<string, string>>();

  private static key(rt: RuntimeConf): string {
    return `${rt.containerId}\0${rt.ifname}`;
  }

  async put(list: NetworkConfigList, rt: RuntimeConf, result: CniResult): Promise<void> {
    let m = this.networks.get(list.name);
    if (!m) {
      m = new Map();
      this.networks.set(list.name, m);
    }
    const { config: _config, ...entry } = entryOf(list, rt, result);
    m.set(MemoryResultCache.key(rt), JSON.stringify(entry));
  }

  async get(list: NetworkConfigList, rt: RuntimeConf): Promise<CniResult | undefined> {
    const text = this.networks.get(list.name)?.get(MemoryResultCache.key(rt));
    if (text === undefined) return undefined;
    const { result } = JSON.parse(text) as { result?: unknown };
    return result ? parseResult(result) : undefined;
  }

  async delete(list: NetworkConfigList, rt: RuntimeConf): Promise<void> {
    const m = this.networks.get(list.name);
    m?.delete(MemoryResultCache.key(rt));
    if (m?.size === 0) this.networks.delete(list.name);
  }

  async attachments(list: NetworkConfigList): Promise<RuntimeConf[]> {
    return [...(this.networks.get(list.name)?.values() ?? [])].map((text) => attachmentOf(JSON.parse(text) as CacheEntry));
  }
}
