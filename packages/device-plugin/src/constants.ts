// The device-plugin API's fixed names (k8s.io/kubelet pkg/apis/deviceplugin/v1beta1 constants).

/** The API version plugins register with. */
export const VERSION = 'v1beta1';
/** Versions a kubelet of this project accepts in RegisterRequest. */
export const SUPPORTED_VERSIONS = [VERSION];
export const HEALTHY = 'Healthy';
export const UNHEALTHY = 'Unhealthy';
/** Where plugins and the kubelet's Registration socket live. */
export const DEVICE_PLUGIN_PATH = '/var/lib/kubelet/device-plugins/';
/** The kubelet's Registration socket, inside the device-plugins directory. */
export const KUBELET_SOCKET = 'kubelet.sock';
/** How long the kubelet gives PreStartContainer. */
export const PRE_START_CONTAINER_TIMEOUT_SECONDS = 30;

/**
 * An extended resource name as the API server accepts one for a device (upstream
 * IsExtendedResourceName): a domain-qualified name outside kubernetes.io, e.g. `nvidia.com/gpu`.
 */
export function isExtendedResourceName(name: string): boolean {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)\/([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/.exec(name);
  if (!m || name.length > 316 || m[1].length > 253 || m[5].length > 63) return false;
  const domain = m[1];
  if (domain === 'kubernetes.io' || domain.endsWith('.kubernetes.io')) return false;
  // requests.* is the quota prefix and cannot be a resource name.
  return !name.startsWith('requests.');
}
