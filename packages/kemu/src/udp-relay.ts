// A UDP service of this process inside a real network namespace: a small relay started in the namespace
// (nsenter; this process cannot enter one itself) binds the UDP port there and hands each datagram over a
// unix socket, framed as DNS over TCP frames its messages (a two-byte length, RFC 1035 4.2.2), to an
// answer function here; answers go back in the order the datagrams came, an empty frame meaning none.
// Datagrams, addresses and ports are data to the relay, never code or shell words.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { frameMessage, onFramedMessages } from '@kemu/dns';

const NSENTER = '/usr/bin/nsenter';

/** The relay, run as `node -e RELAY SOCKET PORT` inside the namespace. */
const RELAY = `
const dgram = require('dgram'), net = require('net');
const [sock, port] = process.argv.slice(1);
const waiting = [];
let buf = Buffer.alloc(0);
const up = net.connect(sock);
const udp = dgram.createSocket('udp4');
up.on('data', (d) => {
  buf = buf.length ? Buffer.concat([buf, d]) : d;
  while (buf.length >= 2) {
    const n = buf.readUInt16BE(0);
    if (buf.length < 2 + n) break;
    const m = buf.subarray(2, 2 + n);
    buf = buf.subarray(2 + n);
    const to = waiting.shift();
    if (to && n > 0) udp.send(m, to.port, to.address);
  }
});
up.on('close', () => process.exit(0));
up.on('error', () => process.exit(1));
udp.on('message', (m, from) => {
  if (waiting.length >= 1024) return;
  waiting.push(from);
  const h = Buffer.alloc(2);
  h.writeUInt16BE(m.length);
  up.write(Buffer.concat([h, m]));
});
udp.on('error', (e) => { console.error(e.message); process.exit(1); });
up.on('connect', () => udp.bind(Number(port), '0.0.0.0', () => console.log('up')));
`;

/** One answer per frame, in order; an empty frame when `answer` gives none or fails. */
function serveFrames(c: net.Socket, answer: (payload: Buffer) => Uint8Array | undefined): void {
  c.on('error', () => c.destroy());
  onFramedMessages(c, (msg) => {
    let out: Uint8Array | undefined;
    try {
      out = answer(msg);
    } catch {
      out = undefined;
    }
    c.write(frameMessage(out && out.length <= 0xffff ? out : new Uint8Array(0)));
  });
}

/**
 * Answers UDP `port` inside the namespace at `netnsPath` with `answer`, through a relay and the unix
 * socket `socketPath` (mode 0600). Resolves once the port is bound there; the result stops both.
 */
export async function serveUdpInNetns(netnsPath: string, port: number, socketPath: string, answer: (payload: Buffer) => Uint8Array | undefined): Promise<() => Promise<void>> {
  if (!netnsPath.startsWith('/') || netnsPath.includes('\0')) throw new Error(`invalid network namespace path ${netnsPath}`);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`invalid port ${port}`);
  fs.rmSync(socketPath, { force: true });
  const server = net.createServer((c) => serveFrames(c, answer));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  fs.chmodSync(socketPath, 0o600);
  const child = spawn(NSENTER, [`--net=${netnsPath}`, '--', process.execPath, '-e', RELAY, socketPath, String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const stop = async () => {
    child.kill();
    await new Promise<void>((r) => server.close(() => r()));
    fs.rmSync(socketPath, { force: true });
  };
  try {
    await new Promise<void>((resolve, reject) => {
      let err = '';
      const timer = setTimeout(() => reject(new Error(`the UDP relay for port ${port} in ${netnsPath} did not start in 10 s`)), 10_000);
      child.stderr!.on('data', (d) => (err += d));
      child.stdout!.once('data', () => {
        clearTimeout(timer);
        resolve();
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the UDP relay for port ${port} in ${netnsPath} exited (${code}): ${err.trim()}`));
      });
    });
  } catch (e) {
    await stop();
    throw e;
  }
  return stop;
}

/** Sends `payload` from inside the namespace at `netns` to `to:port` over UDP and returns the first reply. */
export function udpExchangeInNetns(netns: string, to: string, port: number, payload: Uint8Array, timeoutMs = 2000): Promise<{ reply?: Buffer; error?: string }> {
  if (!netns.startsWith('/') || netns.includes('\0')) throw new Error(`invalid network namespace path ${netns}`);
  const script =
    "const d=require('dgram');const [to,port,hex,ms]=process.argv.slice(1);const s=d.createSocket(to.includes(':')?'udp6':'udp4');" +
    "const t=setTimeout(()=>{console.log('timeout');process.exit(0)},+ms);" +
    "s.on('message',(m,r)=>{if(r.address!==to||r.port!==+port)return;clearTimeout(t);console.log('reply '+m.toString('hex'));process.exit(0)});" +
    "s.on('error',(e)=>{console.log('error '+e.code);process.exit(0)});s.connect(+port,to,()=>s.send(Buffer.from(hex,'hex')));";
  return new Promise((resolve, reject) => {
    const child = spawn(NSENTER, [`--net=${netns}`, '--', process.execPath, '-e', script, to, String(port), Buffer.from(payload).toString('hex'), String(timeoutMs)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs + 10_000,
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.on('error', reject);
    child.on('close', () => {
      const m = /^reply ([0-9a-f]*)$/m.exec(out);
      if (m) resolve({ reply: Buffer.from(m[1]!, 'hex') });
      else resolve({ error: /^error (\S+)/m.exec(out)?.[1] ?? (out.includes('timeout') ? 'no reply' : out.trim() || 'no reply') });
    });
  });
}
