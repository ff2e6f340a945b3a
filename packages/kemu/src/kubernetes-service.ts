// The `kubernetes` Service in the `default` namespace and its Endpoints and EndpointSlice, pointing at the
// API server, kept as kube-apiserver's kubernetes-service controller and master endpoint reconciler keep
// them: ClusterIP the first address of the service CIDR, port 443 named https to the API server's port, the
// Endpoints marked skip-mirror and the EndpointSlice written alongside; recreated if deleted, repaired if
// changed, every interval.
import os from 'node:os';
import {
  DEFAULT_SERVICE_CIDR,
  type EndpointSlice,
  type Endpoints,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type KubeObject,
  SERVICE_NAME_LABEL,
  type Service,
  type Store,
} from '@kemu/core';
import { nthAddress } from '@kemu/ip';

export const KUBERNETES_SERVICE = 'kubernetes';
const NAMESPACE = 'default';
const SKIP_MIRROR_LABEL = 'endpointslice.kubernetes.io/skip-mirror';

/**
 * The address the API server advertises, as kube-apiserver resolves it: the bind address itself, unless it is
 * loopback or unspecified, then the machine's first non-internal IPv4 address (else `fallback`).
 */
export function advertiseAddress(bind: string, fallback: string, interfaces = os.networkInterfaces()): string {
  if (bind && bind !== '0.0.0.0' && bind !== '::' && !/^127\./.test(bind) && bind !== '::1' && bind !== 'localhost') return bind;
  for (const list of Object.values(interfaces)) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return fallback;
}

/** The three objects as the reconciler wants them. */
export function kubernetesServiceObjects(address: string, port: number, serviceCIDR = DEFAULT_SERVICE_CIDR) {
  const clusterIP = nthAddress(serviceCIDR.split(',')[0]!.trim(), 1);
  const ipv6 = address.includes(':');
  const service: Service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: KUBERNETES_SERVICE, namespace: NAMESPACE, labels: { component: 'apiserver', provider: 'kubernetes' } },
    spec: { type: 'ClusterIP', clusterIP, sessionAffinity: 'None', ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: port }] },
  } as Service;
  const endpoints: Endpoints = {
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: { name: KUBERNETES_SERVICE, namespace: NAMESPACE, labels: { [SKIP_MIRROR_LABEL]: 'true' } },
    subsets: [{ addresses: [{ ip: address }], ports: [{ name: 'https', port, protocol: 'TCP' }] }],
  };
  const slice: EndpointSlice = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: KUBERNETES_SERVICE, namespace: NAMESPACE, labels: { [SERVICE_NAME_LABEL]: KUBERNETES_SERVICE } },
    addressType: ipv6 ? 'IPv6' : 'IPv4',
    endpoints: [{ addresses: [address], conditions: { ready: true } }],
    ports: [{ name: 'https', port, protocol: 'TCP' }],
  };
  return { service, endpoints, slice };
}

export interface KubernetesServiceOptions {
  store: Store;
  /** The API server's advertised address and its HTTPS port. */
  address: string;
  port: number;
  serviceCIDR?: string;
  /** How often the objects are checked and repaired (upstream: 10 s). */
  intervalMs?: number;
  onError?: (err: unknown) => void;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export class KubernetesServiceReconciler {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(private readonly o: KubernetesServiceOptions) {}

  /** Reconciles once, then every interval in the background; a failed round is reported and retried. */
  async start(): Promise<void> {
    await this.reconcile().catch((e) => this.o.onError?.(e));
    this.timer = setInterval(() => {
      this.running ??= this.reconcile()
        .catch((e) => this.o.onError?.(e))
        .finally(() => (this.running = undefined));
    }, this.o.intervalMs ?? 10_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  async reconcile(): Promise<void> {
    const want = kubernetesServiceObjects(this.o.address, this.o.port, this.o.serviceCIDR);
    // The Service: created if missing; its ports put back if changed (the cluster IP is immutable).
    await this.ensure(want.service, (cur: Service) => (same(cur.spec.ports, want.service.spec.ports) ? undefined : { ...cur, spec: { ...cur.spec, ports: want.service.spec.ports } }));
    await this.ensure(want.endpoints, (cur: Endpoints) =>
      same(cur.subsets, want.endpoints.subsets) && same(cur.metadata.labels, want.endpoints.metadata.labels)
        ? undefined
        : { ...cur, metadata: { ...cur.metadata, labels: want.endpoints.metadata.labels }, subsets: want.endpoints.subsets },
    );
    await this.ensure(want.slice, (cur: EndpointSlice) =>
      same(cur.endpoints, want.slice.endpoints) && same(cur.ports, want.slice.ports) && same(cur.metadata.labels, want.slice.metadata.labels) && cur.addressType === want.slice.addressType
        ? undefined
        : { ...cur, metadata: { ...cur.metadata, labels: want.slice.metadata.labels }, addressType: want.slice.addressType, endpoints: want.slice.endpoints, ports: want.slice.ports },
    );
  }

  private async ensure<T extends KubeObject>(want: T, repair: (cur: T) => T | undefined): Promise<void> {
    const { store } = this.o;
    let cur: T;
    try {
      cur = (await store.get(want.kind, NAMESPACE, want.metadata.name!)) as T;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await store.create(want).catch((e) => {
        if (!isAlreadyExists(e)) throw e;
      });
      return;
    }
    const next = repair(cur);
    if (next) await store.update(next).catch((e) => {
      // Someone else wrote it meanwhile: the next round looks again.
      if (!isConflict(e) && !isNotFound(e)) throw e;
    });
  }
}
