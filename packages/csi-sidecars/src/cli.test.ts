// The commands refuse bad flags with one line naming the fix, and no stack trace.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');

function run(bin: string, args: string[], env: Record<string, string> = {}): { status: number | null; stderr: string } {
  const r = spawnSync(
    process.execPath,
    ['--conditions=@kemu/source', '--import', 'tsx', path.join(here, bin), ...args],
    {
      cwd: repo,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, ...env },
    },
  );
  return { status: r.status, stderr: r.stderr };
}

describe('sidecar commands', () => {
  it.each([
    [
      'provisioner-cli.ts',
      ['--store', 'bogus', '--driver-name', 'x'],
      'kemu-external-provisioner: --store "bogus" is not understood; use etcd://host:port, file:<dir> or memory',
    ],
    [
      'provisioner-cli.ts',
      ['--volume-name-uuid-length', '-5'],
      'kemu-external-provisioner: --volume-name-uuid-length must be -1 or more',
    ],
    [
      'attacher-cli.ts',
      ['--timeout', '10x'],
      `error: option '--timeout <duration>' argument '10x' is invalid. invalid duration "10x" (use e.g. 300ms, 10s, 5m)`,
    ],
    [
      'resizer-cli.ts',
      ['--workers', '0'],
      `error: option '--workers <n>' argument '0' is invalid. expected a positive whole number, got "0"`,
    ],
    [
      'registrar-cli.ts',
      [],
      'kemu-node-driver-registrar: --kubelet-registration-path is required (the driver socket path on the host)',
    ],
    [
      'attacher-cli.ts',
      ['--grpc-client', 'nope'],
      `error: option '--grpc-client <kind>' argument 'nope' is invalid. Allowed choices are http2, grpc-js.`,
    ],
    [
      'registrar-cli.ts',
      ['--grpc-client', 'nope'],
      `error: option '--grpc-client <kind>' argument 'nope' is invalid. Allowed choices are http2, grpc-js.`,
    ],
  ])('%s %j', (bin, args, message) => {
    const r = run(bin, args);
    expect(r.status).not.toBe(0);
    expect(r.stderr.trim()).toBe(message);
  });

  it('names the fix for an unknown KEMU_GRPC_CLIENT', () => {
    const r = run('attacher-cli.ts', ['--driver-name', 'x'], { KEMU_GRPC_CLIENT: 'bogus' });
    expect(r.status).not.toBe(0);
    expect(r.stderr.trim()).toBe('kemu-external-attacher: unknown gRPC client "bogus": use grpc-js or http2 (KEMU_GRPC_CLIENT)');
  });
});
