// `kemu node add|remove`: nodes added to, or removed from, a running `kemu up` (what `Cluster.addNodes` and
// `Cluster.removeNode` do in its process), asked for over the cluster's API socket.
import type { Taint } from '@kemu/core';
import type { Out } from './commands.js';
import { client } from './commands.js';

export interface NodeAddOptions {
  count: number;
  name?: string;
  taints: Taint[];
  labels?: Record<string, string>;
  stateDir?: string;
}

/** `kemu node add`: prints the names of the nodes added once each has registered. */
export async function nodeAdd(o: NodeAddOptions, out: Out): Promise<string[]> {
  const { names } = await client(o.stateDir).addNodes({ count: o.count, name: o.name, taints: o.taints.length ? o.taints : undefined, labels: o.labels });
  for (const n of names) out.log(`node/${n} added`);
  return names;
}

/** `kemu node remove NAME`. */
export async function nodeRemove(name: string, o: { stateDir?: string }, out: Out): Promise<void> {
  await client(o.stateDir).removeNode(name);
  out.log(`node/${name} removed`);
}
