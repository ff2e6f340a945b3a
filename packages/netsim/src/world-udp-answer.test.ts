import { describe, expect, it } from 'vitest';
import { bridgeWorld, vxlanWorld } from './test-topologies.js';
import { formatTrace } from './trace.js';

const upper = (payload: Buffer) => Buffer.from(payload.toString().toUpperCase());

describe('UDP answers', () => {
  it('answers a datagram from the listener and hands the reply to the asking socket, over IPv4 and IPv6', () => {
    const w = bridgeWorld(2);
    const seen: { ip: string; port: number }[] = [];
    w.answerUdp('pod2', { port: 53 }, (p, from) => {
      seen.push(from);
      return upper(p);
    });
    const r = w.udpExchange('pod1', '10.244.0.3', 53, Buffer.from('hello'));
    expect(r.delivered).toBe('pod2');
    expect(r.reply?.payload.toString()).toBe('HELLO');
    expect(r.reply?.from).toEqual({ ip: '10.244.0.3', port: 53 });
    expect(seen).toEqual([{ ip: '10.244.0.2', port: r.local!.port }]);
    const text = formatTrace(r.trace);
    expect(text).toContain('UDP answer of 5 bytes from the listener on port 53');
    expect(text).toContain(`UDP reply of 5 bytes from 10.244.0.3:53 for the socket on port ${r.local!.port}`);
    const v6 = w.udpExchange('pod1', 'fd00:244::3', 53, Buffer.from('six'));
    expect(v6.reply?.payload.toString()).toBe('SIX');
    expect(v6.reply?.from.ip).toBe('fd00:244::3');
  });

  it('gives nothing back where the server stays silent, nothing listens, or the listener went', () => {
    const w = bridgeWorld(2);
    w.answerUdp('pod2', { port: 53 }, () => undefined);
    const silent = w.udpExchange('pod1', '10.244.0.3', 53, Buffer.from('x'));
    expect(silent.delivered).toBe('pod2');
    expect(silent.reply).toBeUndefined();
    const closed = w.udpExchange('pod1', '10.244.0.3', 54, Buffer.from('x'));
    expect(closed.reply).toBeUndefined();
    expect(closed.icmpError).toEqual({ from: '10.244.0.3', message: 'Destination Port Unreachable' });
    w.unlisten('pod2', { proto: 'udp', port: 53 });
    // A plain listener on the same port afterwards receives without the old answerer answering.
    w.listen('pod2', { proto: 'udp', port: 53 });
    const plain = w.udpExchange('pod1', '10.244.0.3', 53, Buffer.from('x'));
    expect(plain.delivered).toBe('pod2');
    expect(plain.reply).toBeUndefined();
    expect(() => w.answerUdp('pod2', { port: 53 }, upper)).toThrow(/EADDRINUSE|port 53/);
  });

  it('records a failing server as a drop that names the failure, and sends nothing', () => {
    const w = bridgeWorld(2);
    w.answerUdp('pod2', { port: 53 }, () => {
      throw new Error('index not ready');
    });
    const r = w.udpExchange('pod1', '10.244.0.3', 53, Buffer.from('x'));
    expect(r.reply).toBeUndefined();
    expect(formatTrace(r.trace)).toContain('the server failed: index not ready');
  });

  it('takes a reply through a Service DNAT only once conntrack has reversed it (the source the socket asked)', () => {
    const w = vxlanWorld();
    w.answerUdp('pod2', { port: 5353 }, upper);
    w.iptablesRestore(
      'node1',
      '*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -d 10.96.0.10/32 -p udp -m udp --dport 53 -m comment --comment "kube-system/kube-dns:dns" -j DNAT --to-destination 10.244.2.2:5353\nCOMMIT\n',
    );
    const r = w.udpExchange('pod1', '10.96.0.10', 53, Buffer.from('query'));
    expect(r.delivered).toBe('pod2');
    expect(r.reply).toEqual({ from: { ip: '10.96.0.10', port: 53 }, payload: Buffer.from('QUERY') });
    const text = formatTrace(r.trace);
    expect(text).toContain('10.96.0.10:53 -> 10.244.2.2:5353');
    // The same server asked directly answers from its own address; a socket connected to the Service
    // address would not take that datagram, so the un-NAT above is what made the reply count.
    const direct = w.udpExchange('pod1', '10.244.2.2', 5353, Buffer.from('q'));
    expect(direct.reply?.from).toEqual({ ip: '10.244.2.2', port: 5353 });
  });

  it('refuses a bad destination, port or payload as the socket calls do', () => {
    const w = bridgeWorld(1);
    expect(() => w.udpExchange('pod1', 'nope', 53, Buffer.from('x'))).toThrow(/destination/);
    expect(() => w.udpExchange('pod1', '10.244.0.1', 0, Buffer.from('x'))).toThrow(/bad port 0/);
    expect(() => w.udpExchange('pod1', '10.244.0.1', 53, Buffer.alloc(65001))).toThrow(/bad UDP payload/);
    expect(() => w.answerUdp('pod1', { port: 70000 }, upper)).toThrow(/port 70000/);
  });
});
