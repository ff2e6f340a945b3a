// What the suites that run a composed cluster on the runc runtime share: the peers they need, the busybox
// image pushed to a loopback registry, and the removal of the kubelet QoS cgroups a suite caused.
import fs from 'node:fs';
import path from 'node:path';
import { peers } from '@kemu/test-peers';
import { buildBusyboxImages, startRegistry, type TestRegistry } from '../../packages/cri/src/test-util-registry.js';

/** The peer programs a runc cluster with a registry image needs, beyond the linux datapath's. */
export const runcPeers = [peers.runc, peers.dockerRegistry, peers.skopeo, peers.umoci, peers.busybox];

/**
 * Builds the busybox-static test image in `imagesDir`, starts a loopback registry and pushes the image as
 * tools/busybox:v1; returns the registry (stop it after) and the image reference a pod names.
 */
export async function busyboxOnRegistry(imagesDir: string): Promise<{ registry: TestRegistry; image: string }> {
  const built = buildBusyboxImages(imagesDir);
  const registry = await startRegistry();
  try {
    await registry.push(built.layout, 'v1', 'tools/busybox:v1');
  } catch (e) {
    await registry.stop();
    throw e;
  }
  return { registry, image: `${registry.host}/tools/busybox:v1` };
}

/** The kubelet's QoS cgroups stay after its pods go, as on a real node; a suite removes those it caused. */
export function qosTreeCleanup(driver: 'cgroupfs' | 'systemd'): () => void {
  const hierarchies = fs.existsSync('/sys/fs/cgroup') ? fs.readdirSync('/sys/fs/cgroup').map((h) => path.join('/sys/fs/cgroup', h)) : [];
  const qosRoot = driver === 'systemd' ? 'kubepods.slice' : 'kubepods';
  const before = new Set(hierarchies.filter((h) => fs.existsSync(path.join(h, qosRoot))));
  const qos = driver === 'systemd' ? ['kubepods.slice/kubepods-burstable.slice', 'kubepods.slice/kubepods-besteffort.slice'] : ['kubepods/burstable', 'kubepods/besteffort'];
  return () => {
    for (const h of hierarchies.filter((x) => !before.has(x))) {
      for (const d of [...qos, qosRoot]) {
        try {
          fs.rmdirSync(path.join(h, d));
        } catch {
          // not there, or in use by another cluster's pods
        }
      }
    }
  };
}
