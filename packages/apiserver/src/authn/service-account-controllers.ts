// Two kube-controller-manager controllers the ServiceAccount machinery depends on, run with the auth stack:
// the service-accounts controller (every active namespace has a `default` ServiceAccount) and the
// root-ca-cert publisher (every namespace has the ConfigMap kube-root-ca.crt holding the cluster CA, which
// the projected token volume mounts as ca.crt).
import { isAlreadyExists, isConflict, isNotFound, type KubeObject, type Namespace, SharedInformer, type Store } from '@kemu/core';
import { ROOT_CA_CONFIGMAP } from '../admission/service-account.js';

export class ServiceAccountControllers {
  private readonly namespaces: SharedInformer<'Namespace', Namespace>;
  private readonly serviceAccounts: SharedInformer;
  private readonly configMaps: SharedInformer;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly caCertPem: string,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    this.namespaces = new SharedInformer(store, 'Namespace');
    this.serviceAccounts = new SharedInformer(store, 'ServiceAccount', { fieldSelector: 'metadata.name=default' });
    this.configMaps = new SharedInformer(store, 'ConfigMap', { fieldSelector: `metadata.name=${ROOT_CA_CONFIGMAP}` });
    const sync = (o: KubeObject) => this.enqueue(o.metadata.name!);
    this.namespaces.addEventHandler({ onAdd: sync, onUpdate: (_a, b) => sync(b) });
    const owner = (o: KubeObject) => this.enqueue(o.metadata.namespace!);
    this.serviceAccounts.addEventHandler({ onDelete: owner });
    this.configMaps.addEventHandler({ onDelete: owner, onUpdate: (_a, b) => owner(b) });
  }

  async start(): Promise<void> {
    const all = [this.namespaces, this.serviceAccounts, this.configMaps] as SharedInformer[];
    for (const i of all) i.start();
    await Promise.all(all.map((i) => i.waitForSync()));
    await this.queue;
  }

  async stop(): Promise<void> {
    await Promise.all(([this.namespaces, this.serviceAccounts, this.configMaps] as SharedInformer[]).map((i) => i.stop()));
    await this.queue;
  }

  private enqueue(namespace: string): void {
    this.queue = this.queue.then(() => this.sync(namespace)).catch(this.onError);
  }

  /** Makes sure an active namespace has its default ServiceAccount and its kube-root-ca.crt ConfigMap. */
  async sync(namespace: string): Promise<void> {
    const ns = this.namespaces.indexer.get(undefined, namespace);
    if (!ns || ns.metadata.deletionTimestamp || ns.status?.phase === 'Terminating') return;
    if (!this.serviceAccounts.indexer.get(namespace, 'default')) {
      await this.createIgnoringExisting({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace } });
    }
    const cm = this.configMaps.indexer.get(namespace, ROOT_CA_CONFIGMAP);
    if (!cm) {
      await this.createIgnoringExisting({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: ROOT_CA_CONFIGMAP, namespace, annotations: { 'kubernetes.io/description': 'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.' } },
        data: { 'ca.crt': this.caCertPem },
      });
    } else if (cm.data?.['ca.crt'] !== this.caCertPem) {
      try {
        await this.store.update({ ...cm, data: { ...cm.data, 'ca.crt': this.caCertPem } });
      } catch (err) {
        if (!isConflict(err) && !isNotFound(err)) throw err;
      }
    }
  }

  private async createIgnoringExisting(obj: KubeObject): Promise<void> {
    try {
      await this.store.create(obj);
    } catch (err) {
      // Gone or going namespaces refuse new content; the next namespace event settles it.
      if (!isAlreadyExists(err) && !isNotFound(err) && (err as { code?: number }).code !== 403) throw err;
    }
  }
}
