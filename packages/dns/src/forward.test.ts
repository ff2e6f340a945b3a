// Forwarding names outside the cluster zone, asked by dig: a second server of ours plays the upstream
// (authoritative for another zone) on loopback.
import { execFile } from 'node:child_process';
import dgram from 'node:dgram';
import { promisify } from 'node:util';
import { createMemoryStore, type Store } from '@kemu/core';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUpstream } from './forward.js';
import { DnsServer } from './server.js';

const run = promisify(execFile);

describe('upstream addresses', () => {
  it('reads IP, IP:PORT and [IPv6]:PORT, and refuses names', () => {
    expect(parseUpstream('10.0.0.2')).toEqual({ host: '10.0.0.2', port: 53 });
    expect(parseUpstream('127.0.0.1:5300')).toEqual({ host: '127.0.0.1', port: 5300 });
    expect(parseUpstream('fd00::53')).toEqual({ host: 'fd00::53', port: 53 });
    expect(parseUpstream('[fd00::53]:5300')).toEqual({ host: 'fd00::53', port: 5300 });
    expect(() => parseUpstream('dns.example:53')).toThrow('invalid upstream resolver "dns.example:53": use IP or IP:PORT');
    expect(() => parseUpstream('127.0.0.1:0')).toThrow(/invalid upstream/);
  });
});

const ok = requirePeers('forwarding to an upstream, asked by dig', [peers.dig]);

describe.runIf(ok)('forwarding outside the cluster zone', () => {
  let stores: Store[] = [];
  let upstream: DnsServer;
  let front: DnsServer;
  let deadEnd: DnsServer;
  let silent: dgram.Socket;

  async function dig(server: DnsServer, ...args: string[]): Promise<{ status: string; answers: string[] }> {
    const { stdout } = await run('dig', ['@127.0.0.1', '-p', String(server.address().port), '+time=3', '+tries=1', ...args], { timeout: 10_000 });
    const answers = stdout.match(/;; ANSWER SECTION:\n([\s\S]*?)\n\n/)?.[1]?.split('\n').map((l) => l.split(/\s+/).slice(3).join(' ')) ?? [];
    return { status: stdout.match(/status: (\w+)/)?.[1] ?? '', answers };
  }

  beforeAll(async () => {
    const up = await createMemoryStore();
    await up.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ext' } });
    await up.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'api', namespace: 'ext' }, spec: { clusterIP: '10.96.7.7', ports: [{ port: 443 }] } });
    const mine = await createMemoryStore();
    stores = [up, mine];
    upstream = new DnsServer({ store: up, zone: 'example.test', port: 0 });
    await upstream.start();
    front = new DnsServer({ store: mine, port: 0, upstreams: [`127.0.0.1:${upstream.address().port}`] });
    await front.start();
    // An upstream that never answers.
    silent = dgram.createSocket('udp4');
    await new Promise<void>((r) => silent.bind(0, '127.0.0.1', () => r()));
    deadEnd = new DnsServer({ store: mine, port: 0, upstreams: [`127.0.0.1:${silent.address().port}`], forwardTimeoutMs: 300 });
    await deadEnd.start();
  });
  afterAll(async () => {
    await front?.stop();
    await deadEnd?.stop();
    await upstream?.stop();
    silent?.close();
    for (const s of stores) await s.close();
  });

  it('relays the upstream\'s answer for a name outside its zone, over UDP and TCP', async () => {
    expect(await dig(front, 'api.ext.svc.example.test', 'A')).toEqual({ status: 'NOERROR', answers: ['A 10.96.7.7'] });
    expect(await dig(front, '+tcp', 'api.ext.svc.example.test', 'A')).toEqual({ status: 'NOERROR', answers: ['A 10.96.7.7'] });
    expect((await dig(front, 'nope.ext.svc.example.test', 'A')).status).toBe('NXDOMAIN');
    // Its own zone is still its own.
    expect((await dig(front, 'nope.default.svc.cluster.local', 'A')).status).toBe('NXDOMAIN');
  });

  it('gives SERVFAIL when the upstream does not answer', async () => {
    expect((await dig(deadEnd, 'api.ext.svc.example.test', 'A')).status).toBe('SERVFAIL');
  });
});
