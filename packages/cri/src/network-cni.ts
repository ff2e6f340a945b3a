// Pod networking through the CNI runtime of @kemu/cni (libcni semantics): the first network list in the
// conf dir, ADD on RunPodSandbox, DEL on StopPodSandbox, port mappings through the portMappings
// capability and the pod CIDR through ipRanges. NetworkReady follows the presence of a valid config.
import fs from 'node:fs';
import { type CniResult, CniRuntime, type Invoker, type NetworkConfigList, type RuntimeConf } from '@kemu/cni';
import { errorMessage } from './errors.js';
import type { NetworkManager, NetworkStatus, PodNetworkRequest, PodNetworkResult } from './types.js';

export interface CniNetworkOptions {
  confDir: string;
  binDirs: string[];
  cacheDir?: string;
  /** In-process invoker (plugins called as objects); default execs plugin binaries from binDirs. */
  invoker?: Invoker;
  /** Interface name inside the pod (default eth0). */
  ifname?: string;
  /**
   * How often the conf dir is re-read for NetworkReady while it cannot be watched (default 2 s). While it is
   * watched, changes are read as they happen (containerd's fsnotify watch) and this is only the safety net's
   * period, at least {@link WATCHED_POLL_MS}.
   */
  refreshMs?: number;
}

/** The safety-net re-read of a watched conf dir: a missed or coalesced inotify event costs at most this. */
const WATCHED_POLL_MS = 60_000;

const PROTO = ['tcp', 'udp', 'sctp'];

export class CniNetwork implements NetworkManager {
  readonly name = 'cni';
  readonly cni: CniRuntime;
  private list?: NetworkConfigList;
  private lastError = 'cni config not loaded yet';
  private podCidr = '';
  private timer?: NodeJS.Timeout;
  private watcher?: fs.FSWatcher;
  private readPending = false;
  private closed = false;

  constructor(private readonly opts: CniNetworkOptions) {
    this.cni = new CniRuntime({ confDir: opts.confDir, binDirs: opts.binDirs, cacheDir: opts.cacheDir, invoker: opts.invoker });
    this.watch();
    this.poll();
  }

  /**
   * Watches the conf dir, as containerd does, so a thousand idle nodes do not each re-read theirs every two
   * seconds. A dir that does not exist yet, or goes away, is polled until it can be watched again.
   */
  private watch(): void {
    if (this.watcher || this.closed) return;
    let w: fs.FSWatcher;
    try {
      w = fs.watch(this.opts.confDir, { persistent: false });
    } catch {
      return;
    }
    w.on('change', () => this.readSoon());
    w.on('error', () => {
      w.close();
      if (this.watcher === w) this.watcher = undefined;
      this.readSoon();
    });
    this.watcher = w;
  }

  /** One re-read for however many events arrive in the same turn (an editor's write is several). */
  private readSoon(): void {
    if (this.readPending || this.closed) return;
    this.readPending = true;
    setImmediate(() => {
      this.readPending = false;
      void this.refresh();
    });
  }

  private poll(): void {
    if (this.closed) return;
    const every = this.opts.refreshMs ?? 2000;
    this.timer = setTimeout(
      () => {
        this.watch();
        void this.refresh().finally(() => this.poll());
      },
      this.watcher ? Math.max(every, WATCHED_POLL_MS) : every,
    );
    this.timer.unref();
  }

  /** Re-reads the conf dir; NetworkReady is false until a loadable network list exists. */
  async refresh(): Promise<void> {
    try {
      this.list = await this.cni.loadConfList();
      this.lastError = '';
    } catch (err) {
      this.list = undefined;
      this.lastError = errorMessage(err);
    }
  }

  status(): NetworkStatus {
    if (this.list) return { ready: true, reason: '', message: '' };
    return { ready: false, reason: 'NetworkPluginNotReady', message: `Network plugin returns error: cni plugin not initialized: ${this.lastError}` };
  }

  private rt(req: PodNetworkRequest): RuntimeConf {
    const capabilityArgs: Record<string, unknown> = {};
    const pm = req.portMappings
      .filter((p) => (p.hostPort ?? 0) > 0)
      .map((p) => ({
        hostPort: p.hostPort,
        containerPort: p.containerPort,
        protocol: PROTO[p.protocol ?? 0] ?? 'tcp',
        ...(p.hostIp ? { hostIP: p.hostIp } : {}),
      }));
    if (pm.length) capabilityArgs.portMappings = pm;
    if (req.requestIps?.length) capabilityArgs.ips = req.requestIps;
    if (this.podCidr) capabilityArgs.ipRanges = this.podCidr.split(',').map((subnet) => [{ subnet: subnet.trim() }]);
    return {
      containerId: req.sandboxId,
      netns: req.netnsPath,
      ifname: this.opts.ifname ?? 'eth0',
      args: [
        ['IgnoreUnknown', '1'],
        ['K8S_POD_NAMESPACE', req.namespace],
        ['K8S_POD_NAME', req.name],
        ['K8S_POD_INFRA_CONTAINER_ID', req.sandboxId],
        ['K8S_POD_UID', req.uid],
      ],
      capabilityArgs,
    };
  }

  async setUp(req: PodNetworkRequest): Promise<PodNetworkResult> {
    // The conf dir is re-read on a timer (like containerd's watch); a pod only forces a read when none is loaded.
    if (!this.list) await this.refresh();
    if (!this.list) throw new Error(`cni plugin not initialized: ${this.lastError}`);
    const result = await this.cni.addNetworkList(this.list, this.rt(req));
    const ips = (result.ips ?? []).map((ip) => ip.address.split('/')[0]);
    // The pod's primary IP is IPv4 when it has one, as kubelet expects.
    ips.sort((a, b) => Number(b.includes('.')) - Number(a.includes('.')));
    return { ips };
  }

  async tearDown(req: PodNetworkRequest): Promise<void> {
    if (!this.list) await this.refresh();
    if (!this.list) return; // nothing configured: nothing was set up through us
    await this.cni.delNetworkList(this.list, this.rt(req));
  }

  async updatePodCidr(cidr: string): Promise<void> {
    this.podCidr = cidr;
  }

  /** The cached ADD result of a pod's attachment. */
  async cachedResult(req: PodNetworkRequest): Promise<CniResult | undefined> {
    if (!this.list) await this.refresh();
    return this.list ? this.cni.getCachedResult(this.list, this.rt(req)) : undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.watcher?.close();
    this.watcher = undefined;
  }
}

export async function createCniNetwork(opts: CniNetworkOptions): Promise<CniNetwork> {
  const n = new CniNetwork(opts);
  await n.refresh();
  return n;
}
