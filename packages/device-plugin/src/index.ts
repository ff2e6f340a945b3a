// @kemu/device-plugin: Kubernetes device plugins (API v1beta1) for simulated devices and NVIDIA GPUs.
export {
  DEVICE_PLUGIN_PATH,
  HEALTHY,
  isExtendedResourceName,
  KUBELET_SOCKET,
  PRE_START_CONTAINER_TIMEOUT_SECONDS,
  SUPPORTED_VERSIONS,
  UNHEALTHY,
  VERSION,
} from './constants.js';
export { type AllocateAnswer, defaultAllocateAnswer, type DeviceInfo, visibleDevicesEnv } from './devices.js';
export { simDeviceId, simDevices, type SimDeviceOptions } from './devices-sim.js';
export { discoverNvidiaGpus, type NvidiaDiscoveryOptions, NvidiaSmiError, type NvidiaGpu, parseQueryGpu, parseTopoNuma, QUERY_FIELDS } from './nvidia-smi.js';
export { DevicePluginServer, type DevicePluginOptions } from './server.js';
