// Where the RBAC authorizer reads roles and bindings: informer caches over the store, with bindings
// indexed by the users and groups they name so a decision costs one lookup per group, not a scan.
import {
  type ClusterRole,
  type ClusterRoleBinding,
  type KubeObject,
  type Role,
  type RoleBinding,
  SharedInformer,
  type Store,
  type Subject,
} from '@kemu/core';
import { subjectKey } from './rbac-rules.js';

/** Read access to the RBAC objects; `keys` are `userKeys(user)`. */
export interface RBACSource {
  clusterRole(name: string): ClusterRole | undefined;
  role(namespace: string, name: string): Role | undefined;
  /** Cluster role bindings with a subject under one of the keys (a superset of those naming the user). */
  clusterRoleBindings(keys: readonly string[]): ClusterRoleBinding[];
  /** Role bindings of a namespace with a subject under one of the keys. */
  roleBindings(namespace: string, keys: readonly string[]): RoleBinding[];
  clusterRoles(): ClusterRole[];
}

const SUBJECT_INDEX = 'rbac-subject';

function bindingKeys(b: KubeObject): string[] {
  const ns = b.metadata.namespace ?? '';
  const keys = new Set<string>();
  for (const s of (b.subjects ?? []) as Subject[]) {
    const k = subjectKey(s, ns);
    if (k) keys.add(ns ? `${ns}|${k}` : k);
  }
  return [...keys];
}

function lookup<T extends KubeObject>(inf: SharedInformer<string, T>, keys: readonly string[]): T[] {
  if (keys.length === 1) return inf.indexer.byIndex(SUBJECT_INDEX, keys[0]);
  const seen = new Set<T>();
  for (const k of keys) for (const b of inf.indexer.byIndex(SUBJECT_INDEX, k)) seen.add(b);
  return [...seen];
}

/** An RBACSource kept current by informers on a store. Call `start()` and await it before use. */
export class InformerRBACSource implements RBACSource {
  readonly roles: SharedInformer<'Role', Role>;
  readonly clusterRolesInformer: SharedInformer<'ClusterRole', ClusterRole>;
  readonly roleBindingsInformer: SharedInformer<'RoleBinding', RoleBinding>;
  readonly clusterRoleBindingsInformer: SharedInformer<'ClusterRoleBinding', ClusterRoleBinding>;

  constructor(store: Store) {
    this.roles = new SharedInformer(store, 'Role');
    this.clusterRolesInformer = new SharedInformer(store, 'ClusterRole');
    this.roleBindingsInformer = new SharedInformer(store, 'RoleBinding');
    this.clusterRoleBindingsInformer = new SharedInformer(store, 'ClusterRoleBinding');
    this.roleBindingsInformer.addIndexers({ [SUBJECT_INDEX]: bindingKeys });
    this.clusterRoleBindingsInformer.addIndexers({ [SUBJECT_INDEX]: bindingKeys });
  }

  /** Calls `listener` after any role or binding is added, changed or removed. */
  onChange(listener: () => void): void {
    for (const i of this.all()) i.addEventHandler({ onAdd: listener, onUpdate: (a, b) => a !== b && listener(), onDelete: listener });
  }

  private all() {
    return [this.roles, this.clusterRolesInformer, this.roleBindingsInformer, this.clusterRoleBindingsInformer] as SharedInformer[];
  }

  /** Starts the informers and resolves once every cache is filled. */
  async start(signal?: AbortSignal): Promise<void> {
    for (const i of this.all()) i.start();
    await Promise.all(this.all().map((i) => i.waitForSync(signal)));
  }

  async stop(): Promise<void> {
    await Promise.all(this.all().map((i) => i.stop()));
  }

  clusterRole(name: string): ClusterRole | undefined {
    return this.clusterRolesInformer.indexer.get(undefined, name);
  }

  role(namespace: string, name: string): Role | undefined {
    return this.roles.indexer.get(namespace, name);
  }

  clusterRoleBindings(keys: readonly string[]): ClusterRoleBinding[] {
    return lookup(this.clusterRoleBindingsInformer, keys);
  }

  roleBindings(namespace: string, keys: readonly string[]): RoleBinding[] {
    return lookup(this.roleBindingsInformer, keys.map((k) => `${namespace}|${k}`));
  }

  clusterRoles(): ClusterRole[] {
    return this.clusterRolesInformer.indexer.list();
  }
}
