// subPath mounts of the volumes the kubelet writes itself (configMap, secret, downwardAPI, projected) see
// the file as it was when the container started, as a bind mount of the resolved file does upstream: the
// AtomicWriter's next version replaces the file under `..data`, not the inode the container holds. Here the
// resolved file is hard-linked under `pods/<uid>/volume-subpaths/<volume>/<container>/<n>` (where the
// kubelet keeps its subpath bind mounts) and that link is what gets mounted.
import fs from 'node:fs';
import path from 'node:path';
import type { Container, Pod } from '@kemu/core';
import type { cri } from '@kemu/proto';
import { isSourceVolume } from './volume-sources.js';

export function pinSourceSubPaths(pod: Pod, c: Container, mounts: cri.Mount[], podDir: string): void {
  const volumes = new Map((pod.spec.volumes ?? []).map((v) => [v.name, v]));
  (c.volumeMounts ?? []).forEach((m, i) => {
    if (!m.subPath && !m.subPathExpr) return;
    const vol = volumes.get(m.name);
    if (!vol || !isSourceVolume(vol)) return;
    const mount = mounts.find((x) => x.containerPath === m.mountPath);
    if (!mount?.hostPath) return;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(mount.hostPath);
    } catch {
      return; // not there (an optional key): the runtime reports the missing path as it would
    }
    if (!st.isFile()) return;
    const dir = path.join(podDir, 'volume-subpaths', m.name, c.name);
    fs.mkdirSync(dir, { recursive: true, mode: 0o750 });
    const pinned = path.join(dir, String(i));
    fs.rmSync(pinned, { force: true });
    fs.linkSync(mount.hostPath, pinned);
    mount.hostPath = pinned;
  });
}
