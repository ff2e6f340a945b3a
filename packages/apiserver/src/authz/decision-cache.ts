// RBAC decisions remembered per user and request, as kube-apiserver's webhook authorizer caches them, but
// exact: the whole cache is dropped whenever a Role, ClusterRole or either kind of binding changes,
// so a cached answer is always the one the authorizer would give now. In-process components (a kubelet
// updating pod status, the scheduler binding pods) ask the same few questions millions of times.
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from '../auth-seams.js';
import type { RBACAuthorizer } from './rbac-authorizer.js';

/** Something that says when the policy the decisions rest on has changed. */
export interface PolicyChanges {
  onChange(listener: () => void): void;
}

const MAX_ENTRIES = 100_000;

export class DecisionCache implements Authorizer {
  private readonly cache = new Map<string, AuthorizationResult>();

  constructor(
    private readonly authorizer: RBACAuthorizer,
    changes: PolicyChanges,
  ) {
    changes.onChange(() => this.cache.clear());
  }

  async authorize(attrs: AuthorizationAttributes): Promise<AuthorizationResult> {
    // Extra user attributes can matter to an authorizer; such users are not cached.
    if (attrs.user.extra && Object.keys(attrs.user.extra).length) return this.authorizer.authorize(attrs);
    // A rule that names no objects allows the request whatever object it names: one cached answer then
    // covers every object of the collection, so a kubelet's or scheduler's calls do not fill the cache.
    if (attrs.isResourceRequest && attrs.name) {
      const every = this.cached(attrs, true);
      if (every.decision === 'allow') return every;
    }
    return this.cached(attrs, false);
  }

  private cached(attrs: AuthorizationAttributes, everyName: boolean): AuthorizationResult {
    const u = attrs.user;
    // JSON keeps the parts apart whatever characters names and groups hold (a group may contain a comma).
    const key = attrs.isResourceRequest
      ? JSON.stringify([u.name, u.uid ?? '', u.groups, attrs.verb, attrs.apiGroup, attrs.namespace, attrs.resource, attrs.subresource, everyName ? 0 : attrs.name])
      : JSON.stringify([u.name, u.uid ?? '', u.groups, attrs.verb, attrs.path]);
    const hit = this.cache.get(key);
    if (hit) return hit;
    const ns = attrs.isResourceRequest ? attrs.namespace : '';
    const r = everyName ? this.authorizer.decideForEveryName(attrs.user, ns, attrs) : this.authorizer.decide(attrs.user, ns, attrs);
    if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
    this.cache.set(key, r);
    return r;
  }
}
