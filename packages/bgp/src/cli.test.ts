import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { randomPort, until } from './bird.test-util.js';
import { BgpSpeaker } from './speaker.js';

const cli = path.join(path.dirname(fileURLToPath(import.meta.url)), 'cli.ts');
const nodeArgs = ['--conditions=@kemu/source', '--import', 'tsx', cli];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-bgp-cli-'));

const children: ChildProcess[] = [];
const speakers: BgpSpeaker[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await Promise.all(speakers.splice(0).map((s) => s.destroy()));
});

function run(args: string[]): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [...nodeArgs, ...args], { encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stderr: r.stderr };
}

function readRib(file: string): any[] {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
}

async function scenario(args: (port: number, ribOut: string) => string[], name: string) {
  const port = randomPort();
  const ribOut = path.join(tmp, `${name}.json`);
  const peer = new BgpSpeaker({
    routerId: '127.0.0.42',
    as: 65042,
    listen: { address: '127.0.0.42', port },
    neighbors: [{ address: '127.0.0.41', port, as: 64512 }],
    connectRetryTime: 1,
  });
  speakers.push(peer);
  peer.advertise('10.42.0.0/24');
  await peer.start();
  let stderr = '';
  const child = spawn(process.execPath, [...nodeArgs, ...args(port, ribOut)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  children.push(child);
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const dbg = () => stderr;
  await until(
    () => readRib(ribOut).some((e) => e.prefix === '10.42.0.0/24'),
    'rib-out with the learned route',
    20_000,
    dbg,
  );
  expect(readRib(ribOut)).toEqual([
    { prefix: '10.41.0.0/24', nextHop: '127.0.0.41', asPath: [], peer: null, origin: 'IGP' },
    { prefix: '10.42.0.0/24', nextHop: '127.0.0.42', asPath: [65042], peer: '127.0.0.42', origin: 'IGP' },
  ]);
  await until(() => peer.lookup('10.41.0.0/24') !== undefined, 'route at the peer', 10_000, dbg);
  expect(peer.lookup('10.41.0.0/24')).toMatchObject({ nextHop: '127.0.0.41', asPath: [64512] });
  // A change on the peer rewrites the file.
  peer.withdraw('10.42.0.0/24');
  await until(() => readRib(ribOut).length === 1, 'rib-out rewritten after a withdrawal', 10_000, dbg);
  child.kill('SIGTERM');
  expect(await exited).toBe(0);
  await until(
    () => peer.peer('127.0.0.41')?.lastError?.direction === 'received',
    'Cease at the peer',
    5000,
    dbg,
  );
  expect(peer.peer('127.0.0.41')!.lastError).toMatchObject({ code: 6, subcode: 2 });
  expect(fs.readdirSync(tmp).filter((f) => f.endsWith('.tmp'))).toEqual([]);
}

describe('kemu-bgp command', () => {
  it('flags: peers, advertises, writes --rib-out on every change, Cease on SIGTERM', async () => {
    await scenario(
      (port, ribOut) => [
        '--router-id',
        '127.0.0.41',
        '--listen',
        `127.0.0.41:${port}`,
        '--peer',
        `127.0.0.42:${port}:65042`,
        '--advertise',
        '10.41.0.0/24',
        '--rib-out',
        ribOut,
        '--connect-retry',
        '1',
      ],
      'flags',
    );
  });

  it('--config YAML with the same settings', async () => {
    await scenario((port, ribOut) => {
      const f = path.join(tmp, 'bgp.yaml');
      fs.writeFileSync(
        f,
        [
          'routerId: 127.0.0.41',
          'as: 64512',
          `listen: 127.0.0.41:${port}`,
          'connectRetryTime: 1',
          'peers:',
          `  - {address: 127.0.0.42, port: ${port}, as: 65042}`,
          'advertise: [10.41.0.0/24]',
          `ribOut: ${ribOut}`,
        ].join('\n'),
      );
      return ['--config', f];
    }, 'yaml');
  });

  it('bad input: one line naming the flag or field and the fix, exit status 2', async () => {
    const cases: [string[], RegExp][] = [
      [['--listen', '127.0.0.1:1179'], /^kemu-bgp: routerId: missing: pass --router-id ID/],
      [
        ['--router-id', '10.0.0.1', '--peer', '127.0.0.1:179'],
        /^kemu-bgp: --peer: "127.0.0.1:179" is not ADDR:PORT:AS/,
      ],
      [
        ['--router-id', '10.0.0.1', '--peer', 'x:179:1'],
        /^kemu-bgp: --peer: "x" in "x:179:1" is not an IP address/,
      ],
      [
        ['--router-id', '10.0.0.1', '--advertise', '10.0.0.1/24'],
        /^kemu-bgp: advertise\[0\]: "10.0.0.1\/24" is not a network in CIDR form/,
      ],
      [
        ['--router-id', '10.0.0.1', '--rr-client', '127.0.0.1:179:64512'],
        /^kemu-bgp: rrClients: route-reflector clients need/,
      ],
      [
        ['--router-id', '10.0.0.1', '--hold-time', '2'],
        /^kemu-bgp: holdTime: must be 0 or at least 3 seconds/,
      ],
      [['--router-id', '300.0.0.1'], /^kemu-bgp: routerId: must be a non-zero dotted quad/],
      [['--config', path.join(tmp, 'nope.yaml')], /^kemu-bgp: --config: cannot read .*nope.yaml: ENOENT/],
    ];
    const bad = path.join(tmp, 'bad.yaml');
    fs.writeFileSync(bad, 'routerId: 10.0.0.1\npeers:\n  - {address: 10.0.0.2, asn: 65000}\n');
    cases.push([['--config', bad], /^kemu-bgp: peers\[0\].asn: unknown field/]);
    // In process: the same main() the binary runs, without paying for a process per case.
    const { main } = await import('./cli.js');
    for (const [args, re] of cases) {
      let stderr = '';
      const orig = process.stderr.write.bind(process.stderr);
      process.stderr.write = ((c: string) => {
        stderr += c;
        return true;
      }) as typeof process.stderr.write;
      let status: number;
      try {
        status = await main(args);
      } finally {
        process.stderr.write = orig;
      }
      const r = { stderr, status };
      expect(r.stderr).toMatch(re);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.status).toBe(2);
    }
  });

  it('a listen address in use is reported in one line', async () => {
    const port = randomPort();
    const s = new BgpSpeaker({ routerId: '127.0.0.43', as: 1, listen: { address: '127.0.0.43', port } });
    speakers.push(s);
    await s.start();
    const r = run(['--router-id', '127.0.0.44', '--listen', `127.0.0.43:${port}`]);
    expect(r.stderr).toMatch(/^kemu-bgp: cannot listen on 127.0.0.43:\d+: EADDRINUSE \(address in use/);
    expect(r.status).toBe(1);
  });
});
