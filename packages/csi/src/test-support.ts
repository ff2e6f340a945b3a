// Helpers shared by this package's tests (not part of the public API).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { csi, grpc, unaryCall } from '@kemu/proto';
import { expect } from 'vitest';

export interface SanityClients {
  identity: csi.IdentityClient;
  controller: csi.ControllerClient;
  node: csi.NodeClient;
  group: csi.GroupControllerClient;
  close(): void;
}

export function connect(socketPath: string): SanityClients {
  const addr = `unix://${socketPath}`;
  const creds = grpc.credentials.createInsecure();
  const identity = new csi.IdentityClient(addr, creds);
  const controller = new csi.ControllerClient(addr, creds);
  const node = new csi.NodeClient(addr, creds);
  const group = new csi.GroupControllerClient(addr, creds);
  return {
    identity,
    controller,
    node,
    group,
    close() {
      for (const c of [identity, controller, node, group]) c.close();
    },
  };
}

/** Promise of a unary call; `call(c.controller, 'CreateVolume', {...})`. */
export const call = unaryCall;

/** Asserts that a call fails with the given gRPC status code and returns the error's details. */
export async function expectCode(p: Promise<unknown>, code: number): Promise<string> {
  try {
    await p;
  } catch (e) {
    const err = e as grpc.ServiceError;
    expect(
      { code: err.code, details: err.details },
      `expected status ${grpc.status[code]}, got ${grpc.status[err.code]}: ${err.details}`,
    ).toMatchObject({ code });
    return err.details;
  }
  throw new Error(`expected the call to fail with ${grpc.status[code]}, but it succeeded`);
}

export function tmpDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `kemu-csi-${prefix}-`));
}

export const mountCap = (
  mode = csi.VolumeCapability_AccessMode_Mode.SINGLE_NODE_WRITER,
): csi.VolumeCapability => ({
  accessMode: { mode },
  mount: {},
});
export const blockCap = (
  mode = csi.VolumeCapability_AccessMode_Mode.SINGLE_NODE_WRITER,
): csi.VolumeCapability => ({
  accessMode: { mode },
  block: {},
});

let n = 0;
export const unique = (prefix: string) =>
  `${prefix}-${process.pid}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

export const MiB = 2 ** 20;

const CLI = fileURLToPath(new URL('./cli.ts', import.meta.url));

export interface CliProcess {
  child: ChildProcess;
  stderr(): string;
  exited: Promise<number | null>;
}

/** Runs the kemu-csi command from source (the same code the built bin runs). */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): CliProcess {
  const child = spawn(process.execPath, ['--conditions=@kemu/source', '--import', 'tsx', CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stderr: () => err, exited };
}

/** Waits until the driver answers Probe on its socket. */
export async function waitReady(p: CliProcess, socketPath: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (p.child.exitCode !== null) throw new Error(`kemu-csi exited early: ${p.stderr()}`);
    if (existsSync(socketPath)) {
      const c = connect(socketPath);
      try {
        const r = await unaryCall(c.identity, 'Probe', {}, { timeoutMs: 1000 });
        if (r.ready?.value) return;
      } catch {
        // not listening yet
      } finally {
        c.close();
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`kemu-csi did not become ready: ${p.stderr()}`);
}
