import { type Cidr, formatIP, parseCidr } from '@kemu/ip';
import { type Datapath, HOST_NETNS, ignoreNotFound, isDatapathError } from '@kemu/cni';
import {
  applyDefaults,
  type BlockAffinity,
  type IPAMBlock,
  type IPPool,
  isStatusError,
  type Store,
  validationErrors,
} from '@kemu/core';

const API = 'crd.projectcalico.org/v1' as const;

/** Thrown for a pool configuration that cannot be used; the message names the offending field. */
export class PoolConfigError extends Error {
  override readonly name = 'PoolConfigError';
}

/** Thrown when no address is left anywhere in the usable pools. */
export class PoolExhaustedError extends Error {
  override readonly name = 'PoolExhaustedError';
}

export type EncapMode = 'Never' | 'Always' | 'CrossSubnet';

export interface PoolSpecInput {
  cidr?: unknown;
  blockSize?: unknown;
  ipipMode?: unknown;
  vxlanMode?: unknown;
  natOutgoing?: unknown;
  disabled?: unknown;
}

/**
 * Defaults and validates an IPPool the way the API would, and adds the checks the store does not make
 * (a pool that is both IPIP and VXLAN, host bits in the cidr). Errors carry the field path, e.g.
 * `spec.blockSize: Invalid value: 33: must be between 20 and 32, inclusive`.
 */
export function validatePool(name: string, spec: PoolSpecInput): IPPool {
  const pool = {
    apiVersion: API,
    kind: 'IPPool',
    metadata: { name },
    spec: { ...spec },
  } as unknown as IPPool;
  applyDefaults(pool);
  const causes = validationErrors(pool).map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  const s = pool.spec as PoolSpecInput;
  if (s.natOutgoing !== undefined && typeof s.natOutgoing !== 'boolean') {
    causes.push(`spec.natOutgoing: Invalid value: ${JSON.stringify(s.natOutgoing)}: must be a boolean`);
  }
  if (s.disabled !== undefined && typeof s.disabled !== 'boolean') {
    causes.push(`spec.disabled: Invalid value: ${JSON.stringify(s.disabled)}: must be a boolean`);
  }
  if (causes.length === 0) {
    const c = parseCidr(pool.spec.cidr)!;
    const net = c.ip & maskOf(c.family, c.prefix);
    if (net !== c.ip) {
      causes.push(
        `spec.cidr: Invalid value: "${pool.spec.cidr}": has host bits set, did you mean ${formatIP(c.family, net)}/${c.prefix}?`,
      );
    }
    if (pool.spec.ipipMode !== 'Never' && pool.spec.vxlanMode !== 'Never') {
      causes.push(
        `spec.vxlanMode: Invalid value: "${pool.spec.vxlanMode}": ipipMode and vxlanMode cannot both be enabled`,
      );
    }
  }
  if (causes.length > 0) throw new PoolConfigError(`IPPool "${name}" is invalid: ${causes.join('; ')}`);
  return pool;
}

function maskOf(family: 4 | 6, prefix: number): bigint {
  const bits = family === 4 ? 32n : 128n;
  const all = (1n << bits) - 1n;
  return all ^ ((1n << (bits - BigInt(prefix))) - 1n);
}

/** Object name for a CIDR, the way calico spells it: `10.244.1.0/26` -> `10-244-1-0-26`. */
export function cidrName(cidr: string): string {
  return cidr.replace(/[./:]/g, '-');
}

export function affinityName(node: string, cidr: string): string {
  return `${node}-${cidrName(cidr)}`;
}

export interface Allocation {
  ip: string;
  /** The block the address came from. */
  block: string;
  /** Whether the block is affine to another node (borrowed). */
  borrowed: boolean;
}

export interface AssignRequest {
  handle: string;
  node: string;
  /** Restrict to these pools (by name); default every enabled pool. */
  pools?: string[];
  attrs?: Record<string, string>;
}

export interface CalicoIpamOptions {
  /** Give up after this many optimistic-concurrency retries of one operation. */
  maxRetries?: number;
}

const isConflict = (e: unknown) => isStatusError(e) && e.reason === 'Conflict';
const isExists = (e: unknown) => isStatusError(e) && e.reason === 'AlreadyExists';
const isNotFound = (e: unknown) => isStatusError(e) && e.reason === 'NotFound';

/** A short random pause so racing writers do not collide again in lock step. */
const jitter = () => new Promise((r) => setTimeout(r, Math.random() * 3));

function blockSizeOf(b: IPAMBlock): number {
  return b.spec.allocations.length;
}

function blockAddr(b: IPAMBlock, ord: number): string {
  const c = parseCidr(b.spec.cidr)!;
  return formatIP(c.family, c.ip + BigInt(ord));
}

/**
 * Calico-style block IPAM on a `@kemu/core` Store. Every write is a compare-and-swap on the object's
 * resourceVersion (or a create that fails when the name is taken), so any number of callers, in this
 * process or others sharing the store, can allocate at once without a lock.
 */
export class CalicoIpam {
  private readonly maxRetries: number;

  constructor(
    readonly store: Store,
    opts: CalicoIpamOptions = {},
  ) {
    this.maxRetries = opts.maxRetries ?? 200;
  }

  /** Creates or replaces a pool after validating it. */
  async applyPool(name: string, spec: PoolSpecInput): Promise<IPPool> {
    const pool = validatePool(name, spec);
    try {
      return (await this.store.create(pool)) as IPPool;
    } catch (e) {
      if (!isExists(e)) throw e;
      const cur = await this.store.get('IPPool', '', name);
      return (await this.store.update({ ...pool, metadata: { ...cur.metadata } })) as IPPool;
    }
  }

  async pools(names?: string[]): Promise<IPPool[]> {
    const all = (await this.store.list('IPPool')).items as IPPool[];
    return all
      .filter((p) => !p.spec.disabled && (!names || names.includes(p.metadata.name!)))
      .sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!));
  }

  private async blocks(): Promise<IPAMBlock[]> {
    return (await this.store.list('IPAMBlock')).items as IPAMBlock[];
  }

  /** Blocks affine to `node` (confirmed affinities only). */
  async affineBlocks(node: string): Promise<string[]> {
    const affs = (await this.store.list('BlockAffinity')).items as BlockAffinity[];
    return affs
      .filter((a) => a.spec.node === node && a.spec.state === 'confirmed')
      .map((a) => a.spec.cidr)
      .sort();
  }

  /** Allocates one address for `handle` on `node`. Idempotent per handle: a second call returns the same IP. */
  async assign(req: AssignRequest): Promise<Allocation> {
    if (!req.handle || /[\0/]/.test(req.handle))
      throw new Error(`invalid handle ${JSON.stringify(req.handle)}`);
    const existing = await this.ipsByHandle(req.handle);
    if (existing.length > 0) return existing[0]!;
    const pools = await this.pools(req.pools);
    if (pools.length === 0) throw new PoolExhaustedError('no enabled IP pool to allocate from');
    const host = `host:${req.node}`;
    for (let attempt = 0; attempt < this.maxRetries; attempt++) {
      const blocks = await this.blocks();
      const inPools = blocks.filter((b) => pools.some((p) => within(p.spec.cidr, b.spec.cidr)));
      // 1. A free address in one of our own blocks.
      const mine = inPools.filter((b) => b.spec.affinity === host && b.spec.unallocated.length > 0);
      mine.sort((a, b) => a.spec.cidr.localeCompare(b.spec.cidr));
      if (mine.length > 0) {
        const got = await this.tryAllocate(mine[0]!, req, false);
        if (got) return got;
        continue;
      }
      // 2. Claim a new block.
      const claimed = await this.claimBlock(pools, blocks, req.node);
      if (claimed === 'retry') {
        await jitter();
        continue;
      }
      if (claimed) continue; // allocate from it on the next round
      // 3. The pools are fully carved up: borrow from another node's block.
      const other = inPools.filter(
        (b) => b.spec.affinity !== host && b.spec.unallocated.length > 0 && !b.spec.strictAffinity,
      );
      if (other.length === 0) {
        throw new PoolExhaustedError(
          `no free address left in IP pools ${pools.map((p) => p.spec.cidr).join(', ')}`,
        );
      }
      const got = await this.tryAllocate(other[Math.floor(Math.random() * other.length)]!, req, true);
      if (got) return got;
    }
    throw new Error(`could not allocate for ${req.handle}: too much contention (${this.maxRetries} retries)`);
  }

  /** Takes the next free ordinal of a block with a compare-and-swap; undefined when someone else won. */
  private async tryAllocate(
    b: IPAMBlock,
    req: AssignRequest,
    borrowed: boolean,
  ): Promise<Allocation | undefined> {
    const ord = b.spec.unallocated[0]!;
    const attrs = [...b.spec.attributes];
    let ai = attrs.findIndex((a) => a.handle_id === req.handle && sameAttrs(a.secondary, req.attrs));
    if (ai < 0) {
      attrs.push(req.attrs ? { handle_id: req.handle, secondary: req.attrs } : { handle_id: req.handle });
      ai = attrs.length - 1;
    }
    const allocations = [...b.spec.allocations];
    allocations[ord] = ai;
    const next = {
      ...b,
      spec: {
        ...b.spec,
        allocations,
        unallocated: b.spec.unallocated.slice(1),
        attributes: attrs,
        sequenceNumber: (b.spec.sequenceNumber ?? 0) + 1,
      },
    };
    try {
      await this.store.update(next);
    } catch (e) {
      if (isConflict(e) || isNotFound(e)) {
        await jitter();
        return undefined;
      }
      throw e;
    }
    return { ip: blockAddr(b, ord), block: b.spec.cidr, borrowed };
  }

  /**
   * Claims the first unclaimed block of the pools for `node`: a pending BlockAffinity, then the block
   * itself (a create: of two nodes racing for it exactly one succeeds), then the affinity is confirmed.
   * Returns the block CIDR, 'retry' when it lost a race, or undefined when no block is left.
   */
  private async claimBlock(
    pools: IPPool[],
    blocks: IPAMBlock[],
    node: string,
  ): Promise<string | 'retry' | undefined> {
    const taken = new Set(blocks.map((b) => b.spec.cidr));
    for (const pool of pools) {
      const cidr = nextFreeBlock(pool, taken);
      if (!cidr) continue;
      const affName = affinityName(node, cidr);
      const aff: BlockAffinity = {
        apiVersion: API,
        kind: 'BlockAffinity',
        metadata: { name: affName },
        spec: { state: 'pending', node, cidr, deleted: 'false' },
      };
      let created: BlockAffinity;
      try {
        created = (await this.store.create(aff)) as BlockAffinity;
      } catch (e) {
        if (isExists(e)) return 'retry'; // a sibling call on this node is claiming it
        throw e;
      }
      const c = parseCidr(cidr)!;
      const size = 2 ** ((c.family === 4 ? 32 : 128) - c.prefix);
      const block: IPAMBlock = {
        apiVersion: API,
        kind: 'IPAMBlock',
        metadata: { name: cidrName(cidr) },
        spec: {
          cidr,
          affinity: `host:${node}`,
          allocations: new Array(size).fill(null),
          unallocated: Array.from({ length: size }, (_, i) => i),
          attributes: [],
          deleted: false,
          strictAffinity: false,
          sequenceNumber: 0,
        },
      };
      try {
        await this.store.create(block);
      } catch (e) {
        await this.store.delete('BlockAffinity', '', affName).catch(() => undefined);
        if (isExists(e)) return 'retry';
        throw e;
      }
      await this.store.update({ ...created, spec: { ...created.spec, state: 'confirmed' } });
      return cidr;
    }
    return undefined;
  }

  /** Addresses held by a handle. */
  async ipsByHandle(handle: string): Promise<Allocation[]> {
    const out: Allocation[] = [];
    for (const b of await this.blocks()) {
      b.spec.allocations.forEach((ai, ord) => {
        if (ai !== null && b.spec.attributes[ai]?.handle_id === handle) {
          out.push({ ip: blockAddr(b, ord), block: b.spec.cidr, borrowed: false });
        }
      });
    }
    return out;
  }

  /** Releases every address of a handle; returns the released IPs (none is fine: release is idempotent). */
  async releaseByHandle(handle: string): Promise<string[]> {
    const released: string[] = [];
    for (const initial of await this.blocks()) {
      let b = initial;
      for (let attempt = 0; attempt < this.maxRetries; attempt++) {
        const ords = b.spec.allocations.flatMap((ai, ord) =>
          ai !== null && b.spec.attributes[ai]?.handle_id === handle ? [ord] : [],
        );
        if (ords.length === 0) break;
        try {
          await this.store.update(freeOrdinals(b, ords));
          released.push(...ords.map((o) => blockAddr(b, o)));
          break;
        } catch (e) {
          if (isNotFound(e)) break;
          if (!isConflict(e)) throw e;
          await jitter();
          b = (await this.store.get('IPAMBlock', '', b.metadata.name!)) as IPAMBlock;
        }
      }
    }
    return released;
  }

  /**
   * Garbage collection: releases addresses whose handle is not in `inUse` (only handles starting with
   * `prefix`, when given, so one network's GC leaves another's alone), then gives up empty blocks that
   * are affine to nodes not in `nodes` (when given). An address whose handle is in use is never freed.
   */
  async gc(opts: {
    inUse: Iterable<string>;
    prefix?: string;
    nodes?: Iterable<string>;
  }): Promise<{ released: string[]; blocksFreed: string[] }> {
    const keep = new Set(opts.inUse);
    const released: string[] = [];
    const handles = new Set<string>();
    for (const b of await this.blocks()) {
      for (const ai of b.spec.allocations) {
        const h = ai === null ? undefined : b.spec.attributes[ai]?.handle_id;
        if (h && !keep.has(h) && (!opts.prefix || h.startsWith(opts.prefix))) handles.add(h);
      }
    }
    for (const h of handles) released.push(...(await this.releaseByHandle(h)));
    const blocksFreed: string[] = [];
    if (opts.nodes) {
      const live = new Set(opts.nodes);
      for (const b of await this.blocks()) {
        const node = b.spec.affinity?.startsWith('host:') ? b.spec.affinity.slice(5) : undefined;
        if (!node || live.has(node)) continue;
        if (await this.releaseBlockIfEmpty(b, node)) blocksFreed.push(b.spec.cidr);
      }
    }
    return { released, blocksFreed };
  }

  /** Deletes an empty block and its affinity; the delete is conditional so a racing allocation wins. */
  private async releaseBlockIfEmpty(b: IPAMBlock, node: string): Promise<boolean> {
    if (b.spec.unallocated.length !== blockSizeOf(b)) return false;
    const affName = affinityName(node, b.spec.cidr);
    try {
      const aff = await this.store.get('BlockAffinity', '', affName);
      await this.store.update({ ...aff, spec: { ...aff.spec, state: 'pendingDeletion' } });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    try {
      await this.store.delete('IPAMBlock', '', b.metadata.name!, {
        preconditions: { resourceVersion: b.metadata.resourceVersion },
      });
    } catch (e) {
      if (isConflict(e)) {
        // Someone allocated meanwhile: the block stays, and so does the affinity.
        const aff = await this.store.get('BlockAffinity', '', affName).catch(() => undefined);
        if (aff)
          await this.store
            .update({ ...aff, spec: { ...aff.spec, state: 'confirmed' } })
            .catch(() => undefined);
        return false;
      }
      if (!isNotFound(e)) throw e;
    }
    await this.store.delete('BlockAffinity', '', affName).catch(() => undefined);
    return true;
  }

  /**
   * Installs one blackhole route per block affine to `node` (so traffic to an unallocated address of
   * the node's blocks dies here instead of looping) and removes blackholes of blocks it no longer holds.
   */
  async syncBlackholes(dp: Datapath, node: string, netns = HOST_NETNS): Promise<string[]> {
    const want = new Set(await this.affineBlocks(node));
    const pools = (await this.store.list('IPPool')).items.map((p) => p.spec.cidr);
    const have = (await dp.listRoutes(netns)).filter((r) => r.type === 'blackhole');
    for (const r of have) {
      // Only blackholes inside our pools are ours to take away.
      if (!want.has(r.dst) && pools.some((p) => within(p, r.dst))) {
        await ignoreNotFound(() => dp.delRoute(netns, { dst: r.dst, type: 'blackhole' }));
      }
    }
    for (const cidr of want) {
      try {
        await dp.addRoute(netns, { dst: cidr, type: 'blackhole' }, { replace: true });
      } catch (e) {
        if (!isDatapathError(e, 'EEXIST')) throw e;
      }
    }
    return [...want];
  }
}

function sameAttrs(a?: Record<string, string>, b?: Record<string, string>): boolean {
  return JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});
}

function freeOrdinals(b: IPAMBlock, ords: number[]): IPAMBlock {
  const allocations = [...b.spec.allocations];
  for (const o of ords) allocations[o] = null;
  // Attributes nobody refers to any more are dropped and the indexes renumbered.
  const used = [...new Set(allocations.filter((a): a is number => a !== null))].sort((x, y) => x - y);
  const remap = new Map(used.map((old, i) => [old, i]));
  return {
    ...b,
    spec: {
      ...b.spec,
      allocations: allocations.map((a) => (a === null ? null : remap.get(a)!)),
      unallocated: [...b.spec.unallocated, ...ords],
      attributes: used.map((i) => b.spec.attributes[i]!),
      sequenceNumber: (b.spec.sequenceNumber ?? 0) + 1,
    },
  };
}

/** Whether `inner` lies inside `outer` (both CIDR strings of one family). */
export function within(outer: string, inner: string): boolean {
  const o = parseCidr(outer);
  const i = parseCidr(inner);
  if (!o || !i || o.family !== i.family || i.prefix < o.prefix) return false;
  const m = maskOf(o.family, o.prefix);
  return (o.ip & m) === (i.ip & m);
}

function nextFreeBlock(pool: IPPool, taken: Set<string>): string | undefined {
  const c = parseCidr(pool.spec.cidr) as Cidr;
  const bs = pool.spec.blockSize ?? (c.family === 4 ? 26 : 122);
  const bits = c.family === 4 ? 32 : 128;
  const step = 1n << BigInt(bits - bs);
  const count = 1n << BigInt(bs - c.prefix);
  const base = c.ip & maskOf(c.family, c.prefix);
  for (let i = 0n; i < count; i++) {
    const cidr = `${formatIP(c.family, base + i * step)}/${bs}`;
    if (!taken.has(cidr)) return cidr;
  }
  return undefined;
}
