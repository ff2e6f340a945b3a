// The default `kubernetes` Service of a composed cluster, read with kubectl v1.32 as on any cluster: the
// first address of the service CIDR, port 443 named https, and endpoints at the API server kubectl talks to.
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HttpsCluster, startHttpsCluster } from '../apiserver/https-cluster.js';

const ok = requirePeers('the kubernetes Service through kubectl', [peers.kubectl]);

describe.runIf(ok)('the default kubernetes Service', () => {
  let h: HttpsCluster;
  let apiPort: number;

  beforeAll(async () => {
    h = await startHttpsCluster('kubernetes-svc');
    apiPort = Number(new URL(h.cluster.api!.url!).port);
  }, 120_000);

  afterAll(async () => {
    await h?.stop();
  });

  it('kubectl get svc kubernetes shows it at 10.96.0.1:443', async () => {
    const r = await h.kubectl(['get', 'svc', 'kubernetes']);
    expect(r.stderr).toBe('');
    const [head, row] = r.stdout.trim().split('\n');
    expect(head).toMatch(/^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE$/);
    expect(row).toMatch(/^kubernetes\s+ClusterIP\s+10\.96\.0\.1\s+<none>\s+443\/TCP\s+\S+$/);
    const svc = JSON.parse((await h.kubectl(['get', 'svc', 'kubernetes', '-n', 'default', '-o', 'json'])).stdout);
    expect(svc.metadata.labels).toEqual({ component: 'apiserver', provider: 'kubernetes' });
    expect(svc.spec.ports).toEqual([{ name: 'https', port: 443, protocol: 'TCP', targetPort: apiPort }]);
  });

  it('its Endpoints and EndpointSlice name the API server port kubectl is using', async () => {
    const ep = JSON.parse((await h.kubectl(['get', 'endpoints', 'kubernetes', '-o', 'json'])).stdout);
    expect(ep.subsets).toHaveLength(1);
    expect(ep.subsets[0].ports).toEqual([{ name: 'https', port: apiPort, protocol: 'TCP' }]);
    expect(ep.subsets[0].addresses).toHaveLength(1);
    const slices = JSON.parse((await h.kubectl(['get', 'endpointslices', '-l', 'kubernetes.io/service-name=kubernetes', '-o', 'json'])).stdout);
    expect(slices.items.map((s: { metadata: { name: string } }) => s.metadata.name)).toEqual(['kubernetes']);
    expect(slices.items[0].endpoints).toEqual([{ addresses: [ep.subsets[0].addresses[0].ip], conditions: { ready: true } }]);
    expect(slices.items[0].ports).toEqual([{ name: 'https', port: apiPort, protocol: 'TCP' }]);
  });

  it('comes back when deleted, as kube-apiserver recreates it', async () => {
    expect((await h.kubectl(['delete', 'svc', 'kubernetes'])).code).toBe(0);
    let back = '';
    for (let i = 0; i < 150 && !back.includes('10.96.0.1'); i++) {
      await new Promise((r) => setTimeout(r, 100));
      back = (await h.kubectl(['get', 'svc', 'kubernetes', '-o', 'jsonpath={.spec.clusterIP}'])).stdout;
    }
    expect(back).toBe('10.96.0.1');
  }, 30_000);
});
