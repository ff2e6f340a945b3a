// Starts a real etcd on loopback for tests: random free ports, a temporary data directory, and returns once
// the client port answers a health probe (a client opened before that is refused).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ETCD_BIN = process.env.KEMU_ETCD ?? '/usr/bin/etcd';

/** A free loopback TCP port (closed again at once, for a program that will listen on it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface EtcdServer {
  endpoint: string;
  stop(): Promise<void>;
}

export async function startEtcd(): Promise<EtcdServer> {
  const dir = mkdtempSync(join(tmpdir(), 'kemu-etcd-'));
  const client = await freePort();
  const peer = await freePort();
  const endpoint = `http://127.0.0.1:${client}`;
  const proc: ChildProcess = spawn(
    ETCD_BIN,
    [
      '--name', 'default',
      '--data-dir', join(dir, 'data'),
      '--listen-client-urls', endpoint,
      '--advertise-client-urls', endpoint,
      '--listen-peer-urls', `http://127.0.0.1:${peer}`,
      '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
      '--initial-cluster', `default=http://127.0.0.1:${peer}`,
      '--log-level', 'error',
      // Frequent progress notifications let watch caches advance bookmarks between events.
      '--experimental-watch-progress-notify-interval', '200ms',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  proc.stderr?.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  // Ready when the client port answers a health probe.
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`etcd exited during startup: ${stderr.slice(-500)}`);
    try {
      const res = await fetch(`${endpoint}/health`);
      if (res.ok && ((await res.json()) as { health?: string }).health === 'true') break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`etcd did not become ready: ${stderr.slice(-500)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    endpoint,
    async stop() {
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
