// The kemu-csi command: CSI_ENDPOINT, socket mode, plugin registration, one-line errors, clean shutdown.
import { spawnSync } from 'node:child_process';
import { existsSync, promises as fs, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { csi, grpc, pluginregistration, unaryCall } from '@kemu/proto';
import { describe, expect, it, vi } from 'vitest';
import { call, connect, runCli, tmpDir, waitReady } from './test-support.js';

// these start real processes; a crowded CI machine can take tens of seconds for that
vi.setConfig({ testTimeout: 180_000 });

describe('kemu-csi', () => {
  it('honours CSI_ENDPOINT, makes the socket 0660, serves registration, and removes the socket on SIGTERM', async () => {
    const root = tmpDir('cli');
    const sock = path.join(root, 'plugins', 'kemu', 'csi.sock');
    const registry = path.join(root, 'plugins_registry');
    const p = runCli(
      [
        '--node-id',
        'cli-node',
        '--backend',
        'sim',
        '--state-dir',
        path.join(root, 'state'),
        '--registration-dir',
        registry,
        '--kubelet-registration-path',
        '/var/lib/kubelet/plugins/kemu/csi.sock',
        '--max-volumes-per-node',
        '7',
        '--topology-key',
        'zone',
      ],
      { CSI_ENDPOINT: `unix://${sock}` },
    );
    try {
      await waitReady(p, sock);
      expect(statSync(sock).mode & 0o777).toBe(0o660);
      const c = connect(sock);
      expect(await call(c.node, 'NodeGetInfo', {})).toEqual({
        nodeId: 'cli-node',
        maxVolumesPerNode: 7,
        accessibleTopology: { segments: { zone: 'cli-node' } },
      });
      c.close();

      const regSock = path.join(registry, 'kemu.csi.k8s.io-reg.sock');
      expect(statSync(regSock).mode & 0o777).toBe(0o660);
      const reg = new pluginregistration.RegistrationClient(
        `unix://${regSock}`,
        grpc.credentials.createInsecure(),
      );
      expect(await unaryCall(reg, 'GetInfo', {})).toEqual({
        type: 'CSIPlugin',
        name: 'kemu.csi.k8s.io',
        endpoint: '/var/lib/kubelet/plugins/kemu/csi.sock',
        supportedVersions: ['1.0.0'],
      });
      expect(
        await unaryCall(reg, 'NotifyRegistrationStatus', {
          pluginRegistered: false,
          error: 'version mismatch',
        }),
      ).toEqual({});
      reg.close();

      p.child.kill('SIGTERM');
      expect(await p.exited).toBe(0);
      expect(existsSync(sock)).toBe(false);
      expect(p.stderr()).toMatch(/serving kemu\.csi\.k8s\.io \(sim backend, node cli-node\)/);
    } finally {
      p.child.kill('SIGKILL');
      await fs.rm(root, { recursive: true, force: true });
    }
  });

  it('advertises no alpha capability by default, and each one only with its --enable flag, listed in --help', async () => {
    const C = csi.ControllerServiceCapability_RPC_Type;
    const N = csi.NodeServiceCapability_RPC_Type;
    const root = tmpDir('cli-alpha');
    const caps = async (name: string, flags: string[]) => {
      const sock = path.join(root, `${name}.sock`);
      const p = runCli(['--endpoint', sock, '--node-id', 'n', '--backend', 'sim', ...flags]);
      try {
        await waitReady(p, sock);
        const c = connect(sock);
        const controller = (await call(c.controller, 'ControllerGetCapabilities', {})).capabilities!.map((x) => x.rpc!.type!);
        const node = (await call(c.node, 'NodeGetCapabilities', {})).capabilities!.map((x) => x.rpc!.type!);
        const getSnapshot = await call(c.controller, 'GetSnapshot', { snapshotId: 'x' }).catch((e: { code: number; details: string }) => e);
        c.close();
        return { controller, node, getSnapshot };
      } finally {
        p.child.kill('SIGKILL');
      }
    };
    try {
      const alpha = [C.VOLUME_CONDITION, C.GET_VOLUME, C.SINGLE_NODE_MULTI_WRITER, C.GET_SNAPSHOT];
      const plain = await caps('plain', []);
      expect(plain.controller.filter((t) => alpha.includes(t))).toEqual([]);
      // every value advertised by default was already in CSI spec 1.9 (MODIFY_VOLUME, 14, is the newest)
      expect(Math.max(...plain.controller)).toBe(C.MODIFY_VOLUME);
      expect(plain.node.filter((t) => t === N.VOLUME_CONDITION || t === N.SINGLE_NODE_MULTI_WRITER)).toEqual([]);
      expect(plain.getSnapshot).toMatchObject({ code: 12, details: expect.stringContaining('--enable-get-snapshot') });

      const one = await caps('one', ['--enable-get-snapshot']);
      expect(one.controller.filter((t) => alpha.includes(t))).toEqual([C.GET_SNAPSHOT]);
      expect(one.getSnapshot).toMatchObject({ code: 5 }); // served now: the snapshot does not exist

      const all = await caps('all', [
        '--enable-get-snapshot',
        '--enable-get-volume',
        '--enable-volume-condition',
        '--enable-single-node-multi-writer',
      ]);
      expect(all.controller.filter((t) => alpha.includes(t)).sort()).toEqual([...alpha].sort());
      expect(all.node.filter((t) => t === N.VOLUME_CONDITION || t === N.SINGLE_NODE_MULTI_WRITER).sort()).toEqual(
        [N.VOLUME_CONDITION, N.SINGLE_NODE_MULTI_WRITER].sort(),
      );

      const help = spawnSync(process.execPath, ['--conditions=@kemu/source', '--import', 'tsx', fileURLToPath(new URL('./cli.ts', import.meta.url)), '--help'], {
        encoding: 'utf8',
      });
      expect(help.status).toBe(0);
      for (const flag of ['--enable-get-snapshot', '--enable-get-volume', '--enable-volume-condition', '--enable-single-node-multi-writer']) {
        expect(help.stdout).toContain(flag);
      }
      expect(help.stdout).toMatch(/Alpha capabilities: CSI v1\.12 marks GET_SNAPSHOT/);
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });

  it('injects sim latency and failures from flags', async () => {
    const root = tmpDir('cli-sim');
    const sock = path.join(root, 'csi.sock');
    const p = runCli([
      '--endpoint',
      sock,
      '--node-id',
      'n',
      '--backend',
      'sim',
      '--state-dir',
      root,
      '--sim-fail',
      'createVolume=RESOURCE_EXHAUSTED:1',
      '--sim-latency',
      'deleteVolume=1500',
      '-v',
    ]);
    try {
      await waitReady(p, sock);
      const c = connect(sock);
      const req = { name: 'v', volumeCapabilities: [{ mount: {}, accessMode: { mode: 1 } }] };
      await expect(call(c.controller, 'CreateVolume', req)).rejects.toMatchObject({
        code: 8,
        details: 'injected failure in createVolume',
      });
      const v = await call(c.controller, 'CreateVolume', req);
      // whichever delete arrives second finds the first still in flight (1.5 s) and is ABORTED
      const first = call(c.controller, 'DeleteVolume', { volumeId: v.volume!.volumeId });
      await new Promise((r) => setTimeout(r, 200));
      const second = call(c.controller, 'DeleteVolume', { volumeId: v.volume!.volumeId });
      const outcomes = await Promise.allSettled([first, second]);
      expect(
        outcomes.map((o) => (o.status === 'fulfilled' ? 'OK' : (o.reason as { code: number }).code)).sort(),
      ).toEqual([10, 'OK']);
      c.close();
      expect(p.stderr()).toMatch(
        /csi\.v1\.Controller\/CreateVolume name="v" RESOURCE_EXHAUSTED [\d.]+ms: injected failure/,
      );
      expect(p.stderr()).toMatch(/csi\.v1\.Controller\/DeleteVolume volumeId="[^"]+" ABORTED/);
    } finally {
      p.child.kill('SIGKILL');
      await p.exited;
      await fs.rm(root, { recursive: true, force: true });
    }
  });

  it('refuses a second driver on the same state directory, and takes over after a SIGKILL', async () => {
    const root = tmpDir('cli-lock');
    const args = (sock: string) => [
      '--endpoint',
      sock,
      '--node-id',
      'n',
      '--backend',
      'hostpath',
      '--state-dir',
      path.join(root, 'state'),
      '--path-root',
      root,
    ];
    const first = runCli(args(path.join(root, 'a.sock')));
    try {
      await waitReady(first, path.join(root, 'a.sock'));
      const second = runCli(args(path.join(root, 'b.sock')));
      expect(await second.exited).toBe(2);
      expect(second.stderr().trim()).toBe(
        `kemu-csi: cannot start: state directory ${path.join(root, 'state')} is in use by kemu-csi pid ${first.child.pid}; stop it or use another --state-dir`,
      );
      first.child.kill('SIGKILL');
      await first.exited;
      const third = runCli(args(path.join(root, 'c.sock')));
      await waitReady(third, path.join(root, 'c.sock'));
      third.child.kill('SIGTERM');
      expect(await third.exited).toBe(0);
      expect(existsSync(path.join(root, 'state', 'kemu-csi.pid'))).toBe(false);
    } finally {
      first.child.kill('SIGKILL');
      await fs.rm(root, { recursive: true, force: true });
    }
  });

  it.each([
    [
      ['--node-id', 'n', '--backend', 'sim'],
      /^kemu-csi: no endpoint: pass --endpoint unix:\/\/\/path\/csi\.sock or set CSI_ENDPOINT$/,
    ],
    [
      ['--endpoint', 'unix:///tmp/x.sock', '--node-id', 'n', '--capacity', '10apples'],
      /invalid size "10apples": use a number of bytes or a quantity like 512Mi/,
    ],
    [
      ['--endpoint', 'unix:///tmp/x.sock', '--node-id', 'n', '--backend', 'nfs'],
      /argument 'nfs' is invalid\. Allowed choices are hostpath, sim/,
    ],
    [['--endpoint', 'unix:///tmp/x.sock', '--node-id', '../n'], /--node-id "\.\.\/n" must not contain "\/"/],
    [
      ['--endpoint', 'unix:///tmp/x.sock', '--node-id', 'n', '--drivername', '-bad-'],
      /^kemu-csi: driver name "-bad-" must be at most 63 characters/,
    ],
    [
      ['--endpoint', 'unix:///tmp/x.sock', '--node-id', 'n', '--sim-fail', 'explode'],
      /--sim-fail "explode": use op=CODE\[:times\]/,
    ],
    [
      [
        '--endpoint',
        'tcp://1.2.3.4:5',
        '--node-id',
        'n',
        '--backend',
        'sim',
        '--state-dir',
        '/tmp/kemu-csi-cli-tcp',
      ],
      /cannot start: endpoint "tcp:\/\/1\.2\.3\.4:5" is not a unix socket/,
    ],
  ])('refuses %j with a one-line error', async (args, msg) => {
    const p = runCli(args, { CSI_ENDPOINT: '' });
    expect(await p.exited).toBe(2);
    const err = p.stderr().trim();
    expect(err.split('\n')).toHaveLength(1);
    expect(err).toMatch(msg);
    await fs.rm('/tmp/kemu-csi-cli-tcp', { recursive: true, force: true });
  });
});
