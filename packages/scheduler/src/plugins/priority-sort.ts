import type { PluginFactory, QueuedPodInfo, QueueSortPlugin } from '../framework.js';
import { PrioritySort } from './names.js';

/** Higher priority first, then earlier enqueue time. */
export const newPrioritySort: PluginFactory = (): QueueSortPlugin => ({
  name: PrioritySort,
  less(a: QueuedPodInfo, b: QueuedPodInfo): boolean {
    const pa = a.pi.priority;
    const pb = b.pi.priority;
    return pa > pb || (pa === pb && a.timestamp < b.timestamp);
  },
});
