// Mounting a pod's volumes the way the kubelet's CSI volume plugin does: wait for the VolumeAttachment
// when the driver needs attaching, NodeStageVolume once per volume per node (global mount), then
// NodePublishVolume per pod; and the reverse when the pod goes. emptyDir and hostPath are local paths;
// configMap, secret, downwardAPI and projected volumes are written here (AtomicWriter) and rewritten on
// every sync, so a changed source reaches the files.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  type CSIDriver,
  isNotFound,
  isPodOwnedClaim,
  notCreatedForPodMessage,
  type PersistentVolume,
  type PersistentVolumeAccessMode,
  type PersistentVolumeClaim,
  type Pod,
  podVolumeClaimName,
  type Store,
  type VolumeAttachment,
} from '@kemu/core';
import { csi } from '@kemu/proto';
import { AtomicWriter } from './atomic-writer.js';
import type { EnvObjectSource } from './container-env.js';
import { TokenManager } from './token-manager.js';
import type { CsiNodeApi, CsiPluginRegistry } from './types.js';
import { isSourceVolume, pluginDirName, sourcePayload, type TokenSource, VolumeSourceError } from './volume-sources.js';

/** Thrown while a volume cannot be set up yet (unbound claim, attach pending, driver not registered). */
export class VolumeWaitError extends Error {
  constructor(
    message: string,
    readonly reason = 'FailedMount',
    /** The volume that could not be set up, when one is to blame. */
    readonly volume?: string,
  ) {
    super(message);
    this.name = 'VolumeWaitError';
  }
}

/** The VolumeAttachment name the attach/detach controller uses: csi-<sha256(volumeHandle + driver + node)>. */
export function attachmentName(volumeHandle: string, driver: string, nodeName: string): string {
  return `csi-${createHash('sha256').update(`${volumeHandle}${driver}${nodeName}`).digest('hex')}`;
}

const ACCESS: Record<PersistentVolumeAccessMode, csi.VolumeCapability_AccessMode_Mode> = {
  ReadWriteOnce: csi.VolumeCapability_AccessMode_Mode.SINGLE_NODE_WRITER,
  ReadOnlyMany: csi.VolumeCapability_AccessMode_Mode.MULTI_NODE_READER_ONLY,
  ReadWriteMany: csi.VolumeCapability_AccessMode_Mode.MULTI_NODE_MULTI_WRITER,
  ReadWriteOncePod: csi.VolumeCapability_AccessMode_Mode.SINGLE_NODE_SINGLE_WRITER,
};

interface CsiMount {
  driver: string;
  volumeHandle: string;
  /** Unique name of the volume on this node ("kubernetes.io/csi/<driver>^<handle>"). */
  uniqueName: string;
  stagingPath?: string;
  targetPath: string;
}

interface PodVolumes {
  paths: Map<string, string>;
  csi: CsiMount[];
}

export class VolumeManager {
  private pods = new Map<string, PodVolumes>();
  /** Staged volumes: uniqueName -> pod UIDs using it. */
  private staged = new Map<string, Set<string>>();
  private stageCapable = new Map<string, boolean>();

  constructor(
    private readonly store: Store,
    private readonly nodeName: string,
    private readonly rootDir: string,
    private readonly plugins: CsiPluginRegistry | undefined,
    /** Creates local directories (emptyDir, CSI target parents) when true. */
    private readonly manageDirs: boolean,
    /** ConfigMaps, Secrets and the node's allocatable, for the volumes whose files the kubelet writes. */
    private readonly objects?: EnvObjectSource,
    /** Service account tokens for projected volumes (the TokenRequest API), when the cluster has one. */
    tokens?: TokenSource,
  ) {
    this.tokens = tokens ? new TokenManager(tokens) : undefined;
  }

  private readonly tokens?: TokenManager;

  /** Unique names of every CSI volume mounted on this node (node.status.volumesInUse). */
  inUse(): string[] {
    return [...this.staged.keys()].sort();
  }

  /** Whether this manager creates directories and files under the kubelet root (it has one of its own). */
  get managesDirs(): boolean {
    return this.manageDirs;
  }

  podDir(pod: Pod): string {
    return path.join(this.rootDir, 'pods', pod.metadata.uid ?? '');
  }

  /** Sets up every volume of the pod; returns host paths by volume name. Idempotent. */
  async mount(pod: Pod): Promise<Map<string, string>> {
    const uid = pod.metadata.uid ?? '';
    const have = this.pods.get(uid);
    if (have && have.paths.size === (pod.spec.volumes ?? []).length) {
      await this.refreshSources(pod, have);
      return have.paths;
    }
    const state: PodVolumes = have ?? { paths: new Map(), csi: [] };
    this.pods.set(uid, state);
    for (const vol of pod.spec.volumes ?? []) {
      if (state.paths.has(vol.name)) continue;
      if (vol.persistentVolumeClaim || vol.ephemeral) {
        // A generic ephemeral volume is the pod's own claim <pod>-<volume>, made by the ephemeral volume controller.
        const claim = { claimName: podVolumeClaimName(pod, vol)!, readOnly: vol.persistentVolumeClaim?.readOnly, ephemeral: !!vol.ephemeral };
        state.paths.set(vol.name, await this.mountClaim(pod, vol.name, claim, state));
      } else if (vol.csi) {
        const handle = `csi-${createHash('sha256').update(`${uid}${vol.name}`).digest('hex')}`;
        const plugin = this.plugin(vol.csi.driver);
        const targetPath = this.targetPath(pod, vol.name);
        await this.publish(plugin, {
          volumeId: handle,
          targetPath,
          readonly: vol.csi.readOnly ?? false,
          volumeCapability: { mount: { fsType: vol.csi.fsType ?? '' }, accessMode: { mode: ACCESS.ReadWriteOnce } },
          volumeContext: { ...(vol.csi.volumeAttributes ?? {}), ...this.podInfo(pod), 'csi.storage.k8s.io/ephemeral': 'true' },
        });
        state.csi.push({ driver: vol.csi.driver, volumeHandle: handle, uniqueName: `kubernetes.io/csi/${vol.csi.driver}^${handle}`, targetPath });
        state.paths.set(vol.name, targetPath);
      } else if (vol.hostPath) {
        state.paths.set(vol.name, vol.hostPath.path);
      } else if (isSourceVolume(vol)) {
        const dir = path.join(this.podDir(pod), 'volumes', pluginDirName(vol), vol.name);
        await this.writeSource(pod, vol, dir);
        state.paths.set(vol.name, dir);
      } else {
        // emptyDir gets a private directory under the pod.
        const dir = path.join(this.podDir(pod), 'volumes', pluginDirName(vol), vol.name);
        if (this.manageDirs) fs.mkdirSync(dir, { recursive: true, mode: 0o750 });
        state.paths.set(vol.name, dir);
      }
    }
    return state.paths;
  }

  /** Writes a configMap/secret/downwardAPI/projected volume's files; SetUp errors carry the kubelet's message. */
  private async writeSource(pod: Pod, vol: NonNullable<Pod['spec']['volumes']>[number], dir: string): Promise<boolean> {
    if (!this.objects) return false;
    let payload;
    try {
      payload = await sourcePayload(pod, vol, this.objects, this.tokens?.get);
    } catch (err) {
      if (err instanceof VolumeSourceError) throw new VolumeWaitError(err.message, 'FailedMount', vol.name);
      throw err;
    }
    if (!this.manageDirs) return false;
    const fsGroup = (pod.spec.securityContext as { fsGroup?: number } | undefined)?.fsGroup;
    return new AtomicWriter(dir, `volume ${JSON.stringify(vol.name)}`, fsGroup).write(payload);
  }

  /**
   * Rewrites the files of the pod's source volumes from their current objects (the kubelet's periodic
   * remount). A source that cannot be read now keeps its last files, as upstream does.
   */
  private async refreshSources(pod: Pod, state: PodVolumes): Promise<void> {
    for (const vol of pod.spec.volumes ?? []) {
      const dir = state.paths.get(vol.name);
      if (!dir || !isSourceVolume(vol)) continue;
      try {
        await this.writeSource(pod, vol, dir);
      } catch (err) {
        if (!(err instanceof VolumeWaitError)) throw err;
      }
    }
  }

  /** Tears down what `mount` set up for the pod (NodeUnpublish, NodeUnstage when last user). Idempotent. */
  async unmount(pod: Pod | { metadata: { uid?: string } }): Promise<void> {
    const uid = pod.metadata.uid ?? '';
    const state = this.pods.get(uid);
    if (!state) return;
    for (const m of [...state.csi].reverse()) {
      const plugin = this.plugins?.get(m.driver);
      if (!plugin) throw new VolumeWaitError(`driver name ${m.driver} not found in the list of registered CSI drivers`, 'FailedUnmount');
      await plugin.NodeUnpublishVolume({ volumeId: m.volumeHandle, targetPath: m.targetPath });
      state.csi.splice(state.csi.indexOf(m), 1);
      const users = this.staged.get(m.uniqueName);
      if (users) {
        users.delete(uid);
        if (users.size === 0) {
          if (m.stagingPath) await plugin.NodeUnstageVolume({ volumeId: m.volumeHandle, stagingTargetPath: m.stagingPath });
          this.staged.delete(m.uniqueName);
        }
      }
    }
    this.pods.delete(uid);
    this.tokens?.forgetPod(uid);
    if (this.manageDirs) fs.rmSync(this.podDir(pod as Pod), { recursive: true, force: true });
  }

  hasPod(uid: string): boolean {
    return this.pods.has(uid);
  }

  private plugin(driver: string): CsiNodeApi {
    const p = this.plugins?.get(driver);
    if (!p) throw new VolumeWaitError(`driver name ${driver} not found in the list of registered CSI drivers`);
    return p;
  }

  private targetPath(pod: Pod, name: string): string {
    return path.join(this.podDir(pod), 'volumes', 'kubernetes.io~csi', name, 'mount');
  }

  private podInfo(pod: Pod): Record<string, string> {
    return {
      'csi.storage.k8s.io/pod.name': pod.metadata.name ?? '',
      'csi.storage.k8s.io/pod.namespace': pod.metadata.namespace ?? 'default',
      'csi.storage.k8s.io/pod.uid': pod.metadata.uid ?? '',
      'csi.storage.k8s.io/serviceAccount.name': pod.spec.serviceAccountName ?? 'default',
    };
  }

  private async mountClaim(
    pod: Pod,
    volName: string,
    source: { claimName: string; readOnly?: boolean; ephemeral?: boolean },
    state: PodVolumes,
  ): Promise<string> {
    const ns = pod.metadata.namespace ?? 'default';
    let pvc: PersistentVolumeClaim;
    try {
      pvc = await this.store.get('PersistentVolumeClaim', ns, source.claimName);
    } catch (err) {
      if (isNotFound(err)) throw new VolumeWaitError(`persistentvolumeclaim "${source.claimName}" not found`);
      throw err;
    }
    if (source.ephemeral && !isPodOwnedClaim(pod, pvc)) throw new VolumeWaitError(notCreatedForPodMessage(pod, source.claimName), 'FailedMount', volName);
    if (pvc.status?.phase !== 'Bound' || !pvc.spec.volumeName) {
      throw new VolumeWaitError(`persistentvolumeclaim "${source.claimName}" is not bound`);
    }
    const pv: PersistentVolume = await this.store.get('PersistentVolume', '', pvc.spec.volumeName);
    if (pv.spec.hostPath) return pv.spec.hostPath.path;
    if (pv.spec.local) return pv.spec.local.path;
    const src = pv.spec.csi;
    if (!src) throw new VolumeWaitError(`persistentvolume "${pv.metadata.name}" has no volume source this kubelet supports`);
    const plugin = this.plugin(src.driver);

    // Attach: wait for the VolumeAttachment unless the CSIDriver says attaching is not required.
    let publishContext: Record<string, string> = {};
    if (await this.attachRequired(src.driver)) {
      const name = attachmentName(src.volumeHandle, src.driver, this.nodeName);
      let va: VolumeAttachment | undefined;
      try {
        va = await this.store.get('VolumeAttachment', '', name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      if (!va?.status?.attached) {
        const why = va?.status?.attachError?.message ? `: ${va.status.attachError.message}` : '';
        throw new VolumeWaitError(`volume ${pv.metadata.name} is not attached to node ${this.nodeName} yet${why}`, 'FailedAttachVolume');
      }
      publishContext = va.status.attachmentMetadata ?? {};
    }

    const block = pv.spec.volumeMode === 'Block';
    const mode = ACCESS[(pv.spec.accessModes ?? ['ReadWriteOnce'])[0]];
    const capability: csi.VolumeCapability = block
      ? { block: {}, accessMode: { mode } }
      : { mount: { fsType: src.fsType ?? '', mountFlags: pv.spec.mountOptions ?? [] }, accessMode: { mode } };
    const secrets = {}; // Secret objects are not modelled: secret refs resolve to empty maps.
    const uniqueName = `kubernetes.io/csi/${src.driver}^${src.volumeHandle}`;
    const uid = pod.metadata.uid ?? '';

    let stagingPath: string | undefined;
    if (await this.canStage(src.driver, plugin)) {
      stagingPath = path.join(
        this.rootDir,
        'plugins',
        'kubernetes.io',
        'csi',
        src.driver,
        createHash('sha256').update(src.volumeHandle).digest('hex'),
        'globalmount',
      );
      if (!this.staged.get(uniqueName)?.size) {
        if (this.manageDirs) fs.mkdirSync(path.dirname(stagingPath), { recursive: true, mode: 0o750 });
        await plugin.NodeStageVolume({
          volumeId: src.volumeHandle,
          publishContext,
          stagingTargetPath: stagingPath,
          volumeCapability: capability,
          secrets,
          volumeContext: src.volumeAttributes ?? {},
        });
      }
    }
    let users = this.staged.get(uniqueName);
    if (!users) {
      users = new Set();
      this.staged.set(uniqueName, users);
    }
    users.add(uid);

    const targetPath = this.targetPath(pod, pv.metadata.name ?? '');
    if (this.manageDirs) fs.mkdirSync(path.dirname(targetPath), { recursive: true, mode: 0o750 });
    await this.publish(plugin, {
      volumeId: src.volumeHandle,
      publishContext,
      stagingTargetPath: stagingPath ?? '',
      targetPath,
      volumeCapability: capability,
      readonly: source.readOnly === true || src.readOnly === true,
      secrets,
      volumeContext: { ...(src.volumeAttributes ?? {}), ...((await this.podInfoOnMount(src.driver)) ? this.podInfo(pod) : {}) },
    });
    state.csi.push({ driver: src.driver, volumeHandle: src.volumeHandle, uniqueName, stagingPath, targetPath });
    return targetPath;
  }

  private async publish(plugin: CsiNodeApi, req: csi.NodePublishVolumeRequest) {
    await plugin.NodePublishVolume(req);
  }

  private async driverObject(driver: string): Promise<CSIDriver | undefined> {
    try {
      return await this.store.get('CSIDriver', '', driver);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Upstream treats a driver without a CSIDriver object as needing attach. */
  private async attachRequired(driver: string): Promise<boolean> {
    return (await this.driverObject(driver))?.spec.attachRequired ?? true;
  }

  private async podInfoOnMount(driver: string): Promise<boolean> {
    return (await this.driverObject(driver))?.spec.podInfoOnMount ?? false;
  }

  private async canStage(driver: string, plugin: CsiNodeApi): Promise<boolean> {
    let can = this.stageCapable.get(driver);
    if (can === undefined) {
      const caps = await plugin.NodeGetCapabilities({});
      can = (caps.capabilities ?? []).some((c) => c.rpc?.type === csi.NodeServiceCapability_RPC_Type.STAGE_UNSTAGE_VOLUME);
      this.stageCapable.set(driver, can);
    }
    return can;
  }
}
