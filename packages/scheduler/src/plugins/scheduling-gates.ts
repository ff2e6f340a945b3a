import type { PluginFactory, PreEnqueuePlugin } from '../framework.js';
import { Status } from '../status.js';
import { SchedulingGates } from './names.js';

/** Keeps pods with spec.schedulingGates out of the active queue until every gate is removed. */
export const newSchedulingGates: PluginFactory = (): PreEnqueuePlugin => ({
  name: SchedulingGates,
  preEnqueue(pod) {
    const gates = pod.spec.schedulingGates ?? [];
    if (gates.length === 0) return null;
    return Status.unresolvable(`waiting for scheduling gates: [${gates.map((g) => g.name).join(' ')}]`);
  },
  eventsToRegister: () => [{ resource: 'UnscheduledPod', action: 'Update' }],
});
