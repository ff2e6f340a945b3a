// The ServiceAccount controller: every active namespace has a `default` ServiceAccount, recreated if it
// is deleted.
import { Controller, isAlreadyExists, type Namespace, type SharedInformer } from '@kemu/core';
import type { ControllerContext } from './controller-context.js';

const COMPONENT = 'serviceaccount-controller';
export const DEFAULT_SERVICE_ACCOUNTS = ['default'];

export class ServiceAccountController {
  readonly controller: Controller;
  private readonly namespaces: SharedInformer<'Namespace'>;
  private readonly accounts: SharedInformer<'ServiceAccount'>;

  constructor(private readonly ctx: ControllerContext) {
    this.namespaces = ctx.informers.informer('Namespace');
    this.accounts = ctx.informers.informer('ServiceAccount');
    this.controller = new Controller({
      name: COMPONENT,
      workers: 2,
      informers: [this.namespaces, this.accounts],
      reconcile: (key) => this.sync(key),
      onError: (_k, e) => ctx.error(COMPONENT, e),
    });
    this.namespaces.addEventHandler({ onAdd: (n) => this.controller.enqueue(n), onUpdate: (_a, b) => this.controller.enqueue(b) });
    this.accounts.addEventHandler({
      onDelete: (sa) => {
        if (DEFAULT_SERVICE_ACCOUNTS.includes(sa.metadata.name!)) this.controller.enqueue(sa.metadata.namespace!);
      },
    });
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private async sync(name: string) {
    const ns = this.namespaces.lister.get(undefined, name) as Namespace | undefined;
    if (!ns || ns.metadata.deletionTimestamp || ns.status?.phase === 'Terminating') return undefined;
    for (const sa of DEFAULT_SERVICE_ACCOUNTS) {
      if (this.accounts.lister.get(name, sa)) continue;
      await this.ctx.store.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: name } }).catch((e) => {
        // A terminating namespace refuses new content: nothing to do.
        if (!isAlreadyExists(e) && e?.reason !== 'Forbidden' && e?.reason !== 'NotFound') throw e;
      });
    }
    return undefined;
  }
}
