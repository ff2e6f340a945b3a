// Authorization decisions remembered per user and request, as kube-apiserver's webhook authorizer caches
// them, but exact: the whole cache is dropped whenever a Role, ClusterRole or either kind of binding changes,
// so a cached answer is always the one the authorizer would give now. In-process components (a kubelet
// updating pod status, the scheduler binding pods) ask the same few questions millions of times.
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from '../auth-seams.js';

/** Something that says when the policy the decisions rest on has changed. */
export interface PolicyChanges {
  onChange(listener: () => void): void;
}

const MAX_ENTRIES = 100_000;

export class DecisionCache implements Authorizer {
  private readonly cache = new Map<string, AuthorizationResult>();
  /** Bumped on every policy change: a decision begun before one is not kept. */
  private generation = 0;

  constructor(
    private readonly authorizer: Authorizer,
    changes: PolicyChanges,
  ) {
    changes.onChange(() => {
      this.generation++;
      this.cache.clear();
    });
  }

  async authorize(attrs: AuthorizationAttributes): Promise<AuthorizationResult> {
    const u = attrs.user;
    // Extra user attributes can matter to an authorizer; such users are not cached.
    if (u.extra && Object.keys(u.extra).length) return this.authorizer.authorize(attrs);
    const key = [
      u.name,
      u.uid ?? '',
      u.groups.join(','),
      attrs.isResourceRequest ? 'r' : 'n',
      attrs.verb,
      attrs.apiGroup,
      attrs.namespace,
      attrs.resource,
      attrs.subresource,
      attrs.name,
      attrs.isResourceRequest ? '' : attrs.path,
    ].join('\u0000');
    const hit = this.cache.get(key);
    if (hit) return hit;
    const gen = this.generation;
    const r = await this.authorizer.authorize(attrs);
    if (gen !== this.generation) return r;
    if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
    this.cache.set(key, r);
    return r;
  }
}
