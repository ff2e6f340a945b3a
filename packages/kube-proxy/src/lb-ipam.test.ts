import { createMemoryStore, StatusError } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { LoadBalancerIpam } from './lb-ipam.js';
import { service } from './test-helpers.js';

describe('load-balancer addresses', () => {
  it('gives each LoadBalancer Service one pool address, reuses freed ones, and reports an empty pool', async () => {
    const store = await createMemoryStore();
    const errors: string[] = [];
    const ipam = new LoadBalancerIpam({ store, pool: '172.18.255.0/30', onError: (e) => errors.push((e as Error).message) });
    await ipam.start();
    try {
      const lb = (name: string) => service(name, { type: 'LoadBalancer', ports: [{ name: 'http', protocol: 'TCP', port: 80 }] });
      const ipOf = async (name: string) => (await store.get('Service', 'default', name)).status?.loadBalancer?.ingress?.[0]?.ip;
      await store.create(lb('a'));
      await store.create(lb('b'));
      await expect.poll(async () => [await ipOf('a'), await ipOf('b')].sort()).toEqual(['172.18.255.1', '172.18.255.2']);
      await store.create(lb('c'));
      await expect.poll(() => errors).toEqual(['no address left in load-balancer pool 172.18.255.0/30 for service default/c']);
      expect(await ipOf('c')).toBeUndefined();
      // A freed address goes to the Service that has waited for one, not to a newcomer.
      const freed = await ipOf('a');
      await store.delete('Service', 'default', 'a');
      await expect.poll(() => ipOf('c')).toBe(freed);
      await store.create(lb('d'));
      await expect.poll(() => errors.at(-1)).toBe('no address left in load-balancer pool 172.18.255.0/30 for service default/d');
      const freedB = await ipOf('b');
      await store.delete('Service', 'default', 'b');
      await expect.poll(() => ipOf('d')).toBe(freedB);
      expect(() => new LoadBalancerIpam({ store, pool: 'fd00::/64' })).toThrow(/invalid load-balancer pool "fd00::\/64"/);
    } finally {
      await ipam.stop();
      await store.close();
    }
  });

  it('gives the address back when its status write is refused, and retries until the write goes through', async () => {
    const store = await createMemoryStore();
    let refuse = 3;
    const refusing = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'patch')
          return (...args: Parameters<typeof store.patch>) => {
            if (args[0] === 'Service' && refuse > 0) {
              refuse--;
              return Promise.reject(new StatusError('Forbidden', 403, 'services "a" is forbidden: User "x" cannot patch resource "services/status"'));
            }
            return store.patch(...args);
          };
        return Reflect.get(target, prop, receiver);
      },
    });
    const errors: string[] = [];
    const ipam = new LoadBalancerIpam({ store: refusing, pool: '172.18.255.0/30', onError: (e) => errors.push((e as Error).message) });
    await ipam.start();
    try {
      const lb = (name: string) => service(name, { type: 'LoadBalancer', ports: [{ name: 'http', protocol: 'TCP', port: 80 }] });
      const ipOf = async (name: string) => (await store.get('Service', 'default', name)).status?.loadBalancer?.ingress?.[0]?.ip;
      await store.create(lb('a'));
      await expect.poll(() => ipOf('a')).toBe('172.18.255.1');
      expect(errors).toHaveLength(3);
      expect(errors.every((m) => m.includes('cannot patch resource "services/status"'))).toBe(true);
      // The refused tries kept nothing: one more Service takes the pool's other address, and the pool is then full.
      await store.create(lb('b'));
      await expect.poll(() => ipOf('b')).toBe('172.18.255.2');
      await store.create(lb('c'));
      await expect.poll(() => errors.at(-1)).toBe('no address left in load-balancer pool 172.18.255.0/30 for service default/c');
    } finally {
      await ipam.stop();
      await store.close();
    }
  });
});
