// The Node authorizer's graph (upstream's node authorizer graph and its populator): which objects a node may
// read because a pod bound to it references them. Kept from informers on Pods, PersistentVolumes and
// VolumeAttachments: a bound pod links the Secrets, ConfigMaps, ServiceAccount, PersistentVolumeClaims and
// ResourceClaims it names to its node; a PersistentVolume links its claim to itself and itself to the
// Secrets it names; a VolumeAttachment links itself to its node. Every question is a few map lookups.
import { InformerFactory, type KubeObject, type Store } from '@kemu/core';

/** The kinds of object a path can start from (upstream's vertex types). */
export type NodeGraphVertex = 'secret' | 'configmap' | 'serviceaccount' | 'pvc' | 'pv' | 'resourceclaim' | 'volumeattachment';

type Obj = { [k: string]: unknown };
const obj = (x: unknown): Obj | undefined => (x && typeof x === 'object' ? (x as Obj) : undefined);
const list = (x: unknown): Obj[] => (Array.isArray(x) ? x.map(obj).filter((o): o is Obj => !!o) : []);
const str = (x: unknown): string | undefined => (typeof x === 'string' && x ? x : undefined);
/** `o.a.b...`: the string at that path, if any. */
const at = (o: unknown, ...path: string[]): string | undefined => str(path.reduce<unknown>((v, k) => obj(v)?.[k], o));

/** Volume sources naming a Secret in the pod's namespace by `secretRef.name` (upstream VisitPodSecretNames). */
const SECRET_REF_VOLUMES = ['cephfs', 'cinder', 'flexVolume', 'rbd', 'scaleIO', 'iscsi', 'storageos'];

/** Every object of the pod's own namespace the pod references, as `kind/name` keys (kind as NodeGraphVertex). */
export function podReferences(pod: KubeObject): string[] {
  const spec = obj(pod.spec) ?? {};
  const out = new Set<string>();
  const add = (kind: NodeGraphVertex, name: string | undefined) => name && out.add(`${kind}/${name}`);
  for (const s of list(spec.imagePullSecrets)) add('secret', str(s.name));
  add('serviceaccount', str(spec.serviceAccountName));
  for (const c of [...list(spec.initContainers), ...list(spec.containers), ...list(spec.ephemeralContainers)]) {
    for (const e of list(c.envFrom)) {
      add('secret', at(e, 'secretRef', 'name'));
      add('configmap', at(e, 'configMapRef', 'name'));
    }
    for (const e of list(c.env)) {
      add('secret', at(e, 'valueFrom', 'secretKeyRef', 'name'));
      add('configmap', at(e, 'valueFrom', 'configMapKeyRef', 'name'));
    }
  }
  for (const v of list(spec.volumes)) {
    add('secret', at(v, 'secret', 'secretName'));
    add('secret', at(v, 'azureFile', 'secretName'));
    add('secret', at(v, 'csi', 'nodePublishSecretRef', 'name'));
    for (const k of SECRET_REF_VOLUMES) add('secret', at(v, k, 'secretRef', 'name'));
    add('configmap', at(v, 'configMap', 'name'));
    for (const p of list(obj(v.projected)?.sources)) {
      add('secret', at(p, 'secret', 'name'));
      add('configmap', at(p, 'configMap', 'name'));
    }
    add('pvc', at(v, 'persistentVolumeClaim', 'claimName'));
    // A generic ephemeral volume's claim is named <pod>-<volume>.
    if (obj(v.ephemeral) && str(v.name)) add('pvc', `${pod.metadata.name}-${v.name}`);
  }
  for (const c of list(spec.resourceClaims)) add('resourceclaim', str(c.resourceClaimName));
  for (const c of list(obj(pod.status)?.resourceClaimStatuses)) add('resourceclaim', str(c.resourceClaimName));
  return [...out];
}

/** The Secrets a PersistentVolume names, as `namespace/name` (upstream VisitPVSecretNames). */
export function persistentVolumeSecrets(pv: KubeObject): string[] {
  const spec = obj(pv.spec) ?? {};
  const claimNs = at(spec, 'claimRef', 'namespace') ?? '';
  const out = new Set<string>();
  const add = (ns: string | undefined, name: string | undefined) => ns && name && out.add(`${ns}/${name}`);
  const csi = obj(spec.csi);
  for (const k of ['controllerPublishSecretRef', 'nodeStageSecretRef', 'nodePublishSecretRef', 'controllerExpandSecretRef', 'nodeExpandSecretRef'])
    add(at(csi, k, 'namespace'), at(csi, k, 'name'));
  add(at(spec, 'azureFile', 'secretNamespace') ?? claimNs, at(spec, 'azureFile', 'secretName'));
  for (const k of ['cephfs', 'flexVolume', 'rbd', 'scaleIO', 'iscsi', 'storageos', 'cinder']) add(at(spec, k, 'secretRef', 'namespace') ?? claimNs, at(spec, k, 'secretRef', 'name'));
  return [...out];
}

/** How many pods on each node reference one object. */
type NodeCounts = Map<string, number>;

export class NodeGraph {
  private readonly factory: InformerFactory;
  /** `kind/namespace/name` -> the nodes whose pods reference it. */
  private readonly referenced = new Map<string, NodeCounts>();
  /** Each bound pod's node and references (to undo them when it changes or goes). */
  private readonly pods = new Map<string, { node: string; keys: string[] }>();
  /** PersistentVolume -> the claim (`namespace/name`) it is bound to. */
  private readonly pvClaims = new Map<string, string>();
  /** PersistentVolume -> the Secrets it names; and the reverse. */
  private readonly pvSecrets = new Map<string, string[]>();
  private readonly secretPVs = new Map<string, Set<string>>();
  /** VolumeAttachment -> its node. */
  private readonly attachments = new Map<string, string>();

  /** Whether the informers are this graph's own to start and stop (not a shared factory's). */
  private readonly ownInformers: boolean;

  /** `informers`: a factory shared with the API server's other parts, whose owner starts and stops it. */
  constructor(store: Store, opts: { informers?: InformerFactory; onError?: (err: unknown) => void } = {}) {
    this.factory = opts.informers ?? new InformerFactory(store, { onError: opts.onError });
    this.ownInformers = !opts.informers;
    const key = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;
    this.factory.informer('Pod').addEventHandler({
      onAdd: (p) => this.setPod(key(p), p),
      onUpdate: (_o, p) => this.setPod(key(p), p),
      onDelete: (p) => this.setPod(key(p), undefined),
    });
    this.factory.informer('PersistentVolume').addEventHandler({
      onAdd: (pv) => this.setPV(pv.metadata.name ?? '', pv),
      onUpdate: (_o, pv) => this.setPV(pv.metadata.name ?? '', pv),
      onDelete: (pv) => this.setPV(pv.metadata.name ?? '', undefined),
    });
    const setVA = (va: KubeObject, gone: boolean) => {
      const node = at(va.spec, 'nodeName');
      if (gone || !node) this.attachments.delete(va.metadata.name ?? '');
      else this.attachments.set(va.metadata.name ?? '', node);
    };
    this.factory.informer('VolumeAttachment').addEventHandler({ onAdd: (va) => setVA(va, false), onUpdate: (_o, va) => setVA(va, false), onDelete: (va) => setVA(va, true) });
  }

  async start(): Promise<void> {
    if (this.ownInformers) this.factory.start();
    await this.factory.waitForCacheSync();
  }

  async stop(): Promise<void> {
    if (this.ownInformers) await this.factory.stop();
  }

  /** Whether a path leads from the object to the node (upstream hasPathFrom). */
  hasPath(node: string, vertex: NodeGraphVertex, namespace: string, name: string): boolean {
    switch (vertex) {
      case 'volumeattachment':
        return this.attachments.get(name) === node;
      case 'pv':
        return this.pvReaches(node, name);
      case 'secret': {
        if (this.reaches(node, `secret/${namespace}/${name}`)) return true;
        for (const pv of this.secretPVs.get(`${namespace}/${name}`) ?? []) if (this.pvReaches(node, pv)) return true;
        return false;
      }
      default:
        return this.reaches(node, `${vertex}/${namespace}/${name}`);
    }
  }

  private reaches(node: string, key: string): boolean {
    return (this.referenced.get(key)?.get(node) ?? 0) > 0;
  }

  private pvReaches(node: string, pv: string): boolean {
    const claim = this.pvClaims.get(pv);
    return claim !== undefined && this.reaches(node, `pvc/${claim}`);
  }

  private setPod(podKey: string, pod: KubeObject | undefined): void {
    const node = pod ? at(pod.spec, 'nodeName') : undefined;
    const before = this.pods.get(podKey);
    // Pods not bound to a node reference nothing a node may read (most writes to a pod leave this unchanged).
    if (!node && !before) return;
    const ns = podKey.slice(0, podKey.indexOf('/'));
    const keys = node && pod ? podReferences(pod).map((k) => `${k.slice(0, k.indexOf('/'))}/${ns}/${k.slice(k.indexOf('/') + 1)}`) : [];
    if (before && before.node === node && before.keys.length === keys.length && before.keys.every((k, i) => k === keys[i])) return;
    if (before) for (const k of before.keys) this.count(k, before.node, -1);
    if (node) {
      for (const k of keys) this.count(k, node, 1);
      this.pods.set(podKey, { node, keys });
    } else this.pods.delete(podKey);
  }

  private count(key: string, node: string, by: 1 | -1): void {
    let nodes = this.referenced.get(key);
    if (!nodes) this.referenced.set(key, (nodes = new Map()));
    const n = (nodes.get(node) ?? 0) + by;
    if (n > 0) nodes.set(node, n);
    else nodes.delete(node);
    if (!nodes.size) this.referenced.delete(key);
  }

  private setPV(name: string, pv: KubeObject | undefined): void {
    const ns = pv ? at(pv.spec, 'claimRef', 'namespace') : undefined;
    const claim = pv ? at(pv.spec, 'claimRef', 'name') : undefined;
    if (ns && claim) this.pvClaims.set(name, `${ns}/${claim}`);
    else this.pvClaims.delete(name);
    for (const s of this.pvSecrets.get(name) ?? []) {
      const pvs = this.secretPVs.get(s);
      pvs?.delete(name);
      if (pvs && !pvs.size) this.secretPVs.delete(s);
    }
    const secrets = pv ? persistentVolumeSecrets(pv) : [];
    if (secrets.length) this.pvSecrets.set(name, secrets);
    else this.pvSecrets.delete(name);
    for (const s of secrets) {
      let pvs = this.secretPVs.get(s);
      if (!pvs) this.secretPVs.set(s, (pvs = new Set()));
      pvs.add(name);
    }
  }
}
