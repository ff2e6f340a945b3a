// Real processes for the restart tests: etcd as the shared store, the kemu-csi driver, and the sidecar
// commands run from source (tsx), each on loopback or a unix socket in a temporary directory.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@kemu/test-peers';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const ETCD = process.env.KEMU_ETCD ?? '/usr/bin/etcd';

export interface Proc {
  proc: ChildProcess;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

function track(proc: ChildProcess): Proc {
  let out = '';
  proc.stdout?.on('data', (d) => {
    out += d;
  });
  proc.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<void>((r) => {
    if (proc.exitCode !== null || proc.signalCode !== null) r();
    else proc.once('exit', () => r());
  });
  return {
    proc,
    output: () => out,
    async kill(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited;
    },
  };
}

export async function startEtcd(): Promise<{ endpoint: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-etcd-'));
  const client = await freePort();
  const peer = await freePort();
  const endpoint = `http://127.0.0.1:${client}`;
  // biome-ignore format: flag pairs
  const p = track(spawn(ETCD, [
    '--name', 'default', '--data-dir', path.join(dir, 'data'),
    '--listen-client-urls', endpoint, '--advertise-client-urls', endpoint,
    '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
    '--initial-cluster', `default=http://127.0.0.1:${peer}`, '--log-level', 'error',
    '--experimental-watch-progress-notify-interval', '200ms',
  ], { stdio: ['ignore', 'pipe', 'pipe'] }));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (p.proc.exitCode !== null) throw new Error(`etcd exited during startup: ${p.output().slice(-500)}`);
    try {
      const res = await fetch(`${endpoint}/health`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('etcd did not become healthy in 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    endpoint,
    async stop() {
      await p.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A TypeScript entry point of the repository run as its own node process. */
export function runSource(entry: string, args: string[]): Proc {
  return track(
    spawn(
      process.execPath,
      ['--conditions=@kemu/source', '--import', 'tsx', path.join(REPO, entry), ...args],
      {
        cwd: REPO,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    ),
  );
}
