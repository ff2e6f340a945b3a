import type { FilterPlugin, PluginFactory, PreFilterPlugin } from '../framework.js';
import { Status } from '../status.js';
import { NodePorts } from './names.js';

export const ERR_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports";

// Filter results are shared, immutable values: rejecting thousands of nodes allocates nothing.
const REJECT_NODE_PORTS = Status.unschedulable(ERR_NODE_PORTS).withPlugin(NodePorts);

/** A hostPort conflicts when protocol and port match and either side binds 0.0.0.0 or the same IP. */
export const newNodePorts: PluginFactory = (): PreFilterPlugin & FilterPlugin => ({
  name: NodePorts,
  preFilter(_s, pi) {
    return pi.ports.length === 0 ? Status.skip() : null;
  },
  filter(_s, pi, node) {
    for (const p of pi.ports) {
      const used = node.usedPorts.get(p.key);
      if (!used) continue;
      for (const ip of used) {
        if (ip === p.ip || ip === '0.0.0.0' || p.ip === '0.0.0.0') return REJECT_NODE_PORTS;
      }
    }
    return null;
  },
  eventsToRegister: () => [
    { resource: 'Pod', action: 'Delete' },
    { resource: 'Node', action: 'Add' },
  ],
});
