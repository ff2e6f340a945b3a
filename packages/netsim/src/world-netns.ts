// Network namespaces (`ip netns`): each starts with its own loopback device.
import { NetsimError } from './errors.js';
import { destroyLink } from './world-link.js';
import { Link, Ns, validNsName } from './world-model.js';
import { nsByName, type WorldState } from './world-state.js';

export function addNamespace(w: WorldState, name: string): void {
  if (!validNsName(name)) throw new NetsimError('EINVAL', `invalid namespace name "${String(name)}"`);
  if (w.nss.has(name)) throw new NetsimError('EEXIST', `Cannot create namespace file "/run/netns/${name}"`);
  const ns = new Ns(name);
  w.nss.set(name, ns);
  const lo = new Link(ns, ns.nextIfindex++, 'lo', 'loopback', new Uint8Array(6), 65536);
  ns.links.set('lo', lo);
}

export function hasNamespace(w: WorldState, name: string): boolean {
  return w.nss.has(name);
}

export function namespaces(w: WorldState): string[] {
  return [...w.nss.keys()];
}

export function deleteNamespace(w: WorldState, name: string): void {
  const ns = nsByName(w, name);
  for (const l of [...ns.links.values()]) if (ns.links.get(l.name) === l) destroyLink(w, l);
  w.nss.delete(name);
  w.localRoutes.delete(ns);
}
