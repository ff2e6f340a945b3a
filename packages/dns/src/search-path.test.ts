import { describe, expect, it } from 'vitest';
import { buildClusterIndex } from './cluster-index.js';
import { Resolver } from './resolver.js';
import { lookupWithSearch, searchCandidates } from './search-path.js';

const pod = { searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', '.'], ndots: 5 };

describe('search path', () => {
  it('tries the search list first below ndots dots, the name itself first at or above it, and only the name when absolute', () => {
    expect(searchCandidates('web', pod)).toEqual(['web.shop.svc.cluster.local', 'web.svc.cluster.local', 'web.cluster.local', 'web']);
    expect(searchCandidates('a.b.c.d.e.f', pod)[0]).toBe('a.b.c.d.e.f');
    expect(searchCandidates('web.shop.svc.cluster.local.', pod)).toEqual(['web.shop.svc.cluster.local']);
    expect(searchCandidates('example.com', { searches: [] })).toEqual(['example.com']);
  });

  it('resolves short names from the pod\'s namespace first, then other namespaces, following in-cluster CNAMEs', () => {
    const idx = buildClusterIndex(
      {
        services: [
          { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop' }, spec: { clusterIP: '10.96.0.20' } },
          { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'blog' }, spec: { clusterIP: '10.96.0.30' } },
          { apiVersion: 'v1', kind: 'Service', metadata: { name: 'alias', namespace: 'shop' }, spec: { type: 'ExternalName', externalName: 'web.blog.svc.cluster.local' } },
          { apiVersion: 'v1', kind: 'Service', metadata: { name: 'out', namespace: 'shop' }, spec: { type: 'ExternalName', externalName: 'example.com' } },
        ],
        endpointSlices: [],
      },
      'cluster.local',
    );
    const r = new Resolver({ zone: 'cluster.local' }, () => idx);
    expect(lookupWithSearch(r, 'web', pod)).toEqual({ name: 'web.shop.svc.cluster.local', addresses: ['10.96.0.20'], cnames: [] });
    expect(lookupWithSearch(r, 'web.blog', pod)?.addresses).toEqual(['10.96.0.30']);
    expect(lookupWithSearch(r, 'alias', pod)).toEqual({ name: 'alias.shop.svc.cluster.local', addresses: ['10.96.0.30'], cnames: ['web.blog.svc.cluster.local'] });
    expect(lookupWithSearch(r, 'out', pod)).toEqual({ name: 'out.shop.svc.cluster.local', addresses: [], cnames: ['example.com'] });
    expect(lookupWithSearch(r, 'nope', pod)).toBeUndefined();
  });
});
