import { statSync } from 'node:fs';
import { hostname } from 'node:os';
import {
  CniError,
  CniErrorCode,
  type CniPlugin,
  type CniResult,
  invalidConfig,
  type PluginContext,
} from '@kemu/cni';
import { createEtcdStore, createFileStore, isStatusError, type Store } from '@kemu/core';
import { CalicoIpam, PoolConfigError, PoolExhaustedError, validatePool } from './ipam.js';

export const PLUGIN_NAME = 'kemu-calico-ipam';

const isObj = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);

export interface CalicoIpamConfig {
  network: string;
  node: string;
  /** Pool names or CIDRs to allocate from (calico's `ipv4_pools`); empty = all enabled pools. */
  pools: string[];
  /** Where the store lives: `etcd://host:port[,host:port]` or `file:/dir`. */
  storeUrl?: string;
  /** Keep the node's blackhole routes for its affine blocks in step on ADD/DEL/GC (`kemu.blackholes`). */
  blackholes: boolean;
  /** Pools to create when missing (`kemu.pools`), already validated. */
  ensurePools: { name: string; spec: Record<string, unknown> }[];
}

/** A `file:` store is a directory the plugin may create; a path through `..` or to anything else is a config error. */
function checkStoreDir(dir: string): void {
  if (dir.split('/').includes('..')) throw invalidConfig(`ipam "kemu.store": ${JSON.stringify(dir)} must not contain ".."`);
  let st: ReturnType<typeof statSync> | undefined;
  try {
    st = statSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new CniError(CniErrorCode.IOFailure, `ipam "kemu.store": cannot use ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  if (!st.isDirectory()) throw invalidConfig(`ipam "kemu.store": ${dir} is not a directory`);
}

export function loadCalicoConfig(ctx: PluginContext): CalicoIpamConfig {
  const ipam = ctx.conf.ipam;
  if (!isObj(ipam)) throw invalidConfig('missing "ipam" section');
  const nodeRaw =
    ipam.nodename ?? (ctx.conf as Record<string, unknown>).nodename ?? ctx.env.KEMU_NODENAME ?? hostname();
  if (typeof nodeRaw !== 'string' || !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(nodeRaw)) {
    throw invalidConfig(
      `ipam "nodename": ${JSON.stringify(nodeRaw)} is not a valid node name (lower-case DNS subdomain)`,
    );
  }
  const poolsRaw = ipam.ipv4_pools ?? [];
  if (!Array.isArray(poolsRaw) || !poolsRaw.every((p) => typeof p === 'string')) {
    throw invalidConfig('ipam "ipv4_pools" must be a list of pool names or CIDRs');
  }
  const kemu = ipam.kemu ?? {};
  if (!isObj(kemu)) throw invalidConfig('ipam "kemu" must be an object');
  const storeUrl = kemu.store;
  if (
    storeUrl !== undefined &&
    (typeof storeUrl !== 'string' || !/^(etcd:\/\/[^/\s]+|file:\/\S+)$/.test(storeUrl))
  ) {
    throw invalidConfig(
      `ipam "kemu.store" must be "etcd://host:port" or "file:/path", got ${JSON.stringify(storeUrl)}`,
    );
  }
  if (typeof storeUrl === 'string' && storeUrl.startsWith('file:')) checkStoreDir(storeUrl.slice('file:'.length));
  if (kemu.blackholes !== undefined && typeof kemu.blackholes !== 'boolean') {
    throw invalidConfig('ipam "kemu.blackholes" must be true or false');
  }
  const ensurePools: CalicoIpamConfig['ensurePools'] = [];
  if (kemu.pools !== undefined) {
    if (!Array.isArray(kemu.pools)) throw invalidConfig('ipam "kemu.pools" must be a list of IPPool specs');
    kemu.pools.forEach((p, i) => {
      if (!isObj(p)) throw invalidConfig(`ipam "kemu.pools"[${i}] must be an object`);
      const name = typeof p.name === 'string' && p.name ? p.name : `pool-${i}`;
      const { name: _n, ...spec } = p;
      try {
        validatePool(name, spec);
      } catch (e) {
        if (e instanceof PoolConfigError) throw invalidConfig(`ipam "kemu.pools"[${i}]: ${e.message}`);
        throw e;
      }
      ensurePools.push({ name, spec });
    });
  }
  return {
    network: ctx.conf.name,
    node: nodeRaw,
    pools: poolsRaw as string[],
    storeUrl,
    blackholes: kemu.blackholes === true,
    ensurePools,
  };
}

/** Opens the store named by a `kemu.store` URL. */
export async function openStore(url: string): Promise<Store> {
  if (url.startsWith('file:')) return createFileStore({ dir: url.slice('file:'.length) });
  const hosts = url.slice('etcd://'.length).split(',');
  return createEtcdStore({ endpoints: hosts.map((h) => `http://${h}`) });
}

export interface CalicoIpamPluginOptions {
  /** In-process form: use this store (the config's `kemu.store` is then ignored). */
  store?: Store;
}

export const handleId = (network: string, containerId: string) => `${network}.${containerId}`;

function toCni(e: unknown): unknown {
  if (e instanceof PoolExhaustedError) return new CniError(CniErrorCode.TryAgainLater, e.message);
  if (isStatusError(e) && (e.reason === 'ServiceUnavailable' || e.reason === 'Timeout')) {
    return new CniError(CniErrorCode.TryAgainLater, `IPAM store unavailable: ${e.message}`);
  }
  return e;
}

/** The IPAM plugin. Without `opts.store` every invocation opens the store named in the config. */
export function createCalicoIpamPlugin(opts: CalicoIpamPluginOptions = {}): CniPlugin {
  async function withIpam<T>(
    ctx: PluginContext,
    fn: (ipam: CalicoIpam, cfg: CalicoIpamConfig) => Promise<T>,
  ): Promise<T> {
    const cfg = loadCalicoConfig(ctx);
    let store = opts.store;
    let owned = false;
    if (!store) {
      if (!cfg.storeUrl) {
        throw invalidConfig(
          'ipam "kemu.store" is required (e.g. "etcd://127.0.0.1:2379" or "file:/var/lib/kemu/store")',
        );
      }
      store = await openStore(cfg.storeUrl).catch((e) => {
        throw new CniError(
          CniErrorCode.TryAgainLater,
          `cannot open IPAM store ${cfg.storeUrl}: ${(e as Error).message}`,
        );
      });
      owned = true;
    }
    const ipam = new CalicoIpam(store);
    try {
      for (const p of cfg.ensurePools) {
        const have = await store.get('IPPool', '', p.name).catch(() => undefined);
        if (!have)
          await ipam
            .applyPool(p.name, p.spec)
            .catch((e) => (isStatusError(e) && e.reason === 'AlreadyExists' ? undefined : Promise.reject(e)));
      }
      const out = await fn(ipam, cfg);
      if (cfg.blackholes && ctx.command !== 'CHECK' && ctx.command !== 'STATUS') {
        await ipam.syncBlackholes(await ctx.datapath(), cfg.node);
      }
      return out;
    } catch (e) {
      throw toCni(e);
    } finally {
      if (owned) await store.close();
    }
  }

  async function poolNames(ipam: CalicoIpam, cfg: CalicoIpamConfig): Promise<string[] | undefined> {
    if (cfg.pools.length === 0) return undefined;
    const all = await ipam.pools();
    return cfg.pools.map((ref) => {
      const p = all.find((x) => x.metadata.name === ref || x.spec.cidr === ref);
      if (!p) throw invalidConfig(`ipam "ipv4_pools": no enabled IP pool ${JSON.stringify(ref)}`);
      return p.metadata.name!;
    });
  }

  return {
    name: PLUGIN_NAME,
    async add(ctx): Promise<CniResult> {
      return withIpam(ctx, async (ipam, cfg) => {
        const a = await ipam.assign({
          handle: handleId(cfg.network, ctx.containerId),
          node: cfg.node,
          pools: await poolNames(ipam, cfg),
          attrs: {
            node: cfg.node,
            ...(ctx.args.get('K8S_POD_NAME') ? { pod: ctx.args.get('K8S_POD_NAME')! } : {}),
          },
        });
        // As calico's IPAM does: a host route per pod, so the address is reported as a /32.
        return { cniVersion: ctx.version, ips: [{ address: `${a.ip}/32` }] };
      });
    },
    async del(ctx): Promise<void> {
      await withIpam(ctx, async (ipam, cfg) => {
        await ipam.releaseByHandle(handleId(cfg.network, ctx.containerId));
      });
    },
    async check(ctx): Promise<void> {
      await withIpam(ctx, async (ipam, cfg) => {
        const h = handleId(cfg.network, ctx.containerId);
        if ((await ipam.ipsByHandle(h)).length === 0) {
          throw new CniError(CniErrorCode.InvalidNetworkConfig, `no address allocated for handle ${h}`);
        }
      });
    },
    async status(ctx): Promise<void> {
      await withIpam(ctx, async (ipam) => {
        if ((await ipam.pools()).length === 0)
          throw new CniError(CniErrorCode.TryAgainLater, 'no enabled IP pool');
      });
    },
    async gc(ctx): Promise<void> {
      await withIpam(ctx, async (ipam, cfg) => {
        const inUse = (ctx.validAttachments ?? []).map((a) => handleId(cfg.network, a.containerID));
        await ipam.gc({ inUse, prefix: `${cfg.network}.` });
      });
    },
  };
}

/** The exec form: the store comes from the config. */
export const calicoIpam: CniPlugin = createCalicoIpamPlugin();
