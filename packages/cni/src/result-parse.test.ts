import { describe, expect, it } from 'vitest';
import { CniError } from './errors.js';
import { parseResult } from './types.js';

const failure = (raw: unknown): CniError => {
  try {
    parseResult(raw);
  } catch (e) {
    expect(e).toBeInstanceOf(CniError);
    return e as CniError;
  }
  throw new Error('expected a CniError');
};

describe('parseResult checks what it reads (prevResult, a delegate\'s output)', () => {
  it('reads a well-formed result of any supported version', () => {
    expect(
      parseResult({
        cniVersion: '0.4.0',
        interfaces: [{ name: 'eth0', mac: '0a:00:00:00:00:01', sandbox: '/var/run/netns/x' }],
        ips: [{ version: '4', address: '10.0.0.2/24', gateway: '10.0.0.1', interface: 0 }],
        routes: [{ dst: '0.0.0.0/0', gw: '10.0.0.1' }],
        dns: { nameservers: ['10.0.0.53'] },
      }),
    ).toEqual({
      cniVersion: '0.4.0',
      interfaces: [{ name: 'eth0', mac: '0a:00:00:00:00:01', sandbox: '/var/run/netns/x' }],
      ips: [{ address: '10.0.0.2/24', gateway: '10.0.0.1', interface: 0 }],
      routes: [{ dst: '0.0.0.0/0', gw: '10.0.0.1' }],
      dns: { nameservers: ['10.0.0.53'] },
    });
  });

  it('refuses fields of the wrong type or addresses that do not parse, with code 6 naming the field', () => {
    const base = { cniVersion: '1.0.0' };
    const cases: [unknown, string][] = [
      [{ ...base, ips: [{ address: { a: 1 } }] }, 'invalid result: ips[0].address must be an address with a prefix length, got {"a":1}'],
      [{ ...base, ips: [{ address: '10.0.0.2' }] }, 'invalid result: ips[0].address must be an address with a prefix length, got "10.0.0.2"'],
      [{ ...base, ips: [{ address: '10.0.0.2/24', gateway: 'x' }] }, 'invalid result: ips[0].gateway must be an IP address, got "x"'],
      [{ ...base, ips: 'x' }, 'invalid result: ips must be a list'],
      [{ ...base, interfaces: [{ name: 5 }] }, 'invalid result: interfaces[0].name must be a non-empty string'],
      [{ ...base, routes: [{ dst: '10.0.0.0/33' }] }, 'invalid result: routes[0].dst must be a network, got "10.0.0.0/33"'],
      [{ ...base, dns: [] }, 'invalid result: dns must be an object'],
      [{ ...base, dns: { search: 'a' } }, 'invalid result: dns.search must be a list of strings, got "a"'],
    ];
    for (const [raw, msg] of cases) {
      const e = failure(raw);
      expect(e.code).toBe(6);
      expect(e.message).toBe(msg);
    }
  });
});
