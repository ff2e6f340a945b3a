// Non-pod, non-node objects the plugins consult (storage, priority, disruption budgets, namespaces),
// kept as plain maps filled from informers (run mode) or manifests (simulate).
import type {
  CSINode,
  CSIStorageCapacity,
  KubeObject,
  PersistentVolume,
  PersistentVolumeClaim,
  PodDisruptionBudget,
  PriorityClass,
  StorageClass,
} from './types.js';

export class ClusterState {
  pvcs = new Map<string, PersistentVolumeClaim>();
  pvs = new Map<string, PersistentVolume>();
  storageClasses = new Map<string, StorageClass>();
  csiNodes = new Map<string, CSINode>();
  capacities = new Map<string, CSIStorageCapacity>();
  priorityClasses = new Map<string, PriorityClass>();
  pdbs = new Map<string, PodDisruptionBudget>();
  namespaceLabels = new Map<string, Record<string, string>>();

  static readonly kinds = [
    'PersistentVolumeClaim',
    'PersistentVolume',
    'StorageClass',
    'CSINode',
    'CSIStorageCapacity',
    'PriorityClass',
    'PodDisruptionBudget',
    'Namespace',
  ];

  pvc(namespace: string, name: string): PersistentVolumeClaim | undefined {
    return this.pvcs.get(`${namespace}/${name}`);
  }

  /** Apply an add/update (or delete when `deleted`) of a supported kind; false for other kinds. */
  apply(obj: KubeObject, deleted = false): boolean {
    const name = obj.metadata.name ?? '';
    const nsKey = `${obj.metadata.namespace ?? 'default'}/${name}`;
    const set = <T>(m: Map<string, T>, k: string) => {
      if (deleted) m.delete(k);
      else m.set(k, obj as T);
      return true;
    };
    switch (obj.kind) {
      case 'PersistentVolumeClaim':
        return set(this.pvcs, nsKey);
      case 'PersistentVolume':
        return set(this.pvs, name);
      case 'StorageClass':
        return set(this.storageClasses, name);
      case 'CSINode':
        return set(this.csiNodes, name);
      case 'CSIStorageCapacity':
        return set(this.capacities, nsKey);
      case 'PriorityClass':
        return set(this.priorityClasses, name);
      case 'PodDisruptionBudget':
        return set(this.pdbs, nsKey);
      case 'Namespace':
        if (deleted) this.namespaceLabels.delete(name);
        else this.namespaceLabels.set(name, obj.metadata.labels ?? {});
        return true;
      default:
        return false;
    }
  }

  nsLabels = (ns: string): Record<string, string> | undefined =>
    this.namespaceLabels.get(ns) ?? { 'kubernetes.io/metadata.name': ns };
}
