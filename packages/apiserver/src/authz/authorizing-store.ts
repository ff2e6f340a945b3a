// A Store that asks the authorizer before each call, as the API server would for a component talking to it
// over HTTP: kemu's in-process components (scheduler, controllers, kubelets) can run under their upstream
// identity (system:kube-scheduler, system:node:<name>, ...) so that a rule missing from their role fails as
// it would upstream, with kube-apiserver's 403 text, without the HTTP round trip.
import { type Binding, kindInfo, type KubeObject, type ListOptions, type Store, type WatchOptions } from '@kemu/core';
import type { AuthorizationAttributes, Authorizer, UserInfo } from '../auth-seams.js';
import { authorizationForbidden } from './forbidden.js';

export function authorizingStore(store: Store, user: UserInfo, authorizer: Authorizer): Store {
  const check = async (verb: string, kind: string, namespace: string | undefined, name = '', subresource = '') => {
    const info = kindInfo(kind);
    const attrs: AuthorizationAttributes = {
      user,
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
  const ns = (o: KubeObject) => o.metadata?.namespace;
  return {
    async create(obj, opts) {
      await check('create', obj.kind, ns(obj));
      return store.create(obj, opts);
    },
    async get(kind, namespace, name) {
      await check('get', kind, namespace, name);
      return store.get(kind, namespace, name);
    },
    async list(kind, opts?: ListOptions) {
      await check('list', kind, opts?.namespace);
      return store.list(kind, opts);
    },
    async update(obj, opts) {
      await check('update', obj.kind, ns(obj), obj.metadata?.name ?? '', opts?.subresource ?? '');
      return store.update(obj, opts);
    },
    async updateStatus(obj, opts) {
      await check('update', obj.kind, ns(obj), obj.metadata?.name ?? '', 'status');
      return store.updateStatus(obj, opts);
    },
    async patch(kind, namespace, name, patch, type, opts) {
      await check('patch', kind, namespace, name, opts?.subresource ?? '');
      return store.patch(kind, namespace, name, patch, type, opts);
    },
    async delete(kind, namespace, name, opts) {
      await check('delete', kind, namespace, name);
      return store.delete(kind, namespace, name, opts);
    },
    async watch(kind, opts?: WatchOptions) {
      await check('watch', kind, opts?.namespace);
      return store.watch(kind, opts);
    },
    async bind(binding: Binding, opts) {
      await check('create', 'Pod', binding.metadata?.namespace, binding.metadata?.name ?? '', 'binding');
      return store.bind(binding, opts);
    },
    resourceVersion: () => store.resourceVersion(),
    close: () => store.close(),
  };
}
