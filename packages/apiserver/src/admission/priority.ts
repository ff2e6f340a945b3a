// The Priority admission plugin: a new pod's priorityClassName resolves to its integer priority and
// preemption policy (the global default class, or 0, when it names none); an unknown class or a priority
// set by hand is refused as upstream. The two system classes exist from the start, as upstream creates them.
import { isAlreadyExists, type KubeObject, type Store } from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain } from '../auth-seams.js';
import { forbiddenError } from '../authz/forbidden.js';
import { type AdmissionLookups, storeLookups } from './admission-lookups.js';

export const SYSTEM_PRIORITY_CLASSES = [
  { name: 'system-node-critical', value: 2000001000, description: 'Used for system critical pods that must not be moved from their current node.' },
  { name: 'system-cluster-critical', value: 2000000000, description: 'Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.' },
];

/** Creates the system PriorityClasses that are missing. */
export async function ensureSystemPriorityClasses(store: Store): Promise<void> {
  for (const c of SYSTEM_PRIORITY_CLASSES) {
    try {
      await store.create({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: c.name }, value: c.value, description: c.description, preemptionPolicy: 'PreemptLowerPriority' });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }
}

export class PriorityAdmission implements AdmissionChain {
  constructor(
    store: Store,
    private readonly lookups: AdmissionLookups = storeLookups(store),
  ) {}

  async admit(attrs: AdmissionAttributes): Promise<void> {
    if (attrs.operation !== 'CREATE' || attrs.resource.group !== '' || attrs.resource.resource !== 'pods' || attrs.subresource || !attrs.object) return;
    const spec = (attrs.object.spec ??= {});
    let cls: KubeObject | undefined;
    if (spec.priorityClassName) {
      cls = await this.lookups.priorityClass(spec.priorityClassName);
      if (!cls) throw forbiddenError('', 'pods', attrs.name, `no PriorityClass with name ${spec.priorityClassName} was found`);
    } else {
      const classes = (await this.lookups.priorityClasses()).filter((c: KubeObject) => c.globalDefault === true);
      classes.sort((a, b) => (a.value ?? 0) - (b.value ?? 0));
      cls = classes[0];
      if (cls) spec.priorityClassName = cls.metadata.name;
    }
    const value = cls?.value ?? 0;
    if (spec.priority !== undefined && spec.priority !== null && spec.priority !== value) {
      throw forbiddenError('', 'pods', attrs.name, `the integer value of priority (${spec.priority}) must not be provided in pod spec; priority admission controller computed ${value} from the given PriorityClass name`);
    }
    spec.priority = value;
    if (cls?.preemptionPolicy) spec.preemptionPolicy ??= cls.preemptionPolicy;
    else spec.preemptionPolicy ??= 'PreemptLowerPriority';
  }

  async validate(): Promise<void> {}
}
