// The kubelet emulator: registers its node and keeps it alive (Lease + status), watches the pods bound to
// it, and runs one worker per pod that syncs the runtime to the spec. PLEG (a periodic relist, plus the
// runtime's event stream when available) wakes workers when containers change.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  InformerFactory,
  isAlreadyExists,
  isNotFound,
  type KubeObject,
  type Pod,
  parseManifests,
  parseQuantity,
  type SharedInformer,
} from '@kemu/core';
import { EventRecorder } from '@kemu/core/controllers';
import { cri } from '@kemu/proto';
import { Backoff, DEFAULT_BACKOFF } from './backoff.js';
import { SimCgroupManager } from './cgroup-manager.js';
import { ContainerManager, type PodCgroupInfo } from './container-manager.js';
import { DeviceAdmissionError, DeviceManager } from './device-manager.js';
import { CpuAdmissionError, CpuManager } from './cpu-manager.js';
import { type Eviction, EvictionManager } from './eviction-manager.js';
import { CsiNodeSync } from './csinode.js';
import { type HostDNSConfig, MAX_RESOLV_CONF_BYTES, parseResolvConf } from './dns-config.js';
import { allocatableReservation, defaultKubeletConfiguration, nodeCapacity, parseGoDuration } from './kubelet-config.js';
import { CONFIG_SOURCE_ANNOTATION, KUBELET_ENDPOINT_ANNOTATION, MIRROR_POD_ANNOTATION } from './labels.js';
import { allocatable, baseLabels, DEFAULT_CAPACITY, NodeStatusManager } from './node-status.js';
import { needsSync } from './pod-config.js';
import { PodSyncer, type SyncResult } from './pod-sync.js';
import { ProbeManager, realProbeTransport } from './prober.js';
import { RuntimeCache } from './runtime-cache.js';
import { SummaryProvider } from './stats-summary.js';
import { KubeletServer } from './kubelet-server.js';
import { ImageGCManager } from './image-gc-manager.js';
import { nextOrAbort } from './next-or-abort.js';
import type { KubeletOptions } from './types.js';
import { storeObjectSource } from './object-source.js';
import { VolumeManager } from './volume-manager.js';

/** The relist period while container events flow (upstream's eventedPlegRelistPeriod). */
const EVENTED_RELIST_PERIOD_MS = 300_000;
/** Stream attempts in a row without an event before PLEG falls back to relisting (upstream's eventedPlegMaxStreamRetries). */
const EVENTED_MAX_STREAM_RETRIES = 5;
/** A pod's periodic resync comes after syncFrequency plus up to this fraction more (upstream's workerResyncIntervalJitterFactor). */
const RESYNC_JITTER_FACTOR = 0.5;
/**
 * The jitter's step. Node keeps one timer list per distinct delay, so a delay drawn to the fraction of a
 * millisecond gives every pod a list of its own (a heap insert and removal each); whole seconds share ~30.
 */
const RESYNC_JITTER_STEP_MS = 1000;

interface Worker {
  uid: string;
  busy: boolean;
  again: boolean;
  timer?: NodeJS.Timeout;
  /** When `timer` fires (ms since the epoch): a sooner wake-up replaces it. */
  timerDue?: number;
  /** The last runtime event that came while the worker was syncing: checked against the cache once it is done. */
  event?: cri.ContainerEventResponse;
  /** The latest relist that saw the pod change while the worker was syncing: likewise checked afterwards. */
  relisted?: number;
}

export class Kubelet {
  readonly nodeName: string;
  private readonly factory: InformerFactory;
  private readonly pods: SharedInformer<'Pod'>;
  private readonly cache: RuntimeCache;
  private readonly volumes: VolumeManager;
  private readonly probes: ProbeManager;
  private readonly events: EventRecorder;
  private readonly syncer: PodSyncer;
  private readonly nodeStatus: NodeStatusManager;
  private readonly csiNode?: CsiNodeSync;
  /** The QoS cgroup hierarchy and pod cgroups (real or recorded). */
  readonly containerManager: ContainerManager;
  /** The Summary API (/stats/summary). */
  readonly summary: SummaryProvider;
  readonly eviction: EvictionManager;
  readonly imageGC: ImageGCManager;
  /** Exclusive CPUs for Guaranteed containers under cpuManagerPolicy static. */
  readonly cpus: CpuManager;
  /** Device plugins (extended resources), when a device-plugins directory is configured. */
  readonly devices?: DeviceManager;
  private readonly baseCapacity: Record<string, string>;
  private readonly baseAllocatable: Record<string, string>;
  private server?: KubeletServer;
  /** Where /stats/summary and /metrics/* are served, once started with `serverAddress`. */
  serverUrl?: string;
  /** Evictions decided, applied by the pod's worker. */
  private readonly evictions = new Map<string, Eviction>();
  private readonly workers = new Map<string, Worker>();
  private readonly byUid = new Map<string, Pod>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly inflight = new Set<Promise<unknown>>();
  private runtimeName = 'kemu';
  private nodeIP: string;
  private stopped = false;
  private heartbeatPaused = false;
  private eventsAbort?: AbortController;
  /** Whether container events drive PLEG (the relist is then the slow safety net). */
  private evented = false;
  private relistTimer?: NodeJS.Timeout;
  private lastRelistAt = 0;
  /** Counts of syncs, for tests and benchmarks. */
  readonly stats = { syncs: 0, errors: 0, relists: 0 };

  constructor(private readonly o: KubeletOptions) {
    this.nodeName = o.nodeName;
    this.nodeIP = o.nodeIP ?? '127.0.0.1';
    const onError = (err: unknown, ctx: string) => {
      this.stats.errors++;
      o.onError?.(err, ctx);
    };
    this.factory = new InformerFactory(o.store);
    this.pods = this.factory.informer('Pod', { fieldSelector: `spec.nodeName=${o.nodeName}`, onError: (e) => onError(e, 'pod informer') });
    this.cache = new RuntimeCache(o.runtime);
    const rootDir = o.rootDir ?? '/var/lib/kubelet';
    const objects = storeObjectSource(o.store, o.nodeName);
    this.volumes = new VolumeManager(o.store, o.nodeName, rootDir, o.csi, o.rootDir !== undefined, objects, o.serviceAccountTokens);
    this.events = new EventRecorder(o.store, { component: 'kubelet', host: o.nodeName, disableStore: o.recordEvents === false });
    this.probes = new ProbeManager(o.runtime, o.probeTransport ?? realProbeTransport, (uid, _id, kind, ok, message) => {
      const pod = this.byUid.get(uid);
      if (pod && !ok && message) this.events.event(pod, 'Warning', 'Unhealthy', `${kind[0].toUpperCase()}${kind.slice(1)} probe failed: ${message}`);
      this.enqueue(uid);
    });
    const backoff = { ...DEFAULT_BACKOFF, ...(o.backoff ?? {}) };
    this.syncer = new PodSyncer({
      store: o.store,
      nodeName: o.nodeName,
      objects,
      hookTransport: o.probeTransport,
      nodeIP: () => this.nodeIP,
      runtimeName: () => this.runtimeName,
      runtime: o.runtime,
      images: o.images,
      cache: this.cache,
      volumes: this.volumes,
      probes: this.probes,
      events: this.events,
      sandboxCtx: {
        nodeName: o.nodeName,
        podLogsDir: o.podLogsDir ?? '/var/log/pods',
        clusterDNS: o.clusterDNS ?? (o.config?.clusterDNS.length ? o.config.clusterDNS : ['10.96.0.10']),
        clusterDomain: o.clusterDomain ?? (o.config?.clusterDomain || 'cluster.local'),
        hostDNS: readHostDNS(o.resolvConf ?? '/etc/resolv.conf'),
        nodeIPs: () => [this.nodeIP],
        onDNSWarning: (pod, reason, message) => this.events.event(pod, 'Warning', reason, message),
        // The pod's cgroup, made by the container manager before RunPodSandbox.
        cgroupParent: (pod) => this.containerManager.ensurePod(pod).cgroupParent,
      },
      crashBackoff: new Backoff(backoff),
      // The devices' Allocate answers (env, mounts, device nodes, CDI) go into the container's config.
      containerConfigHook: (pod, c, cfg) => this.runContainerOptions(pod, c.name, cfg),
      containerResources: {
        cpuPeriodUs: Math.round(parseGoDuration((o.config ?? defaultKubeletConfiguration()).cpuCFSQuotaPeriod, 'cpuCFSQuotaPeriod') * 1000),
        enforceCPULimits: (o.config ?? defaultKubeletConfiguration()).cpuCFSQuota,
        memoryCapacity: parseQuantity({ ...DEFAULT_CAPACITY, ...(o.capacity ?? {}) }.memory).value(),
      },
      pullBackoff: new Backoff(backoff),
    });
    if (o.csi) this.csiNode = new CsiNodeSync(o.store, o.nodeName, o.csi);
    const config = o.config ?? defaultKubeletConfiguration();
    const capacity = o.config ? nodeCapacity(config, { ...DEFAULT_CAPACITY, ...(o.capacity ?? {}) }) : { ...DEFAULT_CAPACITY, ...(o.capacity ?? {}) };
    const reserved = o.config ? { ...allocatableReservation(config, capacity), ...(o.reserved ?? {}) } : (o.reserved ?? {});
    this.containerManager = new ContainerManager(o.cgroups ?? new SimCgroupManager(), config, capacity);
    this.baseCapacity = capacity;
    this.baseAllocatable = allocatable(capacity, reserved);
    if (o.devicePluginDir) {
      this.devices = new DeviceManager({
        dir: o.devicePluginDir,
        // A plugin's devices or their health changed: post node status now rather than at the next period.
        onChange: () => void this.track(this.postStatus().catch((e) => this.error(e, 'node status after a device change'))),
        onError: (e, ctx) => this.error(e, ctx),
      });
    }
    this.summary = new SummaryProvider({
      nodeName: o.nodeName,
      runtime: o.runtime,
      images: o.images,
      capacity,
      pods: () => [...this.byUid.values()],
      podLogsDir: o.podLogsDir ?? '/var/log/pods',
      rootDir: o.rootDir,
      containerManager: this.containerManager,
    });
    this.cpus = new CpuManager(config, capacity.cpu ?? '1', o.rootDir);
    this.imageGC = new ImageGCManager(o.images, o.runtime, {
      highPercent: config.imageGCHighThresholdPercent,
      lowPercent: config.imageGCLowThresholdPercent,
      minAgeMs: parseGoDuration(config.imageMinimumGCAge, 'imageMinimumGCAge'),
      // Images share the node filesystem with the pods' ephemeral storage (as the Summary reports it).
      capacityBytes: () => parseQuantity(capacity['ephemeral-storage'] ?? '0').value(),
    });
    this.eviction = new EvictionManager({
      reclaimImages: () => this.imageGC.deleteUnusedImages(),
      config,
      allocatable: allocatable(capacity, reserved),
      summary: () => this.summary.summary(),
      activePods: () => [...this.byUid.values()].filter((p) => !p.metadata.deletionTimestamp && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed'),
      evict: async (e) => {
        this.evictions.set(e.pod.metadata.uid ?? '', e);
        this.enqueue(e.pod.metadata.uid ?? '');
      },
      nodeEvent: (type, reason, message) =>
        this.events.event({ apiVersion: 'v1', kind: 'Node', metadata: { name: o.nodeName, uid: o.nodeName } } as never, type, reason, message),
    });
    this.nodeStatus = new NodeStatusManager(
      o.store,
      {
        nodeName: o.nodeName,
        nodeIP: this.nodeIP,
        podCIDR: o.podCIDR,
        labels: { ...baseLabels(o.nodeName), ...(o.labels ?? {}) },
        capacity,
        reserved,
        taints: o.taints,
      },
      o.leaseDurationSeconds ?? 40,
    );
  }

  private error(err: unknown, ctx: string) {
    this.stats.errors++;
    this.o.onError?.(err, ctx);
  }

  /** The options this kubelet was built with (to start another one in its place, say). */
  get options(): KubeletOptions {
    return this.o;
  }

  /** Register the node, start heartbeats, the pod informer, PLEG, and recover what the runtime has. */
  async start(): Promise<void> {
    // The pods' directory is made at start, as upstream's setupDataDirs makes it (with a root of our own only).
    if (this.o.rootDir !== undefined) await fs.promises.mkdir(path.join(this.o.rootDir, 'pods'), { recursive: true, mode: 0o750 });
    const version = await this.o.runtime.Version({ version: 'v1' });
    this.runtimeName = version.runtimeName || 'kemu';
    this.containerManager.start();
    await this.devices?.start();
    if (this.o.serverAddress !== undefined) {
      const server = new KubeletServer({ summary: () => this.summary.summary(), pods: () => [...this.byUid.values()] });
      const at = this.o.serverAddress.lastIndexOf(':');
      this.serverUrl = await server.listen(this.o.serverAddress.slice(0, at) || '127.0.0.1', Number(this.o.serverAddress.slice(at + 1) || 0));
      this.server = server;
    }
    await this.nodeStatus.register(version, this.serverUrl ? { [KUBELET_ENDPOINT_ANNOTATION]: this.serverUrl } : {});
    await this.heartbeat();
    await this.postStatus();

    this.pods.addEventHandler({
      onAdd: (pod) => this.observe(pod),
      // A status-only change (most often the kubelet's own write coming back) refreshes the copy, no sync.
      onUpdate: (old, pod) => this.observe(pod, needsSync(old, pod)),
      onDelete: (pod) => {
        const uid = pod.metadata.uid ?? '';
        this.byUid.delete(uid);
        this.enqueue(uid);
      },
    });
    this.factory.start();
    await this.factory.waitForCacheSync();

    // Recovery: whatever the runtime holds for pods this kubelet no longer knows is reconciled too.
    await this.cache.relist();
    for (const uid of this.cache.uids()) this.enqueue(uid);

    this.every(this.o.leaseRenewMs ?? 10_000, () => this.heartbeat());
    this.every(this.o.statusUpdateMs ?? 10_000, () => this.postStatus());
    this.scheduleRelist();
    // Eviction is on only with a KubeletConfiguration (its thresholds); upstream monitors every 10 s.
    if (this.o.config) this.every(this.o.evictionMonitoringPeriodMs ?? 10_000, () => this.evictionPass());
    // Image GC follows the configuration's thresholds; upstream looks every 5 minutes.
    if (this.o.config) this.every(this.o.imageGCPeriodMs ?? 5 * 60_000, async () => void (await this.imageGC.garbageCollect()));
    if (this.o.containerEvents) this.consumeEvents();
    if (this.o.staticPodPath) {
      await this.syncStaticPods();
      this.every(20_000, () => this.syncStaticPods());
    }
  }

  /** Stops the kubelet's loops. Pods keep running in the runtime, as when a real kubelet exits. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.relistTimer);
    for (const w of this.workers.values()) if (w.timer) clearTimeout(w.timer);
    this.eventsAbort?.abort();
    await this.devices?.stop();
    await this.server?.close();
    this.probes.stopAll();
    await this.factory.stop();
    await Promise.allSettled([...this.inflight]);
    await this.events.flush();
  }

  /** Stop renewing the Lease and posting status, as a hung kubelet would (for failure tests). */
  pauseHeartbeats(paused = true) {
    this.heartbeatPaused = paused;
  }

  private every(ms: number, fn: () => Promise<void>) {
    let running = false;
    const t = setInterval(() => {
      if (running || this.stopped) return;
      running = true;
      this.track(fn().catch((e) => this.error(e, fn.name)))
        .finally(() => {
          running = false;
        });
    }, ms);
    t.unref?.();
    this.timers.push(t);
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    p.finally(() => this.inflight.delete(p)).catch(() => {});
    return p;
  }

  private async heartbeat() {
    if (this.heartbeatPaused) return;
    await this.nodeStatus.renewLease();
  }

  private async postStatus() {
    if (this.heartbeatPaused) return;
    const status = await this.o.runtime.Status({ verbose: false });
    const ext = this.devices?.resources() ?? { capacity: {}, allocatable: {} };
    await this.nodeStatus.post(
      status.status,
      {
        volumesInUse: this.volumes.inUse(),
        capacity: { ...this.baseCapacity, ...ext.capacity },
        allocatable: { ...this.baseAllocatable, ...ext.allocatable },
      },
      5 * 60_000,
      this.eviction.conditions(),
    );
    await this.csiNode?.sync();
  }

  private async relist() {
    this.stats.relists++;
    const { changed, listed } = await this.cache.relist();
    for (const uid of changed) {
      const w = this.workers.get(uid);
      // A syncing worker's last refresh may come after this list: decided when the sync is done.
      if (w?.busy) w.relisted = listed;
      else this.enqueue(uid);
    }
  }

  private get relistPeriodMs(): number {
    return this.o.relistPeriodMs ?? 1_000;
  }

  private get eventedRelistPeriodMs(): number {
    return this.o.eventedRelistPeriodMs ?? EVENTED_RELIST_PERIOD_MS;
  }

  /**
   * PLEG's relist loop. With a working container event stream (evented PLEG) the relist is a slow safety
   * net; without one, or once the stream has failed for good, it runs every `relistPeriodMs` (generic PLEG).
   */
  private scheduleRelist() {
    if (this.stopped) return;
    const due = this.lastRelistAt + (this.evented ? this.eventedRelistPeriodMs : this.relistPeriodMs);
    clearTimeout(this.relistTimer);
    this.relistTimer = setTimeout(() => {
      this.relistTimer = undefined;
      if (this.stopped) return;
      this.lastRelistAt = Date.now();
      void this.track(this.relist().catch((e) => this.error(e, 'relist'))).finally(() => this.scheduleRelist());
    }, Math.max(0, due - Date.now()));
    this.relistTimer.unref?.();
  }

  private consumeEvents() {
    const abort = new AbortController();
    this.eventsAbort = abort;
    this.evented = true;
    // Each node's safety net at its own phase: nodes started together do not all relist at once.
    this.lastRelistAt = Date.now() - Math.random() * this.eventedRelistPeriodMs;
    this.scheduleRelist();
    // Attempts in a row that brought no event; upstream gives up on the stream after five.
    let failed = 0;
    const run = async () => {
      while (!abort.signal.aborted) {
        let got = false;
        try {
          // Raced against the abort: a quiet stream would otherwise hold stop() until its next event.
          const it = this.o.containerEvents!()[Symbol.asyncIterator]();
          for (;;) {
            const r = await nextOrAbort(it, abort.signal);
            if (r === 'aborted') {
              void it.return?.(undefined)?.catch?.(() => {});
              break;
            }
            if (r.done) break;
            if (!got) {
              got = true;
              failed = 0;
            }
            const uid = r.value.podSandboxStatus?.metadata?.uid;
            if (uid) this.runtimeEvent(uid, r.value);
          }
        } catch (err) {
          if (!abort.signal.aborted) this.error(err, 'container events');
        }
        if (abort.signal.aborted) break;
        // The stream ended: whatever changed meanwhile is found by a relist now, not at the next safety net.
        this.lastRelistAt = 0;
        if (!got && ++failed >= EVENTED_MAX_STREAM_RETRIES) {
          this.evented = false;
          this.error(new Error(`no container events after ${failed} attempts; falling back to relisting every ${this.relistPeriodMs} ms`), 'container events');
          this.scheduleRelist();
          break;
        }
        this.scheduleRelist();
        await new Promise((r) => setTimeout(r, 1000).unref?.());
      }
    };
    void this.track(run());
  }

  private observe(pod: Pod, sync = true) {
    const uid = pod.metadata.uid ?? '';
    this.byUid.set(uid, pod);
    if (sync) this.enqueue(uid);
  }

  /**
   * A container event wakes the pod's worker unless the runtime cache already shows it; while the worker
   * syncs, the event waits for the sync's last refresh (most are the sync's own creates and starts).
   */
  private runtimeEvent(uid: string, ev: cri.ContainerEventResponse) {
    // One the cache does not show yet makes the next sync list the pod rather than trust the cache.
    const covered = this.cache.sawEvent(uid, ev);
    const w = this.workers.get(uid);
    if (w?.busy) {
      w.event = ev;
      return;
    }
    if (!covered) this.enqueue(uid);
  }

  /** Asks the pod's worker to sync (coalescing requests while one runs). */
  enqueue(uid: string, delayMs = 0) {
    if (this.stopped || !uid) return;
    let w = this.workers.get(uid);
    if (!w) {
      w = { uid, busy: false, again: false };
      this.workers.set(uid, w);
    }
    if (delayMs > 0) {
      const due = Date.now() + delayMs;
      // One wake-up per pod: the sooner one wins (a back-off retry is not held up by the next resync).
      if (w.timer) {
        if (w.timerDue! <= due) return;
        clearTimeout(w.timer);
      }
      w.timerDue = due;
      w.timer = setTimeout(() => {
        w!.timer = undefined;
        this.enqueue(uid);
      }, delayMs);
      w.timer.unref?.();
      return;
    }
    if (w.busy) {
      w.again = true;
      return;
    }
    void this.track(this.runWorker(w));
  }

  private async runWorker(w: Worker) {
    w.busy = true;
    try {
      do {
        w.again = false;
        w.event = undefined;
        w.relisted = undefined;
        let result: SyncResult = {};
        try {
          this.stats.syncs++;
          result = await this.syncOne(w.uid);
        } catch (err) {
          this.error(err, `sync pod ${w.uid}`);
          result = { requeueMs: 1000 };
        }
        if (result.done) {
          if (w.timer) clearTimeout(w.timer);
          this.workers.delete(w.uid);
          this.syncer.forget(w.uid);
          this.cache.forget(w.uid);
          return;
        }
        // What came in during the sync and the cache still does not show: sync again (from a fresh list).
        if (w.event !== undefined && !this.cache.covers(w.uid, w.event)) w.again = true;
        if (w.relisted !== undefined && !this.cache.seenSince(w.uid, w.relisted)) {
          this.cache.invalidate(w.uid);
          w.again = true;
        }
        w.event = undefined;
        w.relisted = undefined;
        if (result.requeueMs !== undefined && !w.again) {
          if (result.requeueMs === 0) w.again = true;
          else {
            w.busy = false;
            this.enqueue(w.uid, result.requeueMs);
            this.scheduleResync(w.uid);
            return;
          }
        }
      } while (w.again && !this.stopped);
      this.scheduleResync(w.uid);
    } finally {
      w.busy = false;
    }
  }

  /**
   * The periodic resync, per pod from its own last sync and jittered as upstream's pod workers do, so the pods
   * of a node (and the nodes of a cluster started at once) do not all resync in the same instant. A sooner
   * wake-up (a back-off retry) keeps its place.
   */
  private scheduleResync(uid: string) {
    const every = this.o.syncFrequencyMs ?? 60_000;
    const jitter = Math.random() * RESYNC_JITTER_FACTOR * every;
    this.enqueue(uid, every + Math.round(jitter / RESYNC_JITTER_STEP_MS) * RESYNC_JITTER_STEP_MS);
  }

  private async syncOne(uid: string): Promise<SyncResult> {
    const pod = this.byUid.get(uid);
    if (!pod) {
      // Not (or no longer) in the store for this node: tear down whatever the runtime holds for it.
      return this.forgetCgroup(uid, await this.syncer.terminate(undefined, uid));
    }
    if (pod.metadata.deletionTimestamp) return this.forgetCgroup(uid, await this.syncer.terminate(pod, uid));
    const eviction = this.evictions.get(uid);
    if (eviction) {
      this.evictions.delete(uid);
      return this.syncer.sync(await this.applyEviction(pod, eviction));
    }
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') {
      this.devices?.release(uid);
      this.cpus.release(uid);
    } else if (this.devices && !this.devices.admitted(pod)) {
      // Admission: the pod's devices are allocated before anything of it runs.
      try {
        await this.devices.allocate(pod);
      } catch (err) {
        if (!(err instanceof DeviceAdmissionError)) throw err;
        return this.syncer.sync(await this.failPod(pod, err.reason, err.message));
      }
    }
    if (pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed') {
      try {
        this.cpus.admit(pod);
      } catch (err) {
        if (!(err instanceof CpuAdmissionError)) throw err;
        this.devices?.release(uid);
        return this.syncer.sync(await this.failPod(pod, err.reason, err.message));
      }
    }
    // The pod cgroup exists before the sandbox, as the kubelet's pod container manager makes it.
    if (pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed') this.containerManager.ensurePod(pod);
    return this.syncer.sync(pod);
  }

  /** One eviction pass; like upstream, waits (up to 30 s) for evicted pods to stop before looking again. */
  private async evictionPass() {
    const evicted = await this.eviction.synchronize();
    const end = Date.now() + 30_000;
    for (const e of evicted) {
      const uid = e.pod.metadata.uid ?? '';
      while (!this.stopped && Date.now() < end) {
        const rt = await this.cache.refresh(uid);
        if (!this.evictions.has(uid) && !rt.containers.some((c) => c.state === cri.ContainerState.CONTAINER_RUNNING)) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /** What the container managers add to a container's CRI config (upstream GenerateRunContainerOptions). */
  private async runContainerOptions(pod: Pod, containerName: string, cfg: cri.ContainerConfig): Promise<cri.ContainerConfig> {
    // Plugins that asked for it hear PreStartContainer before the container is created (upstream GetDeviceRunContainerOptions).
    await this.devices?.preStart(pod, containerName);
    const out = this.devices ? this.devices.applyToContainer(pod, containerName, cfg) : cfg;
    const cpuset = this.cpus.cpusetFor(pod, containerName);
    if (cpuset === undefined || !out.linux?.resources) return out;
    return { ...out, linux: { ...out.linux, resources: { ...out.linux.resources, cpusetCpus: cpuset } } };
  }

  /** Marks an evicted pod Failed (reason Evicted) inside its worker; the sync that follows kills it. */
  private async applyEviction(pod: Pod, e: Eviction): Promise<Pod> {
    return this.failPod(pod, 'Evicted', e.message, e.condition);
  }

  /** Marks a pod Failed with a reason (eviction, admission rejection); the sync that follows kills it. */
  private async failPod(pod: Pod, reason: string, message: string, condition?: Eviction['condition']): Promise<Pod> {
    const cur = await this.o.store.get('Pod', pod.metadata.namespace, pod.metadata.name ?? '');
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const conditions = (cur.status?.conditions ?? []).filter((c) => c.type !== 'DisruptionTarget').map((c) =>
      c.type === 'Ready' || c.type === 'ContainersReady' ? { ...c, status: 'False' as const, lastTransitionTime: now } : c,
    );
    if (condition) conditions.push({ ...condition, lastTransitionTime: now });
    const { resourceVersion: _rv, ...metadata } = cur.metadata;
    const updated = await this.o.store.updateStatus({ ...cur, metadata, status: { ...(cur.status ?? {}), phase: 'Failed', reason, message, conditions } });
    this.events.event(updated, 'Warning', reason, message);
    this.byUid.set(updated.metadata.uid ?? '', updated);
    return updated;
  }

  private forgetCgroup(uid: string, result: SyncResult): SyncResult {
    if (result.done) {
      this.containerManager.removePod(uid);
      this.devices?.release(uid);
      this.cpus.release(uid);
    }
    return result;
  }

  /** The pod's cgroup as this kubelet set it up (QoS class, cgroup_parent, files), for describe and stats. */
  podCgroup(uid: string): PodCgroupInfo | undefined {
    return this.containerManager.pod(uid);
  }

  /** Static pods: run the manifests in staticPodPath and keep a mirror Pod for each in the store. */
  private async syncStaticPods() {
    const dir = this.o.staticPodPath!;
    if (!fs.existsSync(dir)) return;
    for (const file of fs.readdirSync(dir).filter((f) => /\.(ya?ml|json)$/.test(f)).sort()) {
      const text = fs.readFileSync(path.join(dir, file), 'utf8');
      let objs: KubeObject[];
      try {
        objs = parseManifests(text);
      } catch (err) {
        this.error(err, `static pod manifest ${file}`);
        continue;
      }
      for (const obj of objs) {
        if (obj.kind !== 'Pod') continue;
        const pod = obj as Pod;
        const hash = createHash('sha256').update(`${this.nodeName}/${file}/${JSON.stringify(pod.spec)}`).digest('hex');
        const mirror: Pod = {
          ...pod,
          metadata: {
            ...pod.metadata,
            name: `${pod.metadata.name}-${this.nodeName}`,
            namespace: pod.metadata.namespace ?? 'default',
            annotations: {
              ...(pod.metadata.annotations ?? {}),
              [MIRROR_POD_ANNOTATION]: hash.slice(0, 32),
              [CONFIG_SOURCE_ANNOTATION]: 'file',
            },
          },
          spec: { ...pod.spec, nodeName: this.nodeName },
        };
        try {
          await this.o.store.create(mirror);
        } catch (err) {
          if (!isAlreadyExists(err)) this.error(err, `mirror pod ${mirror.metadata.name}`);
        }
      }
    }
  }

  /** The runtime view and status of one pod, for tooling. */
  async describePod(namespace: string, name: string) {
    try {
      const pod = await this.o.store.get('Pod', namespace, name);
      return { pod, runtime: await this.cache.refresh(pod.metadata.uid ?? '') };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}

/** The node's resolver settings from `file` (undefined for "" or a missing file: no node resolver). */
function readHostDNS(file: string): HostDNSConfig | undefined {
  if (!file) return undefined;
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return undefined;
  }
  if (st.size > MAX_RESOLV_CONF_BYTES) throw new Error(`${file} is longer than ${MAX_RESOLV_CONF_BYTES} bytes`);
  return parseResolvConf(fs.readFileSync(file, 'utf8'));
}
