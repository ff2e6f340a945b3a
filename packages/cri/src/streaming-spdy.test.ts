// Exec, attach and port-forward over SPDY/3.1, driven by an independent SPDY implementation (spdy-transport
// as the client) the way kubectl drives a kubelet: HTTP upgrade with X-Stream-Protocol-Version, then one
// stream per channel named by its streamType header.
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import zlib from 'node:zlib';
import { cri } from '@kemu/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { nodePty, startCatPod, startEchoPod, type TestShim, waitFor } from './test-util.js';

interface ClientStream extends Duplex {
  /** Resolves with the reason when the server resets the stream. */
  reset: Promise<string>;
  /** Everything the server sends on the stream, once it ends. */
  text: Promise<string>;
  on(event: 'response', fn: (code: number, headers: Record<string, string>) => void): this;
  on(event: string, fn: (...args: never[]) => void): this;
}
interface ClientConnection {
  start(version: number): void;
  request(opts: { method: string; path: string; headers: Record<string, string> }, cb: (err: Error | null) => void): ClientStream;
  on(event: string, fn: (...args: unknown[]) => void): void;
  end(): void;
}
const transport = createRequire(import.meta.url)('spdy-transport') as {
  connection: { create(socket: Duplex, opts: { protocol: string; isServer: boolean }): ClientConnection };
};

interface Upgraded {
  conn: ClientConnection;
  protocol: string;
  socket: net.Socket;
}

/** The HTTP/1.1 upgrade request kubectl sends, then a SPDY/3.1 client session on the socket. */
function spdyUpgrade(url: string, protocols: string[]): Promise<Upgraded> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: u.hostname,
      port: u.port,
      path: `${u.pathname}${u.search}`,
      method: 'POST',
      headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', ...(protocols.length ? { 'X-Stream-Protocol-Version': protocols } : {}) },
    });
    req.on('upgrade', (res, socket: net.Socket, head: Buffer) => {
      if (head.length) socket.unshift(head);
      const conn = transport.connection.create(socket, { protocol: 'spdy', isServer: false });
      conn.on('error', () => {});
      conn.start(3.1);
      resolve({ conn, protocol: String(res.headers['x-stream-protocol-version']), socket });
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      // A refused upgrade ends with the connection, which may close before 'end' is emitted.
      const done = () => reject(Object.assign(new Error(body.trim()), { statusCode: res.statusCode, headers: res.headers }));
      res.on('end', done);
      res.on('close', done);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Opens a stream and waits until its SYN_STREAM is sent, so stream ids reach the server in order as kubectl's do. */
function openStream(conn: ClientConnection, headers: Record<string, string>): Promise<ClientStream> {
  return new Promise((resolve, reject) => {
    const s = conn.request({ method: 'POST', path: '/', headers }, (err) => (err ? reject(err) : resolve(s)));
    s.on('error', () => {});
    // spdy-transport reports a RST_STREAM from the server as a close carrying an error.
    s.reset = new Promise((res) => s.on('close', (e?: Error) => e && res(e.message)));
    // Read from the start: the server may finish before the caller looks (kubectl copies each stream at once).
    s.text = readAll(s);
  });
}

function readAll(s: Duplex): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    s.on('data', (d: Buffer) => {
      text += d.toString();
    });
    s.on('end', () => resolve(text));
    s.on('close', () => resolve(text));
  });
}

interface CommandResult {
  protocol: string;
  stdout: string;
  stderr: string;
  error: string;
}

/** Runs a remote command the way kubectl's SPDY executor does (error stream first, then the others). */
async function spdyCommand(
  url: string,
  opts: { protocols?: string[]; stdin?: string; stdout?: boolean; stderr?: boolean; tty?: boolean; size?: [number, number] },
): Promise<CommandResult> {
  const { conn, protocol, socket } = await spdyUpgrade(url, opts.protocols ?? ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io']);
  const error = await openStream(conn, { streamtype: 'error' });
  error.end(); // the client never writes on the error stream
  const results: Promise<string>[] = [error.text];
  if (opts.stdin !== undefined) {
    const stdin = await openStream(conn, { streamtype: 'stdin' });
    stdin.end(opts.stdin);
  }
  for (const [want, type] of [
    [opts.stdout ?? true, 'stdout'],
    [opts.stderr ?? false, 'stderr'],
  ] as const) {
    if (!want) {
      results.push(Promise.resolve(''));
      continue;
    }
    const s = await openStream(conn, { streamtype: type });
    s.end();
    results.push(s.text);
  }
  if (opts.tty) {
    const resize = await openStream(conn, { streamtype: 'resize' });
    if (opts.size) resize.write(JSON.stringify({ Width: opts.size[0], Height: opts.size[1] }));
  }
  const [err, stdout, stderr] = await Promise.all(results);
  socket.destroy();
  return { protocol, stdout, stderr, error: err };
}

describe('SPDY on the sim backend', () => {
  let shim: TestShim;
  let pod: string;
  let cid: string;

  beforeAll(async () => {
    ({ shim, pod, cid } = await startCatPod('spdy-host'));
  });

  afterAll(async () => {
    await shim?.close();
  });

  const exec = (req: Partial<cri.ExecRequest>) => shim.call('Exec', { containerId: cid, stdout: true, stderr: true, ...req });

  it('negotiates v4, runs a command and reports success as a Status on the error stream', async () => {
    const { url } = await exec({ cmd: ['hostname'] });
    const r = await spdyCommand(url!, { stderr: true });
    expect(r.protocol).toBe('v4.channel.k8s.io');
    expect(r.stdout).toBe('spdy-host\n');
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.error)).toEqual({ metadata: {}, status: 'Success' });
  });

  it('carries stderr on its own stream and the exit code in the Status causes', async () => {
    const { url } = await exec({ cmd: ['cat', '/nope'] });
    const r = await spdyCommand(url!, { stderr: true });
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('cat: /nope: No such file or directory\n');
    expect(JSON.parse(r.error)).toMatchObject({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '1' }] } });
  });

  it('speaks v3 (plain error text) when the client prefers it, and nothing on success', async () => {
    const { url } = await exec({ cmd: ['sh', '-c', 'exit 3'] });
    const r = await spdyCommand(url!, { protocols: ['v3.channel.k8s.io', 'v4.channel.k8s.io'], stderr: true });
    expect(r.protocol).toBe('v3.channel.k8s.io');
    expect(r.error).toBe('command terminated with non-zero exit code: error executing command ["sh","-c","exit 3"], exit code 3');
    const ok = await spdyCommand((await exec({ cmd: ['true'] })).url!, { protocols: ['v3.channel.k8s.io'], stderr: true });
    expect(ok.error).toBe('');
  });

  it('feeds the stdin stream to the command and ends it with the stream', async () => {
    const { url } = await exec({ cmd: ['cat'], stdin: true, stderr: false });
    const r = await spdyCommand(url!, { stdin: 'over spdy\n' });
    expect(r.stdout).toBe('over spdy\n');
    expect(JSON.parse(r.error).status).toBe('Success');
  });

  it('attaches over SPDY', async () => {
    const { url } = await shim.call('Attach', { containerId: cid, stdin: true, stdout: true });
    const { conn, socket } = await spdyUpgrade(url!, ['v4.channel.k8s.io']);
    (await openStream(conn, { streamtype: 'error' })).end();
    const stdin = await openStream(conn, { streamtype: 'stdin' });
    const stdout = await openStream(conn, { streamtype: 'stdout' });
    stdout.end();
    let got = '';
    await new Promise<void>((resolve) => {
      stdout.on('data', (d: Buffer) => {
        got += d.toString();
        if (got.includes('ping\n')) resolve();
      });
      stdin.write('ping\n');
    });
    socket.destroy();
    expect(got).toBe('ping\n');
    expect((await shim.call('ContainerStatus', { containerId: cid })).status!.state).toBe(cri.ContainerState.CONTAINER_RUNNING);
  });

  it('refuses what kubelet refuses: no protocol, no common protocol, bad tokens, missing upgrade headers', async () => {
    const noVersion = await spdyUpgrade((await exec({ cmd: ['true'] })).url!, []).catch((e) => e);
    expect(noVersion).toMatchObject({ statusCode: 400, message: 'unable to upgrade: X-Stream-Protocol-Version is required' });
    const mismatch = await spdyUpgrade((await exec({ cmd: ['true'] })).url!, ['v9.channel.k8s.io']).catch((e) => e);
    expect(mismatch.statusCode).toBe(403);
    expect(mismatch.message).toBe(
      'unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io], server accepts [v5.channel.k8s.io v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io channel.k8s.io]',
    );
    expect(mismatch.headers['x-accepted-stream-protocol-versions']).toContain('v4.channel.k8s.io');
    const { url } = await exec({ cmd: ['true'] });
    await spdyCommand(url!, { stderr: true });
    await expect(spdyUpgrade(url!, ['v4.channel.k8s.io'])).rejects.toMatchObject({ statusCode: 404 });
    const u = new URL((await exec({ cmd: ['true'] })).url!);
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, headers: { Connection: 'Upgrade', Upgrade: 'h2c' } });
      req.on('response', (r) => {
        let body = '';
        r.on('data', (d) => {
          body += d;
        });
        r.on('end', () => resolve({ status: r.statusCode!, body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(res.status).toBe(400);
    expect(res.body).toContain('SPDY/3.1');
  });

  it('resets a stream of an unknown type and still serves the session', async () => {
    const { url } = await exec({ cmd: ['hostname'], stderr: false });
    const { conn, socket } = await spdyUpgrade(url!, ['v4.channel.k8s.io']);
    const bogus = await openStream(conn, { streamtype: 'bogus' });
    const error = await openStream(conn, { streamtype: 'error' });
    error.end();
    const stdout = await openStream(conn, { streamtype: 'stdout' });
    stdout.end();
    const [out, status] = await Promise.all([stdout.text, error.text]);
    socket.destroy();
    expect(await bogus.reset).toBe('Aborted, code: CANCEL');
    expect(out).toBe('spdy-host\n');
    expect(JSON.parse(status).status).toBe('Success');
  });

  it('answers malformed frames with GOAWAY PROTOCOL_ERROR and keeps serving', async () => {
    const goaway = async (frame: Buffer) => {
      const u = new URL((await exec({ cmd: ['true'] })).url!);
      const socket = await new Promise<net.Socket>((resolve, reject) => {
        const req = http.request({
          host: u.hostname,
          port: u.port,
          path: u.pathname,
          method: 'POST',
          headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' },
        });
        req.on('upgrade', (_res, sock: net.Socket) => resolve(sock));
        req.on('error', reject);
        req.end();
      });
      const reply = new Promise<Buffer>((resolve) => {
        let got = Buffer.alloc(0);
        socket.on('data', (d: Buffer) => {
          got = Buffer.concat([got, d]);
          if (got.length >= 16) resolve(got.subarray(0, 16));
        });
      });
      socket.write(frame);
      const r = await reply;
      socket.destroy();
      return r;
    };
    const header = (type: number, len: number) => Buffer.from([0x80, 0x03, 0x00, type, 0x00, len >> 16, (len >> 8) & 0xff, len & 0xff]);
    // GOAWAY (type 7), length 8, last good stream 0, status 1 (PROTOCOL_ERROR).
    const protocolError = Buffer.from([0x80, 0x03, 0x00, 0x07, 0x00, 0x00, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 0, 1]);
    // A frame claiming 16 MiB.
    expect(await goaway(header(1, 0xffffff))).toEqual(protocolError);
    // A SYN_STREAM whose header block is not zlib data.
    const body = Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), Buffer.from('not a zlib stream at all')]);
    expect(await goaway(Buffer.concat([header(1, body.length), body]))).toEqual(protocolError);
    // A header block that inflates to 4 MiB from a few KiB (a compression bomb).
    const dictionary = (createRequire(import.meta.url)('spdy-transport/lib/spdy-transport/protocol/spdy/dictionary') as Record<number, Buffer>)[3];
    const big = Buffer.alloc(4 << 20, 'a');
    const block = Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 0x61]), Buffer.from([(big.length >>> 24) & 0xff, (big.length >> 16) & 0xff, (big.length >> 8) & 0xff, big.length & 0xff]), big]);
    const bomb = Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), zlib.deflateSync(block, { dictionary })]);
    expect(bomb.length).toBeLessThan(64 * 1024);
    expect(await goaway(Buffer.concat([header(1, bomb.length), bomb]))).toEqual(protocolError);
    // The server is unharmed.
    const r = await spdyCommand((await exec({ cmd: ['hostname'] })).url!, { stderr: true });
    expect(r.stdout).toBe('spdy-host\n');
  });

  it('forwards ports with data/error stream pairs keyed by requestID', async () => {
    const { url } = await shim.call('PortForward', { podSandboxId: pod, port: [8080] });
    const { conn, protocol, socket } = await spdyUpgrade(url!, ['portforward.k8s.io']);
    expect(protocol).toBe('portforward.k8s.io');
    const roundTrip = async (requestId: string, text: string) => {
      const error = await openStream(conn, { streamtype: 'error', port: '8080', requestid: requestId });
      error.end();
      const data = await openStream(conn, { streamtype: 'data', port: '8080', requestid: requestId });
      const got = new Promise<string>((resolve) => {
        let t = '';
        data.on('data', (d: Buffer) => {
          t += d.toString();
          if (t.length >= text.length) resolve(t);
        });
      });
      data.write(text);
      return got;
    };
    // Two forwarded connections at once over one SPDY session, as kubectl port-forward makes them.
    expect(await Promise.all([roundTrip('0', 'first connection'), roundTrip('1', 'second connection')])).toEqual(['first connection', 'second connection']);
    // A port outside the PortForward request gets a message on the pair's error stream.
    const error = await openStream(conn, { streamtype: 'error', port: '9999', requestid: '2' });
    error.end();
    await openStream(conn, { streamtype: 'data', port: '9999', requestid: '2' });
    const msg = JSON.parse(await error.text) as { message: string };
    expect(msg.message).toBe(`error forwarding port 9999 to pod ${pod}: port 9999 was not in the PortForward request (8080)`);
    // A stream without a valid port is refused.
    const bad = await openStream(conn, { streamtype: 'data', port: '70000', requestid: '3' });
    expect(await bad.reset).toBe('Aborted, code: CANCEL');
    socket.destroy();
  });
});

function cmdline(pid: string): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return ''; // exited meanwhile
  }
}

const canRun = requirePeers('the SPDY process-backend tests', [peers.netns, peers.unshare, peers.referenceCni, nodePty]);

describe.runIf(canRun)('SPDY on the process backend', () => {
  let shim: TestShim;
  let pod: { id: string; config: cri.PodSandboxConfig };
  let cid: string;
  const port = 20000 + (process.pid % 20000);

  beforeAll(async () => {
    ({ shim, pod, cid } = await startEchoPod('kemu-spdy', port));
  });

  afterAll(async () => {
    if (!shim) return;
    for (const p of (await shim.call('ListPodSandbox', {})).items ?? []) await shim.call('RemovePodSandbox', { podSandboxId: p.id });
    await shim.close();
  });

  it('runs a real command with separate stdout, stderr and the exit code', async () => {
    const { url } = await shim.call('Exec', { containerId: cid, cmd: ['sh', '-c', 'echo out; echo err >&2; exit 5'], stdout: true, stderr: true });
    const r = await spdyCommand(url!, { stderr: true });
    expect(r.stdout).toBe('out\n');
    expect(r.stderr).toBe('err\n');
    expect(JSON.parse(r.error).details.causes).toEqual([{ reason: 'ExitCode', message: '5' }]);
  });

  it('kills the command when the client drops the connection', async () => {
    const marker = String(1000 + (process.pid % 8000));
    const { url } = await shim.call('Exec', { containerId: cid, cmd: ['sh', '-c', `echo started; exec sleep ${marker}`], stdout: true, stderr: true });
    const { conn, socket } = await spdyUpgrade(url!, ['v4.channel.k8s.io']);
    (await openStream(conn, { streamtype: 'error' })).end();
    const stdout = await openStream(conn, { streamtype: 'stdout' });
    (await openStream(conn, { streamtype: 'stderr' })).end();
    await new Promise<void>((resolve) => stdout.on('data', (d: Buffer) => d.toString().includes('started') && resolve()));
    const sleeping = () => fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p) && cmdline(p) === `sleep\0${marker}\0`);
    await waitFor(() => (sleeping().length === 1 ? true : undefined), 5000, 'the exec to run sleep');
    socket.destroy();
    await waitFor(() => (sleeping().length === 0 ? true : undefined), 5000, 'the exec to be killed');
  });

  it('runs a tty command on a /dev/pts terminal sized by the resize stream', async () => {
    const { url } = await shim.call('Exec', { containerId: cid, cmd: ['sh', '-c', 'stty size; tty'], tty: true, stdout: true });
    const r = await spdyCommand(url!, { tty: true, size: [132, 43] });
    expect(r.stdout).toMatch(/^43 132\r\n\/dev\/pts\/\d+\r\n$/);
    expect(JSON.parse(r.error).status).toBe('Success');
  });

  it('runs a tty command over v2, which has no resize stream, at the default 80x24', async () => {
    const { url } = await shim.call('Exec', { containerId: cid, cmd: ['sh', '-c', 'stty size'], tty: true, stdout: true });
    const r = await spdyCommand(url!, { protocols: ['v2.channel.k8s.io'] });
    expect(r.protocol).toBe('v2.channel.k8s.io');
    expect(r.stdout).toBe('24 80\r\n');
    expect(r.error).toBe('');
  });

  it('forwards a port to a process listening inside the pod network namespace', async () => {
    // Nothing listens on the host side: the connection can only reach the pod's netns.
    await expect(
      new Promise((resolve, reject) => {
        const s = net.connect(port, '127.0.0.1', () => resolve(s));
        s.on('error', reject);
      }),
    ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    const { url } = await shim.call('PortForward', { podSandboxId: pod.id, port: [port] });
    const { conn, socket } = await spdyUpgrade(url!, ['portforward.k8s.io']);
    (await openStream(conn, { streamtype: 'error', port: String(port), requestid: '0' })).end();
    const data = await openStream(conn, { streamtype: 'data', port: String(port), requestid: '0' });
    const payload = 'x'.repeat(200_000);
    const echoed = new Promise<number>((resolve) => {
      let n = 0;
      data.on('data', (d: Buffer) => {
        n += d.length;
        if (n >= payload.length) resolve(n);
      });
    });
    data.write(payload);
    expect(await echoed).toBe(payload.length);
    socket.destroy();
  });
});
