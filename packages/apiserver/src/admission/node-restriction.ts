// The NodeRestriction admission plugin: a kubelet (user system:node:<name> in system:nodes) may change only
// its own Node, may create only mirror pods bound to itself, and may update the status of or delete only
// the pods bound to it; it may not set node-restriction.kubernetes.io/ labels. Messages as upstream.
import type { Store } from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain } from '../auth-seams.js';
import { forbiddenError } from '../authz/forbidden.js';

const NODE_PREFIX = 'system:node:';
const NODES_GROUP = 'system:nodes';
const RESTRICTED_LABEL_PREFIX = 'node-restriction.kubernetes.io/';
const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** The node a request comes from, or undefined when the user is not a node. */
export function nodeOf(user: { name: string; groups: string[] }): string | undefined {
  return user.name.startsWith(NODE_PREFIX) && user.groups.includes(NODES_GROUP) ? user.name.slice(NODE_PREFIX.length) : undefined;
}

export class NodeRestrictionAdmission implements AdmissionChain {
  constructor(private readonly store: Store) {}

  async admit(): Promise<void> {}

  async validate(attrs: AdmissionAttributes): Promise<void> {
    const node = nodeOf(attrs.userInfo);
    if (!node || attrs.resource.group !== '') return;
    const deny = (why: string) => forbiddenError('', attrs.resource.resource, attrs.name, why);
    if (attrs.resource.resource === 'nodes') {
      if (attrs.name !== node) throw deny(`node "${node}" is not allowed to modify node "${attrs.name}"`);
      const labels = attrs.object?.metadata?.labels ?? {};
      const old = attrs.oldObject?.metadata?.labels ?? {};
      const bad = Object.keys({ ...labels, ...old })
        .filter((k) => k.startsWith(RESTRICTED_LABEL_PREFIX) && labels[k] !== old[k])
        .sort();
      if (bad.length) throw deny(`is not allowed to modify labels: ${bad.join(', ')}`);
      return;
    }
    if (attrs.resource.resource !== 'pods') return;
    const pod = attrs.object ?? attrs.oldObject;
    switch (attrs.operation) {
      case 'CREATE':
        if (attrs.subresource === 'eviction') return this.ownPod(attrs, node, 'evict');
        if (attrs.subresource) return;
        if (pod?.metadata?.annotations?.[MIRROR_ANNOTATION] === undefined) throw deny(`pod does not have "${MIRROR_ANNOTATION}" annotation, node "${node}" can only create mirror pods`);
        if (pod.spec?.nodeName !== node) throw deny(`node "${node}" can only create pods with spec.nodeName set to itself`);
        return;
      case 'UPDATE':
        if (attrs.subresource !== 'status') throw deny(`node "${node}" can only update pod status`);
        if ((attrs.oldObject ?? pod)?.spec?.nodeName !== node) throw deny(`node "${node}" can only update pod status for pods with spec.nodeName set to itself`);
        return;
      case 'DELETE':
        return this.ownPod(attrs, node, 'delete');
    }
  }

  private async ownPod(attrs: AdmissionAttributes, node: string, verb: string): Promise<void> {
    const pod = attrs.oldObject ?? (await this.store.get('Pod', attrs.namespace, attrs.name).catch(() => undefined));
    if (pod && pod.spec?.nodeName !== node) throw forbiddenError('', 'pods', attrs.name, `node "${node}" can only ${verb} pods with spec.nodeName set to itself`);
  }
}
