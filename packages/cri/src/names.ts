// Unique names for sandboxes and containers, built from metadata exactly like containerd's CRI plugin,
// so a second RunPodSandbox/CreateContainer for the same metadata is a reported conflict.
import type { cri } from '@kemu/proto';
import { alreadyExists, invalidArgument } from './errors.js';

/** Longest name, namespace or uid accepted: a Kubernetes object name (DNS subdomain) is at most 253 bytes. */
export const MAX_METADATA_BYTES = 253;

/**
 * Metadata fields end up in the sandbox and container names, and kubelet builds log paths from them, so a
 * field that could name another directory ("/", ".", ".."), carries NUL or control bytes, or is absurdly
 * long is refused before anything is reserved or created.
 */
function checkField(value: string | undefined, what: string): void {
  if (!value) throw invalidArgument(`${what} must not be empty`);
  const bytes = Buffer.byteLength(value);
  if (bytes > MAX_METADATA_BYTES) {
    throw invalidArgument(`${what} is ${bytes} bytes long; at most ${MAX_METADATA_BYTES} are allowed`);
  }
  if (/[\u0000-\u001f\u007f]/.test(value)) throw invalidArgument(`${what} ${JSON.stringify(value)} contains control characters`);
  if (value.includes('/')) throw invalidArgument(`${what} ${JSON.stringify(value)} must not contain "/"`);
  if (value === '.' || value === '..') throw invalidArgument(`${what} must not be ${JSON.stringify(value)}`);
}

export function checkSandboxMetadata(m: cri.PodSandboxMetadata): void {
  checkField(m.name, 'sandbox metadata name');
  checkField(m.namespace, 'sandbox metadata namespace');
  checkField(m.uid, 'sandbox metadata uid');
}

export function checkContainerMetadata(m: cri.ContainerMetadata): void {
  checkField(m.name, 'container metadata name');
}

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
