// What a plugin serves: its devices (ID, health, NUMA node and what a runtime needs to hand them to a
// container), from a simulated inventory or from real discovery.
import type { deviceplugin } from '@kemu/proto';

export interface DeviceInfo {
  /** The ID the kubelet sees (a GPU's UUID for NVIDIA devices). */
  id: string;
  health: 'Healthy' | 'Unhealthy';
  /** NUMA node, for topology hints. */
  numaNode?: number;
  /** Index as the vendor tool numbers it (nvidia-smi's index). */
  index?: number;
  model?: string;
  memoryMiB?: number;
  /** Device nodes a container needs for this device, e.g. /dev/nvidia0. */
  deviceNodes?: string[];
}

/** What Allocate answers for a set of devices: env, device nodes, annotations. */
export type AllocateAnswer = (devices: DeviceInfo[]) => deviceplugin.ContainerAllocateResponse;

/** The environment variable a device's consumers read: NVIDIA's for nvidia.com resources. */
export function visibleDevicesEnv(resourceName: string): string {
  if (resourceName.startsWith('nvidia.com/')) return 'NVIDIA_VISIBLE_DEVICES';
  const base = resourceName.split('/').pop() ?? 'devices';
  return `KEMU_VISIBLE_${base.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/**
 * Allocate as NVIDIA's plugin does with its default envvar strategy: the devices' IDs (UUIDs) in
 * NVIDIA_VISIBLE_DEVICES, plus the device nodes they need so a runtime without the NVIDIA hook sees them.
 */
export function defaultAllocateAnswer(resourceName: string): AllocateAnswer {
  return (devices) => {
    const nodes = new Set<string>();
    for (const d of devices) for (const n of d.deviceNodes ?? []) nodes.add(n);
    return {
      envs: { [visibleDevicesEnv(resourceName)]: devices.map((d) => d.id).join(',') },
      mounts: [],
      devices: [...nodes].map((n) => ({ containerPath: n, hostPath: n, permissions: 'rw' })),
      annotations: {},
      cdiDevices: [],
    };
  };
}
