// The identities of the add-ons `kemu up` runs beside the control plane, as their upstream manifests deploy
// them: a ServiceAccount in kube-system each, bound by a ClusterRoleBinding to the ClusterRole those
// manifests ship. The CSI sidecars (external-provisioner, external-attacher, external-resizer), cluster DNS
// (CoreDNS's system:coredns) and the network policy agent (calico-node's rules on Kubernetes resources;
// Calico's own CRDs have no counterpart here). The LoadBalancer address allocator runs as the cloud
// provider's service-controller, whose role is in the API server's bootstrap policy. Each runs through
// `storeAs`, so a rule missing from its role fails its calls with kube-apiserver's 403, as upstream.
import { type ClusterRole, type ClusterRoleBinding, isAlreadyExists, type KubeObject, type PolicyRule, RBAC_API_VERSION, RBAC_GROUP, type Store } from '@kemu/core';
import { controllerUser, serviceAccountUser, type UserInfo } from '@kemu/apiserver';

const NAMESPACE = 'kube-system';
const READ = ['get', 'list', 'watch'];
const EVENTS = ['list', 'watch', 'create', 'update', 'patch'];

const rule = (verbs: string[], apiGroups: string[], resources: string[]): PolicyRule => ({ verbs, apiGroups, resources });

interface AddonIdentity {
  serviceAccount: string;
  clusterRole: string;
  binding: string;
  rules: PolicyRule[];
}

/** The add-ons' ServiceAccounts, roles and bindings, named as upstream's manifests name them. */
export const ADDON_IDENTITIES = {
  provisioner: {
    serviceAccount: 'csi-provisioner',
    clusterRole: 'external-provisioner-runner',
    binding: 'csi-provisioner-role',
    rules: [
      rule(['get', 'list', 'watch', 'create', 'patch', 'delete'], [''], ['persistentvolumes']),
      rule(['get', 'list', 'watch', 'update'], [''], ['persistentvolumeclaims']),
      rule(READ, ['storage.k8s.io'], ['storageclasses']),
      rule(EVENTS, [''], ['events']),
      rule(['get', 'list'], ['snapshot.storage.k8s.io'], ['volumesnapshots', 'volumesnapshotcontents']),
      rule(READ, ['storage.k8s.io'], ['csinodes']),
      rule(READ, [''], ['nodes']),
      rule(READ, ['storage.k8s.io'], ['volumeattachments']),
    ],
  },
  attacher: {
    serviceAccount: 'csi-attacher',
    clusterRole: 'external-attacher-runner',
    binding: 'csi-attacher-role',
    rules: [
      rule(['get', 'list', 'watch', 'patch'], [''], ['persistentvolumes']),
      // Releases that read a node's CSI node ID from its Node annotation (as this attacher does) also grant nodes.
      rule(READ, [''], ['nodes']),
      rule(READ, ['storage.k8s.io'], ['csinodes']),
      rule(['get', 'list', 'watch', 'patch'], ['storage.k8s.io'], ['volumeattachments']),
      rule(['patch'], ['storage.k8s.io'], ['volumeattachments/status']),
    ],
  },
  resizer: {
    serviceAccount: 'csi-resizer',
    clusterRole: 'external-resizer-runner',
    binding: 'csi-resizer-role',
    rules: [
      rule(['get', 'list', 'watch', 'patch'], [''], ['persistentvolumes']),
      rule(READ, [''], ['persistentvolumeclaims', 'pods']),
      rule(['patch'], [''], ['persistentvolumeclaims/status']),
      rule(EVENTS, [''], ['events']),
    ],
  },
  coredns: {
    serviceAccount: 'coredns',
    clusterRole: 'system:coredns',
    binding: 'system:coredns',
    rules: [rule(['list', 'watch'], [''], ['endpoints', 'services', 'pods', 'namespaces']), rule(['list', 'watch'], ['discovery.k8s.io'], ['endpointslices'])],
  },
  policyAgent: {
    serviceAccount: 'calico-node',
    clusterRole: 'calico-node',
    binding: 'calico-node',
    rules: [
      rule(['get'], [''], ['pods', 'nodes', 'namespaces']),
      rule(['list', 'watch'], [''], ['pods', 'namespaces', 'serviceaccounts']),
      rule(['list', 'watch'], ['networking.k8s.io'], ['networkpolicies']),
      rule(READ, [''], ['endpoints', 'services']),
      rule(['list', 'watch'], ['discovery.k8s.io'], ['endpointslices']),
      rule(['patch', 'update'], [''], ['nodes/status']),
      rule(['patch'], [''], ['pods/status']),
    ],
  },
} satisfies Record<string, AddonIdentity>;

export type Addon = keyof typeof ADDON_IDENTITIES;

/** The user an add-on runs as: its ServiceAccount's. */
export function addonUser(addon: Addon): UserInfo {
  return serviceAccountUser(NAMESPACE, ADDON_IDENTITIES[addon].serviceAccount);
}

/** The LoadBalancer address allocator's user: the service controller's ServiceAccount, as the cloud provider runs it. */
export const LOAD_BALANCER_CONTROLLER: UserInfo = controllerUser('service-controller');

/** The objects of one add-on's manifest: ServiceAccount, ClusterRole, ClusterRoleBinding. */
export function addonManifest(addon: Addon): KubeObject[] {
  const a: AddonIdentity = ADDON_IDENTITIES[addon];
  const role: ClusterRole = { apiVersion: RBAC_API_VERSION, kind: 'ClusterRole', metadata: { name: a.clusterRole }, rules: a.rules };
  const binding: ClusterRoleBinding = {
    apiVersion: RBAC_API_VERSION,
    kind: 'ClusterRoleBinding',
    metadata: { name: a.binding },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: a.clusterRole },
    subjects: [{ kind: 'ServiceAccount', name: a.serviceAccount, namespace: NAMESPACE }],
  };
  return [{ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: a.serviceAccount, namespace: NAMESPACE } }, role, binding];
}

/** Creates what is missing of every add-on's manifest (as `kubectl create` of them would; existing objects are kept). */
export async function ensureAddonIdentities(store: Store): Promise<void> {
  for (const addon of Object.keys(ADDON_IDENTITIES) as Addon[]) {
    for (const obj of addonManifest(addon)) {
      await store.create(obj).catch((err) => {
        if (!isAlreadyExists(err)) throw err;
      });
    }
  }
}
