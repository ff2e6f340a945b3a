// The ephemeral volume controller (kube-controller-manager's `ephemeral-volume`): for every generic
// ephemeral volume of a pod it creates the claim `<pod>-<volume>` from the volume's template, owned by the
// pod (controller, blockOwnerDeletion), so the claim is provisioned and bound through the usual storage
// loop and deleted with the pod by the garbage collector. A claim of that name that the pod does not own
// is left alone and reported on the pod.
import type { PersistentVolumeClaim, Pod } from '../api-core.js';
import { splitObjectKey } from '../api-meta.js';
import { Controller } from '../controller.js';
import { isAlreadyExists, isNotFound } from '../errors.js';
import { InformerFactory, type SharedInformer } from '../informer.js';
import { ephemeralClaimName, isPodOwnedClaim } from '../pod-volume-claims.js';
import type { Store } from '../store.js';
import { EventRecorder } from './events.js';

export interface EphemeralVolumeControllerOptions {
  store: Store;
  informers?: InformerFactory;
  recorder?: EventRecorder;
  workers?: number;
}

export class EphemeralVolumeController {
  private readonly factory: InformerFactory;
  private readonly ownFactory: boolean;
  private readonly pods: SharedInformer<'Pod'>;
  private readonly recorder: EventRecorder;
  readonly controller: Controller;

  constructor(private readonly o: EphemeralVolumeControllerOptions) {
    this.ownFactory = !o.informers;
    this.factory = o.informers ?? new InformerFactory(o.store);
    this.pods = this.factory.informer('Pod');
    this.recorder = o.recorder ?? new EventRecorder(o.store, { component: 'ephemeral_volume' });
    this.controller = new Controller({
      name: 'ephemeral-volume',
      informers: [this.pods],
      workers: o.workers ?? 2,
      reconcile: (key) => this.sync(key),
    });
    this.pods.addEventHandler(this.controller.handler<Pod>((p) => (p.spec.volumes ?? []).some((v) => v.ephemeral)));
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
    if (this.ownFactory) await this.factory.stop();
  }

  private async sync(key: string): Promise<undefined> {
    const { namespace, name } = splitObjectKey(key);
    const pod = this.pods.lister.get(namespace, name) as Pod | undefined;
    if (!pod || pod.metadata.deletionTimestamp) return undefined;
    for (const vol of pod.spec.volumes ?? []) {
      const template = vol.ephemeral?.volumeClaimTemplate;
      if (!vol.ephemeral) continue;
      const claimName = ephemeralClaimName(pod, vol);
      let existing: PersistentVolumeClaim | undefined;
      try {
        existing = await this.o.store.get('PersistentVolumeClaim', pod.metadata.namespace, claimName);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      if (existing) {
        if (!isPodOwnedClaim(pod, existing)) {
          this.recorder.event(pod, 'Warning', 'FailedBinding', `PVC ${pod.metadata.namespace}/${claimName} was not created for the pod`);
        }
        continue;
      }
      if (!template) continue;
      const pvc: PersistentVolumeClaim = {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: {
          name: claimName,
          namespace: pod.metadata.namespace,
          labels: template.metadata?.labels,
          annotations: template.metadata?.annotations,
          ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name!, uid: pod.metadata.uid!, controller: true, blockOwnerDeletion: true }],
        },
        spec: structuredClone(template.spec),
      };
      try {
        await this.o.store.create(pvc);
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
    }
    return undefined;
  }
}
