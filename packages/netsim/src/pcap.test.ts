import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { pcapBytes } from './index.js';
import { bridgeWorld, vxlanWorld } from './test-topologies.js';

describe('pcap writer', () => {
  it('writes a libpcap file: header, one record per frame, virtual microsecond timestamps', () => {
    const w = bridgeWorld(2);
    w.ping('pod1', '10.244.0.3', { count: 2 });
    const frames = w.captured('pod1/eth0');
    const b = w.pcap('pod1/eth0');
    expect(b.readUInt32LE(0)).toBe(0xa1b2c3d4);
    expect([b.readUInt16LE(4), b.readUInt16LE(6), b.readUInt32LE(20)]).toEqual([2, 4, 1]);
    let off = 24;
    let n = 0;
    let lastTs = -1;
    while (off < b.length) {
      const ts = b.readUInt32LE(off) * 1e6 + b.readUInt32LE(off + 4);
      const incl = b.readUInt32LE(off + 8);
      expect(ts).toBeGreaterThanOrEqual(lastTs);
      expect(Buffer.compare(b.subarray(off + 16, off + 16 + incl), Buffer.from(frames[n]!.frame))).toBe(0);
      lastTs = ts;
      off += 16 + incl;
      n++;
    }
    expect(n).toBe(frames.length);
    // ARP request + reply, then two echo requests and replies, seen in both directions on pod1's eth0.
    expect(frames.map((f) => f.dir)).toEqual(['tx', 'rx', 'tx', 'rx', 'tx', 'rx']);
    // Seq 2 was sent one virtual second after seq 1.
    expect(frames[4]!.timeUs - frames[2]!.timeUs).toBeGreaterThanOrEqual(1_000_000);
  });

  it('keeps only the most recent frames when the capture ring is full', () => {
    const w = bridgeWorld(2, { captureLimit: 4 });
    w.ping('pod1', '10.244.0.3', { count: 3 });
    const all = w.captured('pod1').concat(w.captured('pod2'), w.captured('host'));
    expect(all.length).toBe(4);
    expect(all.every((f) => f.frame.length > 0)).toBe(true);
  });
});

const tshark = requirePeers('the tshark decode tests', [peers.tshark]);

function tsharkLines(file: string, args: string[]): string[] {
  const r = spawnSync('tshark', ['-n', '-r', file, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tshark ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.split('\n').filter((l) => l.trim() !== '');
}

const CHECKSUMS = [
  '-o',
  'ip.check_checksum:TRUE',
  '-o',
  'udp.check_checksum:TRUE',
  '-o',
  'tcp.check_checksum:TRUE',
];
const BAD =
  '_ws.malformed || _ws.expert.severity >= 6291456 || ip.checksum.status == "Bad" || udp.checksum.status == "Bad" || tcp.checksum.status == "Bad" || icmp.checksum.status == "Bad" || icmpv6.checksum.status == "Bad"';

describe.runIf(tshark)('tshark decodes exported pcaps', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'kemu-netsim-pcap-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('VXLAN frames carry inner Ethernet/IPv4/ICMP and TCP, with no warnings or bad checksums', () => {
    const w = vxlanWorld();
    w.listen('pod2', { proto: 'tcp', port: 80 });
    expect(w.ping('pod1', '10.244.2.2', { count: 2 }).reachable).toBe(true);
    expect(w.tcpConnect('pod1', '10.244.2.2', 80).state).toBe('established');
    const file = join(dir, 'underlay.pcap');
    w.writePcap('node1/eth0', file);
    const protos = tsharkLines(file, ['-T', 'fields', '-e', 'frame.protocols']);
    expect(protos.filter((p) => p === 'eth:ethertype:ip:udp:vxlan:eth:ethertype:ip:icmp:data')).toHaveLength(
      4,
    );
    expect(protos.filter((p) => p === 'eth:ethertype:ip:udp:vxlan:eth:ethertype:ip:tcp')).toHaveLength(3);
    const fields = tsharkLines(file, [
      '-Y',
      'vxlan',
      '-T',
      'fields',
      '-e',
      'vxlan.vni',
      '-e',
      'udp.dstport',
      '-e',
      'ip.src',
      '-e',
      'icmp.type',
    ]);
    expect(fields[0]).toBe('1\t4789\t192.168.0.1,10.244.1.2\t8');
    expect(tsharkLines(file, [...CHECKSUMS, '-Y', BAD])).toEqual([]);
  });

  it('ARP, NDP, ICMPv6 and TCP on a bridge decode cleanly', () => {
    const w = bridgeWorld(2);
    w.listen('pod2', { proto: 'tcp', port: 443 });
    expect(w.ping('pod1', 'fd00:244::3').reachable).toBe(true);
    expect(w.ping('pod1', '10.244.0.3').reachable).toBe(true);
    expect(w.tcpConnect('pod1', 'fd00:244::3', 443).state).toBe('established');
    const file = join(dir, 'pod1.pcap');
    w.writePcap('pod1', file);
    const protos = new Set(tsharkLines(file, ['-T', 'fields', '-e', 'frame.protocols']));
    expect([...protos].sort()).toEqual([
      'eth:ethertype:arp',
      'eth:ethertype:ip:icmp:data',
      'eth:ethertype:ipv6:icmpv6',
      'eth:ethertype:ipv6:icmpv6:data',
      'eth:ethertype:ipv6:tcp',
    ]);
    expect(tsharkLines(file, [...CHECKSUMS, '-Y', BAD])).toEqual([]);
  });

  it('the checks above do catch a damaged frame', () => {
    const w = bridgeWorld(2);
    w.ping('pod1', '10.244.0.3');
    const frames = w.captured('pod1/eth0').map((f) => ({ ...f, frame: Buffer.from(f.frame) }));
    const echo = frames.find((f) => f.frame.length > 60)!;
    echo.frame[14 + 20 + 2] ^= 0xff; // ICMP checksum
    const file = join(dir, 'damaged.pcap');
    writeFileSync(file, pcapBytes(frames));
    expect(tsharkLines(file, [...CHECKSUMS, '-Y', BAD])).toHaveLength(1);
  });
});
