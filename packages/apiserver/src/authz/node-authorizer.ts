// The Node authorizer (authorization mode `Node`, ahead of RBAC as in `--authorization-mode=Node,RBAC`): a
// kubelet, user system:node:<name> in system:nodes, may read only the Secrets, ConfigMaps, PVCs, PVs,
// ResourceClaims and VolumeAttachments, and mint tokens only for the ServiceAccounts, that pods bound to its
// node reference (NodeGraph); may touch only its own Lease and CSINode; and otherwise holds the system:node
// role's rules. Other users get no opinion. Refusals carry upstream's reasons.
import type { PolicyRule } from '@kemu/core';
import { type AuthorizationAttributes, type AuthorizationResult, type Authorizer, unionAuthorizer } from '../auth-seams.js';
import { nodeOf } from '../admission/node-restriction.js';
import { bootstrapClusterRoles } from './bootstrap-policy.js';
import { NODES_GROUP } from './component-identities.js';
import type { NodeGraph, NodeGraphVertex } from './node-graph.js';
import { rulesAllow } from './rbac-rules.js';

const NODE_LEASE_NAMESPACE = 'kube-node-lease';
const ALLOW: AuthorizationResult = { decision: 'allow', reason: '' };
const noOpinion = (reason = ''): AuthorizationResult => ({ decision: 'no-opinion', reason });

/** The rules every node holds for what the graph does not subdivide: the system:node role's. */
function nodeRules(): readonly PolicyRule[] {
  return bootstrapClusterRoles().find((r) => r.metadata.name === 'system:node')!.rules ?? [];
}

export class NodeAuthorizer implements Authorizer {
  private readonly rules = nodeRules();
  /** Static-rule answers by verb, group, resource and subresource (the rules name no objects). */
  private readonly staticAnswers = new Map<string, boolean>();

  constructor(private readonly graph: NodeGraph) {}

  async authorize(attrs: AuthorizationAttributes): Promise<AuthorizationResult> {
    if (!attrs.user.groups.includes(NODES_GROUP)) return noOpinion();
    const node = nodeOf(attrs.user);
    if (!node) return noOpinion(`unknown node for user "${attrs.user.name}"`);
    if (attrs.isResourceRequest) {
      switch (`${attrs.apiGroup}/${attrs.resource}`) {
        case '/secrets':
          return this.readNamespaced(node, 'secret', attrs);
        case '/configmaps':
          return this.readNamespaced(node, 'configmap', attrs);
        case '/persistentvolumeclaims':
          return attrs.subresource === 'status' ? this.statusUpdate(node, 'pvc', attrs) : this.getOnly(node, 'pvc', attrs);
        case '/persistentvolumes':
          return this.getOnly(node, 'pv', attrs);
        case 'resource.k8s.io/resourceclaims':
          return this.getOnly(node, 'resourceclaim', attrs);
        case 'storage.k8s.io/volumeattachments':
          return this.getOnly(node, 'volumeattachment', attrs);
        case '/serviceaccounts':
          return this.createToken(node, attrs);
        case 'coordination.k8s.io/leases':
          return this.lease(node, attrs);
        case 'storage.k8s.io/csinodes':
          return this.csiNode(node, attrs);
      }
    }
    return this.staticRulesAllow(attrs) ? ALLOW : noOpinion();
  }

  private staticRulesAllow(attrs: AuthorizationAttributes): boolean {
    if (!attrs.isResourceRequest) return rulesAllow(attrs, this.rules);
    const key = `${attrs.verb} ${attrs.apiGroup} ${attrs.resource} ${attrs.subresource}`;
    let ok = this.staticAnswers.get(key);
    if (ok === undefined) this.staticAnswers.set(key, (ok = rulesAllow({ ...attrs, name: '' }, this.rules)));
    return ok;
  }

  private readNamespaced(node: string, vertex: NodeGraphVertex, attrs: AuthorizationAttributes): AuthorizationResult {
    if (!['get', 'list', 'watch'].includes(attrs.verb)) return noOpinion('can only read resources of this type');
    if (attrs.subresource) return noOpinion('cannot read subresource');
    if (!attrs.namespace) return noOpinion('can only read namespaced object of this type');
    return this.related(node, vertex, attrs);
  }

  private getOnly(node: string, vertex: NodeGraphVertex, attrs: AuthorizationAttributes): AuthorizationResult {
    if (attrs.verb !== 'get') return noOpinion('can only get individual resources of this type');
    if (attrs.subresource) return noOpinion('cannot get subresource');
    return this.related(node, vertex, attrs);
  }

  private statusUpdate(node: string, vertex: NodeGraphVertex, attrs: AuthorizationAttributes): AuthorizationResult {
    if (attrs.verb !== 'update' && attrs.verb !== 'patch') return noOpinion('can only get/update/patch this type');
    if (attrs.subresource !== 'status') return noOpinion('can only update status subresource');
    return this.related(node, vertex, attrs);
  }

  private createToken(node: string, attrs: AuthorizationAttributes): AuthorizationResult {
    if (attrs.verb !== 'create' || !attrs.name) return noOpinion('can only create tokens for individual service accounts');
    if (attrs.subresource !== 'token') return noOpinion('can only create token subresource of serviceaccount');
    return this.related(node, 'serviceaccount', attrs);
  }

  private lease(node: string, attrs: AuthorizationAttributes): AuthorizationResult {
    if (!['get', 'create', 'update', 'patch', 'delete'].includes(attrs.verb)) return noOpinion('can only get, create, update, patch, or delete a node lease');
    if (attrs.namespace !== NODE_LEASE_NAMESPACE) return noOpinion(`can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
    if (attrs.verb !== 'create' && attrs.name !== node) return noOpinion('can only access node lease with the same name as the requesting node');
    return ALLOW;
  }

  private csiNode(node: string, attrs: AuthorizationAttributes): AuthorizationResult {
    if (!['get', 'create', 'update', 'patch', 'delete'].includes(attrs.verb)) return noOpinion('can only get, create, update, patch, or delete a CSINode');
    if (attrs.subresource) return noOpinion('cannot authorize CSINode subresources');
    if (attrs.verb !== 'create' && attrs.name !== node) return noOpinion('can only access CSINode with the same name as the requesting node');
    return ALLOW;
  }

  private related(node: string, vertex: NodeGraphVertex, attrs: AuthorizationAttributes): AuthorizationResult {
    if (!attrs.name) return noOpinion('No Object name found');
    if (!this.graph.hasPath(node, vertex, attrs.namespace, attrs.name)) return noOpinion(`no relationship found between node '${node}' and this object`);
    return ALLOW;
  }
}

/**
 * `--authorization-mode=Node,<next>`: requests of nodes are asked of the Node authorizer first, then of `next`
 * (upstream's union); everyone else's go straight to `next`, so the Node authorizer costs them nothing.
 */
export function nodeThen(node: NodeAuthorizer, next: Authorizer): Authorizer {
  const union = unionAuthorizer(node, next);
  return { authorize: (attrs) => (attrs.user.groups.includes(NODES_GROUP) ? union.authorize(attrs) : next.authorize(attrs)) };
}
