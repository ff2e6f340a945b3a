// A Store that asks the authorizer before each call, as the API server would for a component talking to it
// over HTTP: kemu's in-process components (scheduler, controllers, kubelets) can run under their upstream
// identity (system:kube-scheduler, system:node:<name>, ...) so that a rule missing from their role fails as
// it would upstream, with kube-apiserver's 403 text, without the HTTP round trip. Writes can also pass
// admission, mutating then validating, as the API server's writes do: a create admits a copy of the object
// and stores what admission made of it; an update or patch admits the patched result against the stored
// object and writes it back pinned to that version (retried on a conflict, as the server retries a patch).
import {
  applyPatch,
  type Binding,
  isConflict,
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
  /** Admission for the component's writes: `admit` (which may change the object written), then `validate`. */
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
    await admission.admit(attrs);
    await admission.validate(attrs);
  };
  /** The object to write: the caller's own without admission, else a copy admission may change. */
  const own = <T extends KubeObject>(obj: T): T => (admission ? structuredClone(obj) : obj);
  const ns = (o: KubeObject) => o.metadata?.namespace;
  return {
    async create(obj, o) {
      await check('create', obj.kind, ns(obj));
      const next = own(obj);
      await admit('CREATE', obj.kind, ns(obj), obj.metadata?.name ?? '', '', next);
      return store.create(next, o);
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
      const next = own(obj);
      if (admission) await admit('UPDATE', obj.kind, ns(obj), name, o?.subresource ?? '', next, await current(obj.kind, ns(obj), name));
      return store.update(next, o);
    },
    async updateStatus(obj, o) {
      const name = obj.metadata?.name ?? '';
      await check('update', obj.kind, ns(obj), name, 'status');
      const next = own(obj);
      if (admission) await admit('UPDATE', obj.kind, ns(obj), name, 'status', next, await current(obj.kind, ns(obj), name));
      return store.updateStatus(next, o);
    },
    async patch(kind, namespace, name, patch, type, o) {
      const sub = o?.subresource ?? '';
      await check('patch', kind, namespace, name, sub);
      if (!admission) return store.patch(kind, namespace, name, patch, type, o);
      const pinned = !Array.isArray(patch) && Boolean((patch as { metadata?: { resourceVersion?: string } } | null)?.metadata?.resourceVersion);
      for (let attempt = 0; ; attempt++) {
        const old = await current(kind, namespace, name);
        const next = applyPatch(structuredClone(old), patch, type as PatchType | undefined) as KubeObject;
        if (!pinned) next.metadata = { ...next.metadata, resourceVersion: old.metadata.resourceVersion };
        await admit('UPDATE', kind, namespace, name, sub, next, old);
        const w = { ...(o?.dryRun ? { dryRun: true } : {}) };
        try {
          if (sub === 'status') return (await store.updateStatus(next, w)) as never;
          return (await store.update(next, sub === 'ephemeralcontainers' ? { ...w, subresource: sub } : w)) as never;
        } catch (err) {
          // Another writer got in between the read and the write: patch the newer object, as the server does.
          if (!isConflict(err) || pinned || attempt >= 5) throw err;
        }
      }
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
