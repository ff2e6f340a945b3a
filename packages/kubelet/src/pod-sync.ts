// One pass of a pod worker, modelled on kubelet's SyncPod / SyncTerminatingPod: bring the runtime in line
// with the pod spec (volumes, sandbox, image pulls, init containers one at a time, then app containers,
// restarts with back-off, liveness kills) and report status; or tear the pod down when it is deleted.
import { type Container, isNotFound, type Pod, type PodStatus, type Secret, type Store } from '@kemu/core';
import type { EventRecorder } from '@kemu/core/controllers';
import { cri } from '@kemu/proto';
import { type Backoff, goDuration } from './backoff.js';
import type { ContainerResourceOptions } from './cm-qos.js';
import { type EnvObjectSource, makeEnvironmentVariables } from './container-env.js';
import { ContainerConfigError, containerConfig, type SandboxContext, sandboxConfig } from './cri-config.js';
import { hostsFileMount } from './etc-hosts.js';
import { pullCredentials } from './image-pull-secrets.js';
import { pinSourceSubPaths } from './subpath-pin.js';
import { withTerminationMessage } from './termination-message.js';
import { activeDeadlineRemainingMs, DEADLINE_EXCEEDED } from './active-deadline.js';
import { type HookRunner, LifecycleHookError, runLifecycleHandler, runPreStop } from './lifecycle-handlers.js';
import { storeObjectSource } from './object-source.js';
import { computePodStatus, type ObservedContainer, sameStatus } from './pod-status.js';
import { type ProbeManager, realProbeTransport } from './prober.js';
import { isReadySandbox, type PodRuntime, type RuntimeCache } from './runtime-cache.js';
import type { ImageApi, ProbeTransport, RuntimeApi } from './types.js';
import { type VolumeManager, VolumeWaitError } from './volume-manager.js';

export interface SyncResult {
  /** Sync again after this many ms (back-off expiry, volume wait, init container progress). */
  requeueMs?: number;
  /** The pod is gone from the runtime and the store: drop its worker. */
  done?: boolean;
}

export interface SyncDeps {
  store: Store;
  nodeName: string;
  nodeIP: () => string;
  runtimeName: () => string;
  runtime: RuntimeApi;
  images: ImageApi;
  cache: RuntimeCache;
  volumes: VolumeManager;
  probes: ProbeManager;
  events: EventRecorder;
  sandboxCtx: SandboxContext;
  crashBackoff: Backoff;
  pullBackoff: Backoff;
  /** CFS period, quota enforcement and node memory for container resources (KubeletConfiguration). */
  containerResources?: ContainerResourceOptions;
  /** Adds what the container manager hands a container (device plugins' Allocate answers). */
  containerConfigHook?: (pod: Pod, container: Container, cfg: cri.ContainerConfig) => cri.ContainerConfig | Promise<cri.ContainerConfig>;
  /** ConfigMaps, Secrets, Services and the node's allocatable for env and volumes (default: the store). */
  objects?: EnvObjectSource;
  /** Where httpGet lifecycle hooks go (default: real sockets). */
  hookTransport?: ProbeTransport;
}

/** The shortest StopContainer timeout after a preStop hook (upstream minimumGracePeriodInSeconds). */
const MINIMUM_GRACE_SECONDS = 2;

const RUNNING = cri.ContainerState.CONTAINER_RUNNING;
const EXITED = cri.ContainerState.CONTAINER_EXITED;
const CREATED = cri.ContainerState.CONTAINER_CREATED;

/** Errors that mean "the image can't be had"; the container waits with ErrImagePull / ImagePullBackOff. */
class ImagePullError extends Error {}

export class PodSyncer {
  /** Per pod: container name -> why the kubelet is holding it back. */
  private waiting = new Map<string, Map<string, { reason: string; message?: string }>>();
  private sandboxIPs = new Map<string, string[]>();
  /** Pods whose containers this syncer created, started, stopped or removed since their sync began. */
  private touched = new Set<string>();

  private readonly objects: EnvObjectSource;
  private readonly hooks: HookRunner;

  constructor(private readonly d: SyncDeps) {
    this.objects = d.objects ?? storeObjectSource(d.store, d.nodeName);
    this.hooks = { runtime: d.runtime, transport: d.hookTransport ?? realProbeTransport };
  }

  private holdBack(uid: string, name: string, reason: string, message?: string) {
    let m = this.waiting.get(uid);
    if (!m) {
      m = new Map();
      this.waiting.set(uid, m);
    }
    m.set(name, { reason, message });
  }

  private release(uid: string, name: string) {
    this.waiting.get(uid)?.delete(name);
  }

  /** Sync a pod that exists in the store and is not being deleted. */
  async sync(pod: Pod): Promise<SyncResult> {
    const uid = pod.metadata.uid ?? '';
    this.touched.delete(uid);
    let rt = await this.d.cache.current(uid);
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') {
      await this.killPod(pod, rt, 0, false);
      return {};
    }
    const deadlineMs = activeDeadlineRemainingMs(pod);
    if (deadlineMs !== undefined && deadlineMs <= 0) {
      // The active deadline handler: the pod is killed and fails for good.
      this.d.events.event(pod, 'Normal', DEADLINE_EXCEEDED.reason, DEADLINE_EXCEEDED.message);
      await this.killPod(pod, rt, pod.spec.terminationGracePeriodSeconds ?? 30, false);
      await this.writeStatus(pod, await this.d.cache.refresh(uid), undefined, DEADLINE_EXCEEDED);
      return {};
    }

    let volumePaths: Map<string, string>;
    try {
      volumePaths = await this.d.volumes.mount(pod);
    } catch (err) {
      if (!(err instanceof VolumeWaitError)) throw err;
      const what = err.volume ? ` for volume ${JSON.stringify(err.volume)} ` : '';
      this.d.events.event(pod, 'Warning', err.reason, `MountVolume.SetUp failed${what}: ${err.message}`);
      await this.writeStatus(pod, rt, 'ContainerCreating');
      return { requeueMs: 500 };
    }

    // Sandbox: create one when there is none ready. A sandbox that died takes its containers with it.
    let sandbox = rt.sandboxes[0];
    let created: cri.PodSandboxConfig | undefined;
    if (!isReadySandbox(sandbox)) {
      if (sandbox && this.allDoneForGood(pod, rt)) {
        await this.writeStatus(pod, rt);
        return {};
      }
      if (sandbox) await this.killPod(pod, rt, 0, false);
      const attempt = sandbox ? (sandbox.metadata?.attempt ?? 0) + 1 : 0;
      created = sandboxConfig(pod, attempt, this.d.sandboxCtx);
      const res = await this.d.runtime.RunPodSandbox({ config: created, runtimeHandler: pod.spec.runtimeClassName ?? '' });
      rt = await this.d.cache.refresh(uid);
      sandbox = rt.sandboxes.find((s) => s.id === res.podSandboxId) ?? rt.sandboxes[0];
      if (!sandbox) throw new Error(`sandbox ${res.podSandboxId} vanished right after RunPodSandbox`);
    }
    const sandboxId = sandbox.id!;
    // The config the sandbox was just made with, or the pod's as it is now for a sandbox made before. Only a
    // container to pull or create needs it, so a resync of a running pod does not build it.
    const attempt = sandbox.metadata?.attempt ?? 0;
    let built = created && created.metadata?.attempt === attempt ? created : undefined;
    const config = () => (built ??= sandboxConfig(pod, attempt, this.d.sandboxCtx));
    const podIPs = await this.podIPs(sandboxId);

    let requeueMs: number | undefined;
    const wantSooner = (ms: number) => {
      requeueMs = requeueMs === undefined ? ms : Math.min(requeueMs, ms);
    };
    if (deadlineMs !== undefined) wantSooner(deadlineMs + 10);
    const policy = pod.spec.restartPolicy ?? 'Always';

    // Init containers, one at a time; a sidecar (restartPolicy Always) counts as done once started.
    let initDone = true;
    for (const c of pod.spec.initContainers ?? []) {
      const sidecar = c.restartPolicy === 'Always';
      const latest = this.latest(rt, sandboxId, c.name);
      if (latest?.state === RUNNING) {
        if (sidecar) continue;
        initDone = false;
        break;
      }
      if (latest?.state === EXITED) {
        const st = await this.d.cache.status(latest);
        if (!sidecar && st?.exitCode === 0) continue;
        initDone = false;
        if (!sidecar && policy === 'Never') break; // the pod fails
        const wait = await this.restart(pod, c, latest, st, sandboxId, config, volumePaths, podIPs, 'init');
        if (wait) wantSooner(wait);
        break;
      }
      initDone = false;
      if (latest?.state === CREATED) await this.startExisting(pod, c, latest.id!, podIPs);
      else {
        const wait = await this.startNew(pod, c, 0, sandboxId, config, volumePaths, podIPs, 'init');
        if (wait) wantSooner(wait);
      }
      if (!sidecar) break;
    }

    if (initDone) {
      for (const c of pod.spec.containers) {
        const latest = this.latest(rt, sandboxId, c.name);
        if (!latest) {
          const wait = await this.startNew(pod, c, 0, sandboxId, config, volumePaths, podIPs, 'regular');
          if (wait) wantSooner(wait);
          continue;
        }
        if (latest.state === CREATED) {
          await this.startExisting(pod, c, latest.id!, podIPs);
          continue;
        }
        if (latest.state === RUNNING) {
          const failure = this.d.probes.failed(latest.id!);
          if (failure) {
            const what = failure.kind === 'startup' ? 'failed startup probe' : 'failed liveness probe';
            this.d.events.event(pod, 'Normal', 'Killing', `Container ${c.name} ${what}, will be restarted`);
            this.d.probes.removeContainer(latest.id!);
            await this.killContainer(pod, c, latest.id!, pod.spec.terminationGracePeriodSeconds ?? 30, podIPs[0] ?? '');
            wantSooner(0);
          }
          continue;
        }
        if (latest.state === EXITED) {
          const st = await this.d.cache.status(latest);
          const code = st?.exitCode ?? 0;
          const restart = policy === 'Always' || (policy === 'OnFailure' && code !== 0);
          if (!restart) continue;
          const wait = await this.restart(pod, c, latest, st, sandboxId, config, volumePaths, podIPs, 'regular');
          if (wait) wantSooner(wait);
        }
      }
      // Ephemeral (debug) containers: started once the pod runs, never restarted.
      for (const ec of pod.spec.ephemeralContainers ?? []) {
        if (this.latest(rt, sandboxId, ec.name)) continue;
        const wait = await this.startNew(pod, ec, 0, sandboxId, config, volumePaths, podIPs, 'regular');
        if (wait) wantSooner(wait);
      }
    } else if (requeueMs === undefined) {
      // Waiting for an init container to finish: PLEG will notice, but poll too in case events are lost.
      wantSooner(1000);
    }

    // What this sync did shows in a fresh list; a sync that changed nothing reports what it started from.
    if (this.touched.delete(uid)) rt = await this.d.cache.refresh(uid);
    const status = await this.writeStatus(pod, rt);
    // The first status sets startTime: the deadline counts from it, and no later event may bring the pod back.
    if (deadlineMs === undefined) {
      const left = activeDeadlineRemainingMs({ ...pod, status });
      if (left !== undefined) wantSooner(Math.max(0, left) + 10);
    }
    return requeueMs === undefined ? {} : { requeueMs };
  }

  /** Whether the pod has run to completion under restartPolicy Never/OnFailure: no new sandbox then. */
  private allDoneForGood(pod: Pod, rt: PodRuntime): boolean {
    const policy = pod.spec.restartPolicy ?? 'Always';
    if (policy === 'Always') return false;
    const names = pod.spec.containers.map((c) => c.name);
    return names.every((n) => rt.containers.some((c) => c.metadata?.name === n && c.state === EXITED));
  }

  private latest(rt: PodRuntime, sandboxId: string, name: string): cri.Container | undefined {
    return rt.containers.find((c) => c.podSandboxId === sandboxId && c.metadata?.name === name);
  }

  private async podIPs(sandboxId: string): Promise<string[]> {
    let ips = this.sandboxIPs.get(sandboxId);
    if (!ips) {
      const st = await this.d.runtime.PodSandboxStatus({ podSandboxId: sandboxId });
      const net = st.status?.network;
      ips = net?.ip ? [net.ip, ...(net.additionalIps ?? []).map((a) => a.ip ?? '').filter(Boolean)] : [];
      this.sandboxIPs.set(sandboxId, ips);
    }
    return ips;
  }

  /** Restart an exited container, honouring CrashLoopBackOff. Returns ms to wait, if held back. */
  private async restart(
    pod: Pod,
    c: Container,
    latest: cri.Container,
    st: cri.ContainerStatus | undefined,
    sandboxId: string,
    config: () => cri.PodSandboxConfig,
    volumePaths: Map<string, string>,
    podIPs: string[],
    kind: 'init' | 'regular',
  ): Promise<number | undefined> {
    const uid = pod.metadata.uid ?? '';
    const key = `${uid}/${c.name}`;
    const finished = st?.finishedAt ? Math.floor(st.finishedAt / 1e6) : Date.now();
    const ran = st?.startedAt && st.finishedAt ? Math.floor((st.finishedAt - st.startedAt) / 1e6) : 0;
    const wait = this.d.crashBackoff.failed(key, latest.id!, finished, ran);
    if (wait > 0) {
      const delay = goDuration(this.d.crashBackoff.currentDelay(key));
      const msg = `back-off ${delay} restarting failed container=${c.name} pod=${pod.metadata.name}_${pod.metadata.namespace}(${uid})`;
      this.holdBack(uid, c.name, 'CrashLoopBackOff', msg);
      this.d.events.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
      return wait;
    }
    this.d.probes.removeContainer(latest.id!);
    const attempt = (latest.metadata?.attempt ?? 0) + 1;
    const held = await this.startNew(pod, c, attempt, sandboxId, config, volumePaths, podIPs, kind);
    // Keep the previous attempt (lastState); remove older ones as the kubelet's container GC would.
    const rt = this.d.cache.get(uid);
    for (const old of rt.containers.filter((x) => x.metadata?.name === c.name && x.id !== latest.id && x.state === EXITED)) {
      if ((old.metadata?.attempt ?? 0) < (latest.metadata?.attempt ?? 0)) await this.removeQuietly(uid, old.id!);
    }
    return held;
  }

  private async removeQuietly(uid: string, containerId: string) {
    this.touched.add(uid);
    try {
      await this.d.runtime.RemoveContainer({ containerId });
    } catch (err) {
      if ((err as { code?: number }).code !== 5) throw err;
    }
  }

  private async ensureImage(pod: Pod, c: Container, config: () => cri.PodSandboxConfig): Promise<string> {
    const image = c.image ?? '';
    const policy = c.imagePullPolicy ?? 'IfNotPresent';
    if (policy !== 'Always') {
      const st = await this.d.images.ImageStatus({ image: { image } });
      if (st.image?.id) return st.image.id;
      if (policy === 'Never') {
        throw new ImagePullError(`Container image "${image}" is not present with pull policy of Never`);
      }
    }
    this.d.events.event(pod, 'Normal', 'Pulling', `Pulling image "${image}"`);
    const started = Date.now();
    // Each credential that applies is tried in turn (most specific first); none means an anonymous pull.
    const creds = pullCredentials(image, await this.pullSecrets(pod));
    let last: unknown;
    for (const auth of creds.length ? creds : [undefined]) {
      try {
        const res = await this.d.images.PullImage({ image: { image }, sandboxConfig: config(), ...(auth ? { auth } : {}) });
        this.d.events.event(pod, 'Normal', 'Pulled', `Successfully pulled image "${image}" in ${Date.now() - started}ms`);
        return res.imageRef ?? image;
      } catch (err) {
        last = err;
      }
    }
    const msg = (last as { details?: string }).details ?? (last as Error).message;
    throw new ImagePullError(`Failed to pull image "${image}": ${msg}`);
  }

  /** The pod's imagePullSecrets that exist; a warning event names the ones that do not. */
  private async pullSecrets(pod: Pod): Promise<Secret[]> {
    const found: Secret[] = [];
    const missing: string[] = [];
    for (const ref of pod.spec.imagePullSecrets ?? []) {
      const s = await this.objects.secret(pod.metadata.namespace ?? 'default', ref.name);
      if (s) found.push(s);
      else missing.push(`"${ref.name}"`);
    }
    if (missing.length) {
      this.d.events.event(
        pod,
        'Warning',
        'FailedToRetrieveImagePullSecret',
        `Unable to retrieve some image pull secrets (${missing.join(', ')}); attempting to pull the image may not succeed.`,
      );
    }
    return found;
  }

  /** Pull, create and start a container. Returns ms to wait when held back by an image pull back-off. */
  private async startNew(
    pod: Pod,
    c: Container,
    attempt: number,
    sandboxId: string,
    config: () => cri.PodSandboxConfig,
    volumePaths: Map<string, string>,
    podIPs: string[],
    kind: 'init' | 'regular',
  ): Promise<number | undefined> {
    const uid = pod.metadata.uid ?? '';
    const pullKey = `${uid}/${c.name}`;
    const wait = this.d.pullBackoff.remaining(pullKey);
    if (wait > 0) {
      this.holdBack(uid, c.name, 'ImagePullBackOff', `Back-off pulling image "${c.image}"`);
      return wait;
    }
    try {
      await this.ensureImage(pod, c, config);
      this.d.pullBackoff.reset(pullKey);
    } catch (err) {
      if (!(err instanceof ImagePullError)) throw err;
      this.holdBack(uid, c.name, 'ErrImagePull', err.message);
      this.d.events.event(pod, 'Warning', 'Failed', err.message);
      return this.d.pullBackoff.failed(pullKey, `${Date.now()}`, Date.now(), 0) || this.d.pullBackoff.settings.initialMs;
    }
    let cfg: cri.ContainerConfig;
    try {
      const hostIPs = [this.d.nodeIP()];
      const { env, warnings } = await makeEnvironmentVariables(pod, c, this.objects, { podIPs: pod.spec.hostNetwork ? hostIPs : podIPs, hostIPs });
      for (const w of warnings) this.d.events.event(pod, 'Warning', w.reason, w.message);
      cfg = containerConfig(pod, c, attempt, { volumePaths, kind, env, resources: this.d.containerResources });
      if (this.d.volumes.managesDirs) {
        pinSourceSubPaths(pod, c, cfg.mounts ?? [], this.d.volumes.podDir(pod));
        const hosts = await hostsFileMount(pod, c, this.d.volumes.podDir(pod), podIPs, this.d.sandboxCtx.clusterDomain);
        if (hosts) cfg.mounts = [...(cfg.mounts ?? []), hosts];
      }
    } catch (err) {
      if (!(err instanceof ContainerConfigError)) throw err;
      this.holdBack(uid, c.name, 'CreateContainerConfigError', err.message);
      this.d.events.event(pod, 'Warning', 'Failed', `Error: ${err.message}`);
      return this.d.pullBackoff.settings.initialMs;
    }
    if (this.d.containerConfigHook) cfg = await this.d.containerConfigHook(pod, c, cfg);
    this.touched.add(uid);
    const created = await this.d.runtime.CreateContainer({ podSandboxId: sandboxId, config: cfg, sandboxConfig: config() });
    this.d.events.event(pod, 'Normal', 'Created', `Created container ${c.name}`);
    await this.startExisting(pod, c, created.containerId!, podIPs);
    return undefined;
  }

  private async startExisting(pod: Pod, c: Container, containerId: string, podIPs: string[]) {
    const uid = pod.metadata.uid ?? '';
    this.touched.add(uid);
    await this.d.runtime.StartContainer({ containerId });
    this.release(uid, c.name);
    this.d.events.event(pod, 'Normal', 'Started', `Started container ${c.name}`);
    const postStart = c.lifecycle?.postStart;
    if (postStart) {
      try {
        await runLifecycleHandler(this.hooks, postStart, { pod, container: c, containerId, podIP: podIPs[0] ?? '' });
      } catch (err) {
        if (!(err instanceof LifecycleHookError)) throw err;
        // The hook's output is not put into the event, so that secrets do not leak (as upstream).
        this.d.events.event(pod, 'Warning', 'FailedPostStartHook', 'PostStartHook failed');
        await this.killContainer(pod, c, containerId, pod.spec.terminationGracePeriodSeconds ?? 30, podIPs[0] ?? '');
        return;
      }
    }
    this.d.probes.add({ pod, container: c, containerId, podIP: podIPs[0] ?? '' });
  }

  /**
   * Stops one container as the kubelet's killContainer does: the preStop hook first, for at most the grace
   * period, whose time is taken off the grace StopContainer is given (never under two seconds).
   */
  private async killContainer(pod: Pod, c: Container, containerId: string, graceSeconds: number, podIP: string) {
    this.d.events.event(pod, 'Normal', 'Killing', `Stopping container ${c.name}`);
    this.touched.add(pod.metadata.uid ?? '');
    let grace = graceSeconds;
    const preStop = c.lifecycle?.preStop;
    if (preStop && grace > 0) {
      grace -= await runPreStop(this.hooks, preStop, { pod, container: c, containerId, podIP }, grace, (message) =>
        this.d.events.event(pod, 'Warning', 'FailedPreStopHook', message),
      );
      // A hook that used up the grace period still leaves the container a short window for SIGTERM.
      if (grace < MINIMUM_GRACE_SECONDS) grace = MINIMUM_GRACE_SECONDS;
    }
    await this.d.runtime.StopContainer({ containerId, timeout: grace });
  }

  /**
   * Stops every container (graceful, `graceSeconds`) and sandbox of the pod; with `remove`, also unmounts
   * its volumes and removes the sandboxes (CNI DEL runs on stop, inside the runtime).
   */
  async killPod(pod: Pod | { metadata: Pod['metadata']; spec?: Pod['spec'] }, rt: PodRuntime, graceSeconds: number, remove: boolean) {
    const uid = pod.metadata.uid ?? '';
    this.d.probes.removePod(uid);
    const running = rt.containers.filter((c) => c.state === RUNNING || c.state === CREATED);
    const spec = 'spec' in pod ? pod.spec : undefined;
    const all = [...(spec?.initContainers ?? []), ...(spec?.containers ?? []), ...(spec?.ephemeralContainers ?? [])];
    const podIP = rt.sandboxes[0]?.id ? (this.sandboxIPs.get(rt.sandboxes[0].id) ?? [])[0] ?? '' : '';
    const kill = (c: cri.Container, grace: number) => {
      const cs = all.find((x) => x.name === c.metadata?.name);
      if (!cs) return this.d.runtime.StopContainer({ containerId: c.id, timeout: grace });
      return this.killContainer(pod as Pod, cs, c.id!, grace, podIP);
    };
    // As upstream: the main containers first, then sidecar init containers one by one in reverse order,
    // with what is left of the grace period.
    const sidecars = (spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always').map((c) => c.name);
    const isSidecar = (c: cri.Container) => sidecars.includes(c.metadata?.name ?? '');
    const started = Date.now();
    await Promise.all(running.filter((c) => !isSidecar(c)).map((c) => kill(c, graceSeconds)));
    const ordered = running.filter(isSidecar).sort((a, b) => sidecars.indexOf(b.metadata?.name ?? '') - sidecars.indexOf(a.metadata?.name ?? ''));
    for (const c of ordered) await kill(c, Math.max(0, graceSeconds - Math.floor((Date.now() - started) / 1000)));
    for (const s of rt.sandboxes) {
      if (s.state === cri.PodSandboxState.SANDBOX_READY) await this.d.runtime.StopPodSandbox({ podSandboxId: s.id });
      this.sandboxIPs.delete(s.id!);
    }
    if (remove) {
      await this.d.volumes.unmount(pod);
      for (const s of rt.sandboxes) await this.d.runtime.RemovePodSandbox({ podSandboxId: s.id });
      this.waiting.delete(uid);
      this.d.crashBackoff.forgetPrefix(`${uid}/`);
      this.d.pullBackoff.forgetPrefix(`${uid}/`);
    }
    await this.d.cache.refresh(uid);
  }

  /**
   * Graceful termination of a pod marked for deletion, then the final delete that removes it from the
   * store (the kubelet's grace-0 delete). Also used for pods the store no longer has (orphans).
   */
  async terminate(pod: Pod | undefined, uid: string): Promise<SyncResult> {
    const rt = await this.d.cache.refresh(uid);
    const grace = pod?.metadata.deletionGracePeriodSeconds ?? pod?.spec.terminationGracePeriodSeconds ?? 0;
    await this.killPod(pod ?? { metadata: { name: '', uid } }, rt, grace, true);
    if (pod) {
      try {
        await this.d.store.delete('Pod', pod.metadata.namespace, pod.metadata.name ?? '', {
          gracePeriodSeconds: 0,
          preconditions: { uid },
        });
      } catch (err) {
        if (!isNotFound(err) && (err as { reason?: string }).reason !== 'Conflict') throw err;
      }
    }
    return { done: true };
  }

  private async observe(pod: Pod, rt: PodRuntime, sandboxId: string | undefined, forcedReason?: string) {
    const uid = pod.metadata.uid ?? '';
    const held = this.waiting.get(uid);
    const build = async (c: Container): Promise<ObservedContainer> => {
      const mine = rt.containers.filter((x) => x.metadata?.name === c.name && (!sandboxId || x.podSandboxId === sandboxId));
      const current = withTerminationMessage(c, mine[0] ? await this.d.cache.status(mine[0]) : undefined);
      const previous = withTerminationMessage(c, mine[1] ? await this.d.cache.status(mine[1]) : undefined);
      const running = current?.state === RUNNING;
      const waiting = held?.get(c.name) ?? (current ? undefined : forcedReason ? { reason: forcedReason } : undefined);
      return {
        spec: c,
        current,
        previous,
        ready: running && this.d.probes.ready(current!.id!, c),
        started: running && this.d.probes.started(current!.id!, c),
        waiting,
      };
    };
    return {
      init: await Promise.all((pod.spec.initContainers ?? []).map(build)),
      regular: await Promise.all(pod.spec.containers.map(build)),
      ephemeral: await Promise.all((pod.spec.ephemeralContainers ?? []).map(build)),
    };
  }

  private async writeStatus(pod: Pod, rt: PodRuntime, forcedReason?: string, failed?: { reason: string; message: string }): Promise<PodStatus> {
    const sandbox = rt.sandboxes[0];
    const ready = isReadySandbox(sandbox);
    const podIPs = ready ? await this.podIPs(sandbox!.id!) : [];
    const { init, regular, ephemeral } = await this.observe(pod, rt, sandbox?.id, forcedReason);
    const status = computePodStatus({
      pod,
      nodeIP: this.d.nodeIP(),
      podIPs: pod.spec.hostNetwork ? [this.d.nodeIP()] : podIPs,
      sandboxReady: ready,
      init,
      regular,
      ephemeral,
      runtimeName: this.d.runtimeName(),
    });
    if (failed) Object.assign(status, { phase: 'Failed', reason: failed.reason, message: failed.message });
    await this.putStatus(pod, status);
    return status;
  }

  private async putStatus(pod: Pod, status: PodStatus) {
    if (sameStatus(pod.status, status)) return;
    const { resourceVersion: _rv, ...metadata } = pod.metadata;
    try {
      await this.d.store.updateStatus({ ...pod, metadata, status }, { readOnlyResult: true });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  forget(uid: string) {
    this.waiting.delete(uid);
    this.touched.delete(uid);
  }
}
