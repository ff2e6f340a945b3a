// A Store that asks the authorizer before each call, as the API server would for a component talking to it
// over HTTP: kemu's in-process components (scheduler, controllers, kubelets) can run under their upstream
// identity (system:kube-scheduler, system:node:<name>, ...) so that a rule missing from their role fails as
// it would upstream, with kube-apiserver's 403 text, without the HTTP round trip. Writes can also pass
// validating admission (NodeRestriction for a kubelet), which sees the stored object as the old one and,
// for a patch, the patched result as the new one.
import {
  applyPatch,
  type Binding,
  kindInfo,
  type KubeObject,
  type ListOptions,
  type PatchType,
  type Store,
  type WatchOptions,
} from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain, AdmissionOperation, AuthorizationAttributes, Authorizer, UserInfo } from '../auth-seams.js';
import { authorizationForbidden } from './forbidden.js';

export interface AuthorizingStoreOptions {
  /** Validating admission for the component's writes (only `validate` is called; nothing is mutated). */
  admission?: AdmissionChain;
  /**
   * Lists and watches are authorized as this user instead: a controller's informers are the controller
   * manager's shared ones, running on the manager's credentials, while its other calls use its own.
   */
  listAs?: UserInfo;
}

export function authorizingStore(store: Store, user: UserInfo, authorizer: Authorizer, opts: AuthorizingStoreOptions = {}): Store {
  const check = async (verb: string, kind: string, namespace: string | undefined, name = '', subresource = '') => {
    const info = kindInfo(kind);
    const attrs: AuthorizationAttributes = {
      user: opts.listAs && (verb === 'list' || verb === 'watch') ? opts.listAs : user,
      isResourceRequest: true,
      path: '',
      verb,
      apiPrefix: info.group ? 'apis' : 'api',
      apiGroup: info.group,
      apiVersion: info.version,
      namespace: info.namespaced ? (namespace ?? '') : '',
      resource: info.resource,
      subresource,
      name,
    };
    const r = await authorizer.authorize(attrs);
    if (r.decision !== 'allow') throw authorizationForbidden(attrs, r.reason);
  };
  const admission = opts.admission;
  const current = (kind: string, namespace: string | undefined, name: string) => store.get(kind, namespace ?? '', name);
  const admit = async (operation: AdmissionOperation, kind: string, namespace: string | undefined, name: string, subresource: string, object?: KubeObject, oldObject?: KubeObject) => {
    if (!admission) return;
    const info = kindInfo(kind);
    const attrs: AdmissionAttributes = {
      operation,
      kind: { group: info.group, version: info.version, kind: info.kind },
      resource: { group: info.group, version: info.version, resource: info.resource },
      subresource,
      namespace: info.namespaced ? (namespace ?? '') : '',
      name,
      object,
      oldObject,
      dryRun: false,
      userInfo: user,
    };
    await admission.validate(attrs);
  };
  const ns = (o: KubeObject) => o.metadata?.namespace;
  return {
    async create(obj, o) {
      await check('create', obj.kind, ns(obj));
      await admit('CREATE', obj.kind, ns(obj), obj.metadata?.name ?? '', '', obj);
      return store.create(obj, o);
    },
    async get(kind, namespace, name) {
      await check('get', kind, namespace, name);
      return store.get(kind, namespace, name);
    },
    async list(kind, o?: ListOptions) {
      await check('list', kind, o?.namespace);
      return store.list(kind, o);
    },
    async update(obj, o) {
      const name = obj.metadata?.name ?? '';
      await check('update', obj.kind, ns(obj), name, o?.subresource ?? '');
      if (admission) await admit('UPDATE', obj.kind, ns(obj), name, o?.subresource ?? '', obj, await current(obj.kind, ns(obj), name));
      return store.update(obj, o);
    },
    async updateStatus(obj, o) {
      const name = obj.metadata?.name ?? '';
      await check('update', obj.kind, ns(obj), name, 'status');
      if (admission) await admit('UPDATE', obj.kind, ns(obj), name, 'status', obj, await current(obj.kind, ns(obj), name));
      return store.updateStatus(obj, o);
    },
    async patch(kind, namespace, name, patch, type, o) {
      await check('patch', kind, namespace, name, o?.subresource ?? '');
      if (admission) {
        const old = await current(kind, namespace, name);
        await admit('UPDATE', kind, namespace, name, o?.subresource ?? '', applyPatch(old, patch, type as PatchType | undefined), old);
      }
      return store.patch(kind, namespace, name, patch, type, o);
    },
    async delete(kind, namespace, name, o) {
      await check('delete', kind, namespace, name);
      if (admission) await admit('DELETE', kind, namespace, name, '', undefined, await current(kind, namespace, name));
      return store.delete(kind, namespace, name, o);
    },
    async watch(kind, o?: WatchOptions) {
      await check('watch', kind, o?.namespace);
      return store.watch(kind, o);
    },
    async bind(binding: Binding, o) {
      await check('create', 'Pod', binding.metadata?.namespace, binding.metadata?.name ?? '', 'binding');
      await admit('CREATE', 'Pod', binding.metadata?.namespace, binding.metadata?.name ?? '', 'binding', binding as KubeObject);
      return store.bind(binding, o);
    },
    resourceVersion: () => store.resourceVersion(),
    close: () => store.close(),
  };
}
