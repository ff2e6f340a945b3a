// The NamespaceLifecycle admission plugin: nothing new is created in a namespace that is missing (404) or
// being terminated (403), and the system namespaces cannot be deleted, worded as upstream.
import { NotFoundError, StatusError, type Store } from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain } from '../auth-seams.js';
import { forbiddenError } from '../authz/forbidden.js';
import { type AdmissionLookups, storeLookups } from './admission-lookups.js';

export const IMMORTAL_NAMESPACES = ['default', 'kube-system', 'kube-public'];
/** Requests that only ask a question, allowed in a terminating namespace. */
const REVIEWS = new Set(['localsubjectaccessreviews']);

export class NamespaceLifecycleAdmission implements AdmissionChain {
  constructor(
    store: Store,
    private readonly lookups: AdmissionLookups = storeLookups(store),
  ) {}

  async admit(): Promise<void> {}

  async validate(attrs: AdmissionAttributes): Promise<void> {
    const { group, resource } = attrs.resource;
    if (group === '' && resource === 'namespaces') {
      if (attrs.operation === 'DELETE' && IMMORTAL_NAMESPACES.includes(attrs.name)) {
        throw forbiddenError('', 'namespaces', attrs.name, 'this namespace may not be deleted');
      }
      return;
    }
    if (attrs.operation !== 'CREATE' || !attrs.namespace || REVIEWS.has(resource)) return;
    const ns = await this.lookups.namespace(attrs.namespace);
    if (!ns) throw new NotFoundError({ resource: 'namespaces', group: '', name: attrs.namespace });
    if (ns.metadata.deletionTimestamp || ns.status?.phase === 'Terminating') {
      const e = forbiddenError(group, resource, attrs.name, `unable to create new content in namespace ${attrs.namespace} because it is being terminated`);
      throw new StatusError('Forbidden', 403, e.message, {
        ...e.details,
        causes: [{ reason: 'NamespaceTerminating' as never, message: `namespace ${attrs.namespace} is being terminated`, field: 'metadata.namespace' }],
      });
    }
  }
}
