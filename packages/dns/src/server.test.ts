// The server against ISC BIND's dig over UDP and TCP on loopback, fed from a store through informers.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createMemoryStore, type EndpointSlice, type Service, type Store } from '@kemu/core';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DnsServer } from './server.js';

const run = promisify(execFile);

interface DigResult {
  status: string;
  flags: string[];
  answer: string[][];
  authority: string[][];
  additional: string[][];
}

function section(out: string, name: string): string[][] {
  const m = out.match(new RegExp(`;; ${name} SECTION:\\n([\\s\\S]*?)(?:\\n\\n|$)`));
  if (!m) return [];
  return m[1]
    .split('\n')
    .filter((l) => l && !l.startsWith(';'))
    .map((l) => l.split(/\s+/));
}

function slice(svc: string, endpoints: { ip: string; hostname?: string; ready?: boolean }[], ports: EndpointSlice['ports'], suffix = 'x'): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${svc}-${suffix}`, namespace: 'default', labels: { 'kubernetes.io/service-name': svc } },
    addressType: 'IPv4',
    ports,
    endpoints: endpoints.map((e) => ({ addresses: [e.ip], hostname: e.hostname, conditions: { ready: e.ready ?? true } })),
  };
}

const ok = requirePeers('the cluster DNS server against dig', [peers.dig]);

describe.runIf(ok)('cluster DNS server, asked by dig', () => {
  let store: Store;
  let server: DnsServer;
  let port = 0;

  async function dig(...args: string[]): Promise<DigResult> {
    const { stdout } = await run('dig', ['@127.0.0.1', '-p', String(port), '+time=2', '+tries=1', '+norec', ...args], { timeout: 10_000 });
    const status = stdout.match(/status: (\w+)/)?.[1] ?? '';
    const flags = (stdout.match(/;; flags: ([^;]*);/)?.[1] ?? '').trim().split(/\s+/);
    return { status, flags, answer: section(stdout, 'ANSWER'), authority: section(stdout, 'AUTHORITY'), additional: section(stdout, 'ADDITIONAL') };
  }
  const data = (r: DigResult, type: string) => r.answer.filter((x) => x[3] === type).map((x) => x.slice(4).join(' ')).sort();

  beforeAll(async () => {
    store = await createMemoryStore();
    await store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'default' },
      spec: { clusterIP: '10.96.0.20', ports: [{ name: 'http', port: 80 }, { name: 'metrics', port: 9090 }] },
    });
    await store.create(slice('web', [{ ip: '10.244.1.2' }, { ip: '10.244.2.3' }], [{ name: 'http', port: 8080, protocol: 'TCP' }]));
    await store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'db', namespace: 'default' },
      spec: { clusterIP: 'None', ports: [{ name: 'pg', port: 5432 }] },
    });
    await store.create(
      slice(
        'db',
        [
          { ip: '10.244.1.10', hostname: 'db-0' },
          { ip: '10.244.2.11', hostname: 'db-1' },
          { ip: '10.244.1.12' },
          { ip: '10.244.2.13', hostname: 'db-2', ready: false },
        ],
        [{ name: 'pg', port: 5432, protocol: 'TCP' }],
      ),
    );
    await store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'ext', namespace: 'default' },
      spec: { type: 'ExternalName', externalName: 'db.example.com' },
    });
    await store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'many', namespace: 'default' },
      spec: { clusterIP: 'None', ports: [{ name: 'http', port: 80 }] },
    });
    const many = Array.from({ length: 100 }, (_, i) => ({ ip: `10.244.${3 + Math.floor(i / 200)}.${(i % 200) + 1}` }));
    await store.create(slice('many', many, [{ name: 'http', port: 80, protocol: 'TCP' }]));
    server = new DnsServer({ store, port: 0, nameserverIPs: ['10.96.0.10'] });
    await server.start();
    port = server.address().port;
  });
  afterAll(async () => {
    await server?.stop();
    await store?.close();
  });

  it('answers a ClusterIP Service with its cluster IP, authoritatively', async () => {
    const r = await dig('web.default.svc.cluster.local', 'A');
    expect(r.status).toBe('NOERROR');
    expect(r.flags).toContain('aa');
    expect(data(r, 'A')).toEqual(['10.96.0.20']);
    expect(r.answer[0][1]).toBe('5');
  });

  it('answers a headless Service with its ready endpoints, and names endpoints by hostname or address', async () => {
    expect(data(await dig('db.default.svc.cluster.local', 'A'), 'A')).toEqual(['10.244.1.10', '10.244.1.12', '10.244.2.11']);
    expect(data(await dig('db-1.db.default.svc.cluster.local', 'A'), 'A')).toEqual(['10.244.2.11']);
    expect(data(await dig('10-244-1-12.db.default.svc.cluster.local', 'A'), 'A')).toEqual(['10.244.1.12']);
    expect((await dig('db-2.db.default.svc.cluster.local', 'A')).status).toBe('NXDOMAIN'); // not ready
  });

  it('gives SRV records for named ports with the targets\' addresses as additional records', async () => {
    const web = await dig('_http._tcp.web.default.svc.cluster.local', 'SRV');
    expect(data(web, 'SRV')).toEqual(['0 100 80 web.default.svc.cluster.local.']);
    expect(web.additional.filter((x) => x[3] === 'A').map((x) => [x[0], x[4]])).toEqual([['web.default.svc.cluster.local.', '10.96.0.20']]);
    const db = await dig('_pg._tcp.db.default.svc.cluster.local', 'SRV');
    expect(data(db, 'SRV')).toEqual([
      '0 33 5432 10-244-1-12.db.default.svc.cluster.local.',
      '0 33 5432 db-0.db.default.svc.cluster.local.',
      '0 33 5432 db-1.db.default.svc.cluster.local.',
    ]);
    expect((await dig('_pg._udp.db.default.svc.cluster.local', 'SRV')).status).toBe('NXDOMAIN');
    expect((await dig('_nope._tcp.web.default.svc.cluster.local', 'SRV')).status).toBe('NXDOMAIN');
  });

  it('answers PTR for cluster IPs and endpoint addresses', async () => {
    expect(data(await dig('-x', '10.96.0.20'), 'PTR')).toEqual(['web.default.svc.cluster.local.']);
    expect(data(await dig('-x', '10.244.2.11'), 'PTR')).toEqual(['db-1.db.default.svc.cluster.local.']);
    const none = await dig('-x', '10.96.9.9');
    expect(none.status).toBe('NXDOMAIN');
    expect(none.authority[0].slice(0, 4)).toEqual(['in-addr.arpa.', '5', 'IN', 'SOA']);
  });

  it('answers an ExternalName Service with a CNAME, whatever the type asked', async () => {
    expect(data(await dig('ext.default.svc.cluster.local', 'A'), 'CNAME')).toEqual(['db.example.com.']);
    expect(data(await dig('ext.default.svc.cluster.local', 'AAAA'), 'CNAME')).toEqual(['db.example.com.']);
  });

  it('tells NXDOMAIN from NODATA, with the zone SOA in the authority section', async () => {
    const nodata = await dig('web.default.svc.cluster.local', 'AAAA');
    expect(nodata.status).toBe('NOERROR');
    expect(nodata.answer).toEqual([]);
    expect(nodata.authority[0].slice(0, 5)).toEqual(['cluster.local.', '5', 'IN', 'SOA', 'ns.dns.cluster.local.']);
    expect(nodata.authority[0][5]).toBe('hostmaster.cluster.local.');
    const nx = await dig('nope.default.svc.cluster.local', 'A');
    expect(nx.status).toBe('NXDOMAIN');
    expect(nx.authority[0][3]).toBe('SOA');
    expect((await dig('default.svc.cluster.local', 'A')).status).toBe('NOERROR'); // a namespace with Services
    expect((await dig('nosuchns.svc.cluster.local', 'A')).status).toBe('NXDOMAIN');
    expect((await dig('web.default.svc.cluster.local.example.com', 'A')).status).toBe('REFUSED'); // not our zone
  });

  it('answers the apex SOA and NS, and the schema version', async () => {
    const soa = await dig('cluster.local', 'SOA');
    expect(soa.answer[0].slice(3, 6)).toEqual(['SOA', 'ns.dns.cluster.local.', 'hostmaster.cluster.local.']);
    const ns = await dig('cluster.local', 'NS');
    expect(data(ns, 'NS')).toEqual(['ns.dns.cluster.local.']);
    expect(ns.additional.filter((x) => x[3] === 'A').map((x) => x[4])).toEqual(['10.96.0.10']);
    expect(data(await dig('dns-version.cluster.local', 'TXT'), 'TXT')).toEqual(['"1.1.0"']);
  });

  it('answers pod names (pods insecure) only in namespaces that exist', async () => {
    expect(data(await dig('10-244-1-7.default.pod.cluster.local', 'A'), 'A')).toEqual(['10.244.1.7']);
    expect((await dig('10-244-1-7.nosuchns.pod.cluster.local', 'A')).status).toBe('NXDOMAIN');
  });

  it('sets TC over UDP when the answer does not fit, and gives it whole over TCP', async () => {
    const udp = await dig('+notcp', '+ignore', '+bufsize=512', 'many.default.svc.cluster.local', 'A');
    expect(udp.flags).toContain('tc');
    expect(udp.answer.length).toBeLessThan(100);
    const plain = await dig('+noedns', '+notcp', '+ignore', 'many.default.svc.cluster.local', 'A');
    expect(plain.flags).toContain('tc');
    const tcp = await dig('+tcp', 'many.default.svc.cluster.local', 'A');
    expect(tcp.flags).not.toContain('tc');
    expect(data(tcp, 'A')).toHaveLength(100);
    // dig retries over TCP by itself on TC, as resolvers do.
    expect(data(await dig('+bufsize=512', 'many.default.svc.cluster.local', 'A'), 'A')).toHaveLength(100);
  });

  it('follows the store: a new Service answers, a deleted one is gone', async () => {
    await store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'late', namespace: 'default' },
      spec: { clusterIP: '10.96.0.30', ports: [{ port: 80 }] },
    });
    await expect.poll(async () => data(await dig('late.default.svc.cluster.local', 'A'), 'A')).toEqual(['10.96.0.30']);
    await store.delete('Service', 'default', 'late');
    await expect.poll(async () => (await dig('late.default.svc.cluster.local', 'A')).status).toBe('NXDOMAIN');
  });
});
