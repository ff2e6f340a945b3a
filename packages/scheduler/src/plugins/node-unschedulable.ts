import type { FilterPlugin, PluginFactory } from '../framework.js';
import { Status } from '../status.js';
import { NodeUnschedulable } from './names.js';

export const ERR_NODE_UNSCHEDULABLE = 'node(s) were unschedulable';

// Filter results are shared, immutable values: rejecting thousands of nodes allocates nothing.
const REJECT_NODE_UNSCHEDULABLE = Status.unresolvable(ERR_NODE_UNSCHEDULABLE).withPlugin(NodeUnschedulable);

/** Rejects cordoned nodes unless the pod tolerates node.kubernetes.io/unschedulable:NoSchedule. */
export const newNodeUnschedulable: PluginFactory = (): FilterPlugin => ({
  name: NodeUnschedulable,
  filter(_s, pi, node) {
    if (!node.unschedulable) return null;
    const tolerated = (pi.pod.spec.tolerations ?? []).some(
      (t) =>
        (t.effect === undefined || t.effect === '' || t.effect === 'NoSchedule') &&
        ((t.operator === 'Exists' &&
          (t.key === undefined || t.key === '' || t.key === 'node.kubernetes.io/unschedulable')) ||
          (t.key === 'node.kubernetes.io/unschedulable' && (t.value ?? '') === '')),
    );
    return tolerated ? null : REJECT_NODE_UNSCHEDULABLE;
  },
  eventsToRegister: () => [{ resource: 'Node', action: '*' }],
});
