// WebSocket output waits for the client's streams: client-go registers its stdout/stderr/error streams only
// after its reader starts, and drops frames for streams it does not know yet. The server holds output until
// the client speaks or a settle time passes, and loses nothing either way.
import { PassThrough } from 'node:stream';
import WebSocket from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import type { CriRuntime } from './runtime.js';
import { StreamingServer } from './streaming-server.js';
import type { StreamSession } from './types.js';

/** A runtime whose exec writes its output at once and exits, as a simulated command does. */
function instantRuntime(started: () => void): CriRuntime {
  return {
    openExec(): StreamSession {
      const stdout = new PassThrough();
      stdout.end('head of the archive');
      started();
      return { stdout, exit: Promise.resolve(0), kill() {} };
    },
  } as unknown as CriRuntime;
}

interface Frame {
  channel: number;
  data: string;
}

function connect(url: string): { ws: WebSocket; frames: Frame[]; closed: Promise<void> } {
  const ws = new WebSocket(url.replace(/^http/, 'ws'), ['v5.channel.k8s.io']);
  const frames: Frame[] = [];
  ws.on('message', (raw: Buffer) => frames.push({ channel: raw[0], data: raw.subarray(1).toString() }));
  const closed = new Promise<void>((resolve) => ws.on('close', () => resolve()));
  return { ws, frames, closed };
}

describe('WebSocket output and a client still setting up its streams', () => {
  let server: StreamingServer | undefined;
  afterEach(() => server?.close());

  it('holds every frame until the client speaks, then delivers them all in order', async () => {
    let ran!: () => void;
    const commandRan = new Promise<void>((r) => (ran = r));
    server = new StreamingServer(instantRuntime(() => ran()), { clientSettleMs: 60_000 });
    await server.start();
    const url = server.register('exec', {
      kind: 'exec',
      containerId: 'c',
      cmd: ['tar', 'cf', '-', '/tmp/x'],
      opts: { tty: false, stdin: true, stdout: true, stderr: false },
    });
    const c = connect(url);
    await new Promise((r) => c.ws.once('open', r));
    await commandRan;
    await new Promise((r) => setTimeout(r, 50)); // the server's chance to send, were it not holding
    expect(c.frames).toEqual([]);
    c.ws.send(Buffer.from([255, 0])); // v5: the client is done writing stdin
    await c.closed;
    expect(c.frames.map((f) => f.channel)).toEqual([1, 1, 3]);
    expect(c.frames[1].data).toBe('head of the archive');
    expect(JSON.parse(c.frames[2].data)).toEqual({ metadata: {}, status: 'Success' });
  });

  it('releases the output after the settle time for a client that never writes', async () => {
    server = new StreamingServer(instantRuntime(() => {}), { clientSettleMs: 20 });
    await server.start();
    const url = server.register('exec', {
      kind: 'exec',
      containerId: 'c',
      cmd: ['cat', '/tmp/x'],
      opts: { tty: false, stdin: false, stdout: true, stderr: false },
    });
    const c = connect(url);
    await c.closed;
    expect(c.frames.map((f) => f.channel)).toEqual([1, 1, 3]);
    expect(c.frames[1].data).toBe('head of the archive');
  });
});
