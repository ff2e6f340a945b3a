// Out-of-tree plugin registration: register a factory under a name, then enable that name in a
// KubeSchedulerConfiguration profile like any in-tree plugin.
import type { PluginFactory } from './framework.js';
import { inTreeRegistry } from './plugins/index.js';

export const globalRegistry = new Map<string, PluginFactory>();

/** Register an out-of-tree plugin for every Scheduler created afterwards in this process. */
export function registerPlugin(name: string, factory: PluginFactory): void {
  if (!/^[A-Za-z][A-Za-z0-9_.-]*$/.test(name))
    throw new Error(`invalid plugin name "${name}": use letters, digits, '.', '_' or '-'`);
  if (inTreeRegistry().has(name))
    throw new Error(`a plugin named "${name}" already exists in the in-tree registry`);
  if (globalRegistry.has(name)) throw new Error(`a plugin named "${name}" is already registered`);
  globalRegistry.set(name, factory);
}

export function unregisterPlugin(name: string): boolean {
  return globalRegistry.delete(name);
}
