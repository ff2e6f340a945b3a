// Cluster DNS on the composed cluster (sim datapath): the DNS server kemu up runs answers for Services the
// EndpointSlice controller fed, a StatefulSet-style pod (hostname + subdomain) by its own name, and
// `kemu trace` resolves a short name from a pod's point of view (its search path) and reaches the Service.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Pod, Service } from '@kemu/core';
import { peers, requirePeers } from '@kemu/test-peers';
import { Cluster, type SimClusterNetwork } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './util.js';

const run = promisify(execFile);
let cluster: Cluster;
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-dns-'));

beforeAll(async () => {
  cluster = await Cluster.start({ stateDir, nodes: 1, fast: true });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

const pod = (name: string, labels: Record<string, string>, extra: Partial<Pod['spec']> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', labels },
  spec: { nodeName: 'kemu-node-1', containers: [{ name: 'c', image: 'busybox', command: ['sleep', 'infinity'], ports: [{ containerPort: 8080 }] }], ...extra },
});

const ok = requirePeers('cluster DNS on the composed cluster, asked by dig', [peers.dig]);

describe.runIf(ok)('cluster DNS in kemu up', () => {
  async function dig(name: string, type = 'A'): Promise<string[]> {
    const { host, port } = cluster.dns!.address();
    const { stdout } = await run('dig', [`@${host}`, '-p', String(port), '+short', '+time=2', '+tries=1', name, type], { timeout: 10_000 });
    return stdout.trim().split('\n').filter(Boolean).sort();
  }

  it('answers Services and StatefulSet-style pod names from the cluster\'s own objects', async () => {
    await cluster.store.create(pod('client', { app: 'client' }));
    await cluster.store.create(pod('db-0', { app: 'db' }, { hostname: 'db-0', subdomain: 'db' }));
    await cluster.store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'db', namespace: 'default' },
      spec: { clusterIP: 'None', selector: { app: 'db' }, ports: [{ name: 'pg', port: 5432, targetPort: 8080 }] },
    });
    await cluster.store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'default' },
      spec: { selector: { app: 'db' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
    });
    const db0 = await until('db-0 Running with an IP', async () => {
      const p = await cluster.store.get('Pod', 'default', 'db-0');
      return p.status?.phase === 'Running' && p.status.podIP ? p : undefined;
    });
    const web = await cluster.store.get('Service', 'default', 'web');
    expect(await dig('web.default.svc.cluster.local')).toEqual([web.spec.clusterIP]);
    await until('the headless Service lists db-0', async () => (await dig('db.default.svc.cluster.local')).includes(db0.status!.podIP!));
    expect(await dig('db-0.db.default.svc.cluster.local')).toEqual([db0.status!.podIP]);
    expect(await dig('_pg._tcp.db.default.svc.cluster.local', 'SRV')).toEqual(['0 100 8080 db-0.db.default.svc.cluster.local.']);
    expect(await dig('kubernetes.default.svc.cluster.local')).toEqual(
      [(await cluster.store.get('Service', 'default', 'kubernetes').catch(() => undefined))?.spec.clusterIP].filter(Boolean),
    );
  });

  it('lets kemu trace reach a Service by a short DNS name, resolved as the client pod would', async () => {
    const db0 = await cluster.store.get('Pod', 'default', 'db-0');
    const world = (cluster.network as SimClusterNetwork).world;
    const ns = world.namespaces().find((n) => n.includes('/netns/') && world.addresses(n).some((a) => a.address === db0.status!.podIP));
    // The simulated runtime may already listen on the declared container port.
    try {
      world.listen(ns!, { proto: 'tcp', port: 8080 });
    } catch (err) {
      if ((err as { code?: string }).code !== 'EADDRINUSE') throw err;
    }
    const web = await cluster.store.get('Service', 'default', 'web');
    const r = await until('web answers by name', async () => {
      const t = (await cluster.trace('client', 'web.default:80')) as { reachable: boolean; ip: string };
      return t.reachable && t;
    });
    expect(r.ip).toBe(web.spec.clusterIP);
    await expect(cluster.trace('client', 'nope.default:80')).rejects.toThrow(
      'nope.default: no such name in the cluster DNS (asked nope.default.default.svc.cluster.local, nope.default.svc.cluster.local, nope.default.cluster.local, nope.default)',
    );
  });
});
