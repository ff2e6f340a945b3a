import { describe, expect, it } from 'vitest';
import { parseTraceTarget } from './trace-target.js';

describe('kemu trace targets', () => {
  it('reads pods, Services and addresses', () => {
    expect(parseTraceTarget('web-1', 'shop')).toEqual({ kind: 'pod', namespace: 'shop', name: 'web-1' });
    expect(parseTraceTarget('db/pg-0')).toEqual({ kind: 'pod', namespace: 'db', name: 'pg-0' });
    expect(parseTraceTarget('svc/web:http', 'shop')).toEqual({ kind: 'service', namespace: 'shop', name: 'web', port: 'http' });
    expect(parseTraceTarget('svc/shop/web')).toEqual({ kind: 'service', namespace: 'shop', name: 'web', port: undefined });
    expect(parseTraceTarget('10.96.0.1')).toEqual({ kind: 'ip', ip: '10.96.0.1' });
    expect(parseTraceTarget('172.18.0.10:30080')).toEqual({ kind: 'ip', ip: '172.18.0.10', port: 30080 });
    expect(parseTraceTarget('[fd00::1]:80')).toEqual({ kind: 'ip', ip: 'fd00::1', port: 80 });
    expect(parseTraceTarget('fd00::1')).toEqual({ kind: 'ip', ip: 'fd00::1' });
    expect(parseTraceTarget('web.shop')).toEqual({ kind: 'dns', name: 'web.shop', port: undefined });
    expect(parseTraceTarget('web.shop.svc.cluster.local.:8080')).toEqual({ kind: 'dns', name: 'web.shop.svc.cluster.local.', port: 8080 });
    expect(parseTraceTarget('web:80')).toEqual({ kind: 'dns', name: 'web', port: 80 });
    expect(parseTraceTarget('dns:web.shop')).toEqual({ kind: 'lookup', name: 'web.shop' });
    expect(parseTraceTarget('dns:web-0.web.shop.svc.cluster.local.')).toEqual({ kind: 'lookup', name: 'web-0.web.shop.svc.cluster.local.' });
  });

  it('refuses what it cannot send to, saying why', () => {
    expect(() => parseTraceTarget('10.96.0.1:99999')).toThrow('invalid port "99999" in 10.96.0.1:99999');
    expect(() => parseTraceTarget('svc/a/b/c')).toThrow(/use svc\/NAME\[:PORT\]/);
    expect(() => parseTraceTarget('web.shop:http')).toThrow('invalid port "http" in web.shop:http');
    expect(() => parseTraceTarget('web..shop')).toThrow(/invalid target/);
    expect(() => parseTraceTarget('Bad_Name')).toThrow(/invalid target "Bad_Name"/);
    expect(() => parseTraceTarget('dns:')).toThrow('invalid DNS name "" in dns:: use dns:NAME, e.g. dns:web.default');
    expect(() => parseTraceTarget('dns:web..shop')).toThrow(/invalid DNS name "web..shop"/);
    expect(() => parseTraceTarget('dns:web.shop:80')).toThrow(/invalid DNS name "web.shop:80"/);
    expect(() => parseTraceTarget(`dns:${'a'.repeat(64)}.shop`)).toThrow(/invalid DNS name/);
  });
});
