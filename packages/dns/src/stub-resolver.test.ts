// The stub resolver asking the cluster DNS server over real UDP sockets on loopback, as a pod's libc would.
import dgram from 'node:dgram';
import { createMemoryStore, type EndpointSlice, type Service, type Store } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DnsServer } from './server.js';
import { type DnsExchange, queryMessage, readReply, stubLookup } from './stub-resolver.js';

/** One datagram to `server` (IP:PORT) and the first reply, or undefined after `timeoutMs`. */
const udp =
  (timeoutMs = 500): DnsExchange =>
  (server, query) =>
    new Promise((resolve) => {
      const [host, port] = server.split(':') as [string, string];
      const sock = dgram.createSocket('udp4');
      const done = (r: Buffer | undefined) => {
        clearTimeout(timer);
        sock.close();
        resolve(r);
      };
      const timer = setTimeout(() => done(undefined), timeoutMs);
      sock.on('message', (m) => done(m));
      sock.send(query, Number(port), host);
    });

const pod = { searches: ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local'], ndots: 5 };

describe('stub resolver against the cluster DNS server', () => {
  let store: Store;
  let server: DnsServer;
  let at = '';
  let silent: dgram.Socket;
  let silentAt = '';

  beforeAll(async () => {
    store = await createMemoryStore();
    for (const ns of ['shop']) await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await store.create<Service>({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { clusterIP: '10.96.0.20', ports: [{ port: 80 }] } });
    await store.create<Service>({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'db', namespace: 'shop' }, spec: { clusterIP: '10.96.0.30', ports: [{ port: 5432 }] } });
    await store.create<Service>({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'ext', namespace: 'default' }, spec: { type: 'ExternalName', externalName: 'example.org' } });
    await store.create<Service>({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop' }, spec: { clusterIP: 'None', ports: [{ name: 'http', port: 80 }] } });
    await store.create<EndpointSlice>({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'web-a', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080 }],
      endpoints: [{ addresses: ['10.244.1.5'], hostname: 'web-0', conditions: { ready: true } }],
    });
    server = new DnsServer({ store, port: 0 });
    await server.start();
    at = `127.0.0.1:${server.address().port}`;
    // A nameserver that never answers, as one that is down.
    silent = dgram.createSocket('udp4');
    await new Promise<void>((r) => silent.bind(0, '127.0.0.1', () => r()));
    silentAt = `127.0.0.1:${silent.address().port}`;
  });

  afterAll(async () => {
    await server?.stop();
    silent?.close();
  });

  it('resolves a short name through the search list, the pod\'s own namespace first', async () => {
    const r = await stubLookup(udp(), 'web', { ...pod, nameservers: [at] });
    expect(r.result).toEqual({ name: 'web.default.svc.cluster.local', addresses: ['10.96.0.20'], cnames: [] });
    expect(r.queries.map((q) => [q.name, q.rcode])).toEqual([['web.default.svc.cluster.local', 'NOERROR']]);
  });

  it('moves on past NXDOMAIN to the next search domain, and asks a name with enough dots as it is first', async () => {
    const r = await stubLookup(udp(), 'db.shop', { ...pod, nameservers: [at] });
    expect(r.queries.map((q) => [q.name, q.rcode])).toEqual([
      ['db.shop.default.svc.cluster.local', 'NXDOMAIN'],
      ['db.shop.svc.cluster.local', 'NOERROR'],
    ]);
    expect(r.result?.addresses).toEqual(['10.96.0.30']);
    const fqdn = await stubLookup(udp(), 'web-0.web.shop.svc.cluster.local', { ...pod, nameservers: [at] });
    expect(fqdn.queries[0]!.name).toBe('web-0.web.shop.svc.cluster.local');
    expect(fqdn.result?.addresses).toEqual(['10.244.1.5']);
  });

  it('reports an ExternalName alias it cannot follow, and a name that is nowhere', async () => {
    const ext = await stubLookup(udp(), 'ext', { ...pod, nameservers: [at] });
    expect(ext.result).toEqual({ name: 'ext.default.svc.cluster.local', addresses: [], cnames: ['example.org'] });
    const none = await stubLookup(udp(), 'nope', { ...pod, nameservers: [at] });
    expect(none.result).toBeUndefined();
    // Every search name is NXDOMAIN; the bare name is outside the served zones, REFUSED.
    expect(none.queries.map((q) => q.rcode)).toEqual(['NXDOMAIN', 'NXDOMAIN', 'NXDOMAIN', 'REFUSED']);
  });

  it('tries the next nameserver when one stays silent, and gives up on a name no server answers', async () => {
    const r = await stubLookup(udp(200), 'web', { ...pod, nameservers: [silentAt, at] });
    expect(r.queries.map((q) => [q.server, q.rcode ?? q.error])).toEqual([
      [silentAt, 'no reply'],
      [at, 'NOERROR'],
    ]);
    expect(r.result?.addresses).toEqual(['10.96.0.20']);
    const down = await stubLookup(udp(200), 'web', { ...pod, nameservers: [silentAt] });
    expect(down.result).toBeUndefined();
    expect(down.tryAgain).toBe(true);
    expect(down.queries).toHaveLength(1);
    await expect(stubLookup(udp(), 'web', { ...pod, nameservers: [] })).rejects.toThrow('resolv.conf names no nameserver');
  });

  it('ignores a reply to another query, as a stub checks the ID and the question', async () => {
    const q = queryMessage('web.default.svc.cluster.local', 'A', 1234);
    const other = (await udp()(at, queryMessage('web.default.svc.cluster.local', 'A', 4321)))!;
    expect(readReply(q, other, at, 'web.default.svc.cluster.local', 'A').error).toBe('a reply to another query');
    const wrongName = (await udp()(at, queryMessage('db.shop.svc.cluster.local', 'A', 1234)))!;
    expect(readReply(q, wrongName, at, 'web.default.svc.cluster.local', 'A').error).toBe('a reply to another query');
    expect(readReply(q, Buffer.from([1, 2, 3]), at, 'web.default.svc.cluster.local', 'A').error).toBe('a reply that does not parse');
    expect(readReply(q, (await udp()(at, q))!, at, 'web.default.svc.cluster.local', 'A').addresses).toEqual(['10.96.0.20']);
  });
});
