import { describe, expect, it } from 'vitest';
import { parseRequestUrl } from './request-info.js';

const targets = [
  '/',
  '/api/v1/namespaces/default/configmaps',
  '/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name%3Dtarget&resourceVersion=0',
  '/apis/rbac.authorization.k8s.io/v1/clusterroles/system:admin',
  '/api/v1/pods?labelSelector=app+in+(a,b)&limit=500',
  '/api/v1/namespaces/default/pods/x/',
  '/api//v1/pods',
  '//api/v1/pods',
  '/api/v1/namespaces/../pods',
  '/api/v1/namespaces/./pods',
  '/api/v1/namespaces/%2e%2e/pods',
  '/api/v1/namespaces/a%2Fb/pods',
  '/api/v1/namespaces/d/pods/.hidden',
  '/api/v1/pods?q=a b',
  '/api/v1/pods?q="x"&r=<y>&s=\'z\'',
  '/api/v1/pods?q=%zz&r=%41',
  '/api/v1/pods?x=1#frag',
  '/api/v1/pods#frag?x=1',
  '/api/v1/pods?',
  '/api/v1/pods\\x',
  '/api/v1/pods?é=ü',
  '/api/v1/p ds',
  '/api/v1/{x}',
];

describe('parseRequestUrl', () => {
  for (const t of targets)
    it(`reads ${JSON.stringify(t)} as URL parsing does`, () => {
      const want = new URL(t, 'http://kemu');
      const got = parseRequestUrl(t);
      expect(got.pathname).toBe(want.pathname);
      expect(got.search).toBe(want.search);
      expect([...got.searchParams]).toEqual([...want.searchParams]);
    });
});
