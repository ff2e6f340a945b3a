// The built-in default network of the `sim` backend: the bridge + host-local (+ portmap) chain run by
// the CNI runtime in process on a simulated datapath (@kemu/netsim), so pods get addresses, veths and a
// bridge in a simulated node with no root and no configuration. The world lives in memory; after a
// restart, recovered sandboxes are re-attached (same IPs: host-local's allocations are on disk).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type CniResult, InProcessInvoker, isDatapathError } from '@kemu/cni';
import { createSimDatapath, type SimDatapath } from '@kemu/cni/datapath-sim';
import { bridge } from '@kemu/cni-bridge';
import { hostLocal } from '@kemu/cni-host-local';
import { portmap } from '@kemu/cni-portmap';
import { CniNetwork } from './network-cni.js';
import { writeFileAtomicSync } from './state-store.js';
import type { NetworkManager, NetworkStatus, NetworkUsageSample, PodNetworkRequest, PodNetworkResult } from './types.js';

export interface SimNetworkOptions {
  /** Holds the generated network config, host-local's allocations and the CNI result cache. */
  stateDir?: string;
  podCidr?: string;
  bridgeName?: string;
  /** Share a simulated node with other components (default: a new in-memory world). */
  datapath?: SimDatapath;
}

export const SIM_NETWORK_NAME = 'kemu-default';

/**
 * The sim backend's `ip netns add/delete` on a simulated datapath, idempotent like the runtime needs them:
 * creating an existing namespace or removing a missing one is not an error.
 */
export function simNetnsHooks(datapath: SimDatapath) {
  return {
    create: async (p: string) => {
      try {
        await datapath.addNetns(p);
      } catch (err) {
        if (!isDatapathError(err, 'EEXIST')) throw err;
      }
    },
    remove: async (p: string) => {
      try {
        await datapath.delNetns(p);
      } catch (err) {
        if (!isDatapathError(err, 'ENOENT')) throw err;
      }
    },
    listen: (p: string, proto: 'tcp' | 'udp', port: number) => datapath.listen(p, proto, port),
  };
}

export class SimDefaultNetwork implements NetworkManager {
  readonly name = 'sim-default (bridge + host-local on netsim)';
  readonly datapath: SimDatapath;
  readonly cni: CniNetwork;
  readonly dir: string;
  private readonly confDir: string;
  private readonly bridgeName: string;
  /** With no state dir the network's files live in a temporary directory that goes with it. */
  private readonly ownsDir: boolean;

  constructor(opts: SimNetworkOptions = {}) {
    this.datapath = opts.datapath ?? createSimDatapath();
    this.ownsDir = !opts.stateDir;
    this.dir = opts.stateDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-cri-simnet-'));
    this.confDir = path.join(this.dir, 'net.d');
    fs.mkdirSync(this.confDir, { recursive: true, mode: 0o700 });
    this.bridgeName = opts.bridgeName ?? 'kemu0';
    this.writeConf(opts.podCidr ?? '10.88.0.0/16');
    const invoker = new InProcessInvoker({ plugins: { bridge, 'host-local': hostLocal, portmap }, datapath: this.datapath });
    // Plugins run as objects; CNI_PATH only has to be set, so it names an empty directory of ours.
    this.cni = new CniNetwork({ confDir: this.confDir, binDirs: [path.join(this.dir, 'bin')], cacheDir: path.join(this.dir, 'cache'), invoker });
  }

  /** The network list, with the pod CIDR as host-local's range (rewritten when the CIDR changes, as containerd does with its template). */
  private writeConf(podCidr: string): void {
    const ranges = podCidr
      .split(',')
      .map((c) => c.trim())
      .filter(Boolean)
      .map((subnet) => [{ subnet }]);
    const conf = {
      cniVersion: '1.0.0',
      name: SIM_NETWORK_NAME,
      plugins: [
        {
          type: 'bridge',
          bridge: this.bridgeName,
          isGateway: true,
          ipMasq: true,
          hairpinMode: true,
          capabilities: { ips: true },
          ipam: { type: 'host-local', ranges, dataDir: path.join(this.dir, 'ipam') },
        },
        { type: 'portmap', capabilities: { portMappings: true }, snat: true },
      ],
    };
    writeFileAtomicSync(path.join(this.confDir, `10-${SIM_NETWORK_NAME}.conflist`), JSON.stringify(conf));
  }

  /** Hooks for the sim backend: the simulated `ip netns add/delete`. */
  netnsHooks() {
    return simNetnsHooks(this.datapath);
  }

  /** Interface counters inside a pod's simulated namespace, for PodSandboxStats. */
  async networkUsage(netnsPath: string): Promise<NetworkUsageSample[]> {
    if (!(await this.datapath.netnsExists(netnsPath))) return [];
    const links = await this.datapath.listLinks(netnsPath);
    return links.filter((l) => l.kind !== 'loopback').map((l) => ({ name: l.name, rxBytes: 0, txBytes: 0, rxErrors: 0, txErrors: 0 }));
  }

  status(): NetworkStatus {
    return this.cni.status();
  }

  setUp(req: PodNetworkRequest): Promise<PodNetworkResult> {
    return this.cni.setUp(req);
  }

  tearDown(req: PodNetworkRequest): Promise<void> {
    return this.cni.tearDown(req);
  }

  async updatePodCidr(cidr: string): Promise<void> {
    this.writeConf(cidr);
    await this.cni.refresh();
  }

  /**
   * The simulated node starts empty after a restart: each recovered pod's namespace is rebuilt and its
   * attachment redone (DEL, then ADD asking host-local for the address it had), so its IP is unchanged.
   */
  async recover(held: PodNetworkRequest[]): Promise<void> {
    await this.cni.refresh();
    const hooks = this.netnsHooks();
    for (const h of held) {
      if (!h.netnsPath) continue;
      try {
        await this.cni.tearDown(h).catch(() => {});
        await hooks.create(h.netnsPath);
        const result = await this.cni.setUp({ ...h, requestIps: h.ips });
        if (h.ips?.length && result.ips[0] !== h.ips[0]) {
          process.emitWarning(`sandbox ${h.sandboxId} came back with IP ${result.ips[0]} instead of ${h.ips[0]}`);
        }
      } catch (err) {
        // One pod that cannot be re-attached must not keep the runtime from starting.
        process.emitWarning(`sandbox ${h.sandboxId}: could not re-attach its network: ${(err as Error).message}`);
      }
    }
  }

  async close(): Promise<void> {
    await this.cni.close();
    await this.datapath.close();
    if (this.ownsDir) fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /** The last CNI result of a pod (what the network chain reported), for diagnostics. */
  lastResult(req: PodNetworkRequest): Promise<CniResult | undefined> {
    return this.cni.cachedResult(req);
  }
}
