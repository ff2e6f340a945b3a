// Label and annotation keys the kubelet puts on CRI objects, as upstream does, so that tools which read
// them (crictl pods --name, critest, log collectors) see what they expect.
export const POD_NAME_LABEL = 'io.kubernetes.pod.name';
export const POD_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';
export const POD_UID_LABEL = 'io.kubernetes.pod.uid';
export const CONTAINER_NAME_LABEL = 'io.kubernetes.container.name';
export const CONTAINER_HASH_ANNOTATION = 'io.kubernetes.container.hash';
export const RESTART_COUNT_ANNOTATION = 'io.kubernetes.container.restartCount';
export const TERMINATION_GRACE_ANNOTATION = 'io.kubernetes.pod.terminationGracePeriod';
export const CONTAINER_KIND_ANNOTATION = 'io.kubernetes.container.kind';
export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';
export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
/** On the Node: where its kubelet serves /stats/summary and /metrics/*; defined with the Node kind. */
export { KUBELET_ENDPOINT_ANNOTATION } from '@kemu/core';
