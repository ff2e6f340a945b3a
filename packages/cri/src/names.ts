// Unique names for sandboxes and containers, built from metadata exactly like containerd's CRI plugin,
// so a second RunPodSandbox/CreateContainer for the same metadata is a reported conflict.
import type { cri } from '@kemu/proto';
import { alreadyExists } from './errors.js';

export function sandboxName(m: cri.PodSandboxMetadata): string {
  return [m.name, m.namespace, m.uid, String(m.attempt ?? 0)].join('_');
}

export function containerName(c: cri.ContainerMetadata, s: cri.PodSandboxMetadata): string {
  return [c.name, s.name, s.namespace, s.uid, String(c.attempt ?? 0)].join('_');
}

export class NameIndex {
  private readonly byName = new Map<string, string>();

  constructor(private readonly kind: 'sandbox' | 'container') {}

  reserve(name: string, id: string): void {
    const owner = this.byName.get(name);
    if (owner !== undefined && owner !== id) {
      throw alreadyExists(
        `failed to reserve ${this.kind} name ${JSON.stringify(name)}: name ${JSON.stringify(name)} is reserved for ${JSON.stringify(owner)}`,
      );
    }
    this.byName.set(name, id);
  }

  release(name: string, id: string): void {
    if (this.byName.get(name) === id) this.byName.delete(name);
  }
}
