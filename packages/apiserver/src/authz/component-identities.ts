// The users kube-apiserver knows the cluster's own components as, each bound by the bootstrap policy to
// its role: the scheduler (system:kube-scheduler), the controller manager (system:kube-controller-manager),
// kube-proxy (system:kube-proxy, bound to system:node-proxier) and each kubelet (system:node:<name> in
// group system:nodes, which the Node authorizer and the NodeRestriction admission plugin recognise); each
// controller runs as its own ServiceAccount in kube-system, bound to system:controller:<name>.
import { AUTHENTICATED_GROUP, type UserInfo } from '../auth-seams.js';
import { serviceAccountGroups, serviceAccountUsername } from './rbac-rules.js';

export const KUBE_SCHEDULER: UserInfo = { name: 'system:kube-scheduler', groups: [AUTHENTICATED_GROUP] };
export const KUBE_CONTROLLER_MANAGER: UserInfo = { name: 'system:kube-controller-manager', groups: [AUTHENTICATED_GROUP] };
export const KUBE_PROXY: UserInfo = { name: 'system:kube-proxy', groups: [AUTHENTICATED_GROUP] };
export const NODES_GROUP = 'system:nodes';

/** A kubelet's user, as its client certificate names it (CN system:node:<name>, O system:nodes). */
export function nodeUser(nodeName: string): UserInfo {
  return { name: `system:node:${nodeName}`, groups: [NODES_GROUP, AUTHENTICATED_GROUP] };
}

/** The user a ServiceAccount's token authenticates as (a component deployed with that ServiceAccount). */
export function serviceAccountUser(namespace: string, name: string): UserInfo {
  return { name: serviceAccountUsername(namespace, name), groups: [...serviceAccountGroups(namespace), AUTHENTICATED_GROUP] };
}

/** A controller's user under --use-service-account-credentials: the ServiceAccount kube-system/<name>. */
export function controllerUser(serviceAccount: string): UserInfo {
  return serviceAccountUser('kube-system', serviceAccount);
}
