// `kemu node add|remove`: nodes added to, or removed from, a running `kemu up` (what `Cluster.addNodes` and
// `Cluster.removeNode` do in its process), asked for over the cluster's API socket.
import type { Taint, TaintEffect } from '@kemu/core';
import type { Out } from './commands.js';
import { client } from './commands.js';

const EFFECTS: TaintEffect[] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];
// A qualified name (optional DNS-subdomain prefix and '/'), and a label value, as kubectl taint checks them.
const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function qualifiedName(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash >= 0 ? [key.slice(0, slash), key.slice(slash + 1)] : [undefined, key];
  if (prefix !== undefined && (!prefix || prefix.length > 253 || !PREFIX.test(prefix))) return false;
  return name.length <= 63 && NAME_PART.test(name);
}

/** A taint as kubectl taint writes one: `key=value:Effect` or `key:Effect`. */
export function parseTaint(spec: string): Taint {
  const colon = spec.lastIndexOf(':');
  if (colon < 0) throw new Error(`invalid taint spec: ${spec}: want key=value:Effect or key:Effect`);
  const effect = spec.slice(colon + 1);
  const kv = spec.slice(0, colon);
  const eq = kv.indexOf('=');
  const key = eq < 0 ? kv : kv.slice(0, eq);
  const value = eq < 0 ? undefined : kv.slice(eq + 1);
  if (!EFFECTS.includes(effect as TaintEffect))
    throw new Error(`invalid taint effect: ${effect}, unsupported taint effect (want ${EFFECTS.join(', ')})`);
  if (!qualifiedName(key)) throw new Error(`invalid taint key ${JSON.stringify(key)}: a qualified name (letters, digits, '-', '_', '.', with an optional DNS prefix and '/')`);
  if (value !== undefined && value !== '' && (value.length > 63 || !NAME_PART.test(value)))
    throw new Error(`invalid taint value ${JSON.stringify(value)}: at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit`);
  return { key, ...(value ? { value } : {}), effect: effect as TaintEffect };
}

export interface NodeAddOptions {
  count: number;
  name?: string;
  taints: Taint[];
  stateDir?: string;
}

/** `kemu node add`: prints the names of the nodes added once each has registered. */
export async function nodeAdd(o: NodeAddOptions, out: Out): Promise<string[]> {
  const { names } = await client(o.stateDir).addNodes({ count: o.count, name: o.name, taints: o.taints.length ? o.taints : undefined });
  for (const n of names) out.log(`node/${n} added`);
  return names;
}

/** `kemu node remove NAME`. */
export async function nodeRemove(name: string, o: { stateDir?: string }, out: Out): Promise<void> {
  await client(o.stateDir).removeNode(name);
  out.log(`node/${name} removed`);
}
