// Kinds the scheduler reads that @kemu/core does not register itself: registered through core's public
// registerKind so manifests parse, stores hold them and informers watch them.
import { lookupKind, registerKind } from '@kemu/core';

export function ensureSchedulingKinds(): void {
  if (!lookupKind('PodDisruptionBudget')) {
    registerKind({ kind: 'PodDisruptionBudget', apiVersion: 'policy/v1', resource: 'poddisruptionbudgets', namespaced: true, hasStatus: true });
  }
  if (!lookupKind('CSIStorageCapacity')) {
    registerKind({ kind: 'CSIStorageCapacity', apiVersion: 'storage.k8s.io/v1', resource: 'csistoragecapacities', namespaced: true, hasStatus: false });
  }
}
