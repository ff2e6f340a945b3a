// The DefaultStorageClass admission plugin: a new claim that names no storage class gets the default one
// (annotated storageclass.kubernetes.io/is-default-class=true; the newest when several are), as upstream.
import type { KubeObject, Store } from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain } from '../auth-seams.js';
import { type AdmissionLookups, storeLookups } from './admission-lookups.js';

export const DEFAULT_CLASS_ANNOTATION = 'storageclass.kubernetes.io/is-default-class';
const BETA_DEFAULT_CLASS_ANNOTATION = 'storageclass.beta.kubernetes.io/is-default-class';

/** The default StorageClass: among those annotated default, the newest (then the first by name). */
export function defaultStorageClass(classes: readonly KubeObject[]): KubeObject | undefined {
  const defaults = classes.filter((c) => c.metadata.annotations?.[DEFAULT_CLASS_ANNOTATION] === 'true' || c.metadata.annotations?.[BETA_DEFAULT_CLASS_ANNOTATION] === 'true');
  defaults.sort((a, b) => {
    const t = (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? '');
    return t !== 0 ? t : (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');
  });
  return defaults[0];
}

export class DefaultStorageClassAdmission implements AdmissionChain {
  constructor(
    store: Store,
    private readonly lookups: AdmissionLookups = storeLookups(store),
  ) {}

  async admit(attrs: AdmissionAttributes): Promise<void> {
    if (attrs.operation !== 'CREATE' || attrs.resource.group !== '' || attrs.resource.resource !== 'persistentvolumeclaims' || attrs.subresource || !attrs.object) return;
    const spec = (attrs.object.spec ??= {});
    if (spec.storageClassName !== undefined && spec.storageClassName !== null) return;
    const def = defaultStorageClass(await this.lookups.storageClasses());
    if (def) spec.storageClassName = def.metadata.name;
  }

  async validate(): Promise<void> {}
}
