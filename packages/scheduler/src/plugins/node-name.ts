import type { FilterPlugin, PluginFactory } from '../framework.js';
import { Status } from '../status.js';
import { NodeName } from './names.js';

export const ERR_NODE_NAME = "node(s) didn't match the requested node name";

// Filter results are shared, immutable values: rejecting thousands of nodes allocates nothing.
const REJECT_NODE_NAME = Status.unresolvable(ERR_NODE_NAME).withPlugin(NodeName);

/** spec.nodeName set on a pod that still reaches the scheduler: only that node fits. */
export const newNodeName: PluginFactory = (): FilterPlugin => ({
  name: NodeName,
  filter(_s, pi, node) {
    const want = pi.pod.spec.nodeName;
    if (!want || want === node.name) return null;
    return REJECT_NODE_NAME;
  },
  eventsToRegister: () => [{ resource: 'Node', action: 'Add' }],
});
