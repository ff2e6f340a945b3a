import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CniRuntime } from '@kemu/cni';
import { addNetns, buildPluginBins, delAllNetns, delNetns, inNetns, REFERENCE_BIN_DIR } from '@kemu/cni/testing';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ok = requirePeers('the portmap netns tests', [peers.netns, peers.referenceCni, peers.iptables]);

const tmp = mkdtempSync(join(tmpdir(), 'kemu-pm-'));
let bin = '';
beforeAll(async () => {
  if (ok) bin = await buildPluginBins(join(tmp, 'bin'), ['portmap']);
});
afterAll(() => {
  delAllNetns();
  rmSync(tmp, { recursive: true, force: true });
});

/** Connects from inside `ns` and returns what the server sent, or the error (2 s budget). */
function fetchFrom(ns: string, host: string, port: number): string {
  const r = inNetns(
    ns,
    process.execPath,
    [
      '-e',
      `const s=require('net').connect(${port},${JSON.stringify(host)});let b='';s.setTimeout(2000,()=>{console.log('timeout');process.exit(0)});` +
        "s.on('data',d=>b+=d);s.on('end',()=>console.log(b));s.on('error',e=>console.log('error '+e.code))",
    ],
    5_000,
  );
  return r.stdout.trim();
}

// The same chain (reference bridge + host-local) with the reference portmap and with kemu-portmap last:
// a node-local client reaches the hostPort through 127.0.0.1 (route_localnet + SNAT) and the node address.
describe.runIf(ok)('hostPort from the node itself', () => {
  for (const pm of ['portmap', 'kemu-portmap']) {
    it(`${pm}: 127.0.0.1:hostPort, nodeIP:hostPort and the hairpin answer; DEL removes every rule`, async () => {
      const host = addNetns('host');
      const pod = addNetns('pod');
      let server: ReturnType<typeof spawn> | undefined;
      try {
        spawnSync('ip', ['-n', host.name, 'link', 'set', 'lo', 'up']);
        spawnSync('ip', ['-n', host.name, 'link', 'add', 'node0', 'type', 'veth', 'peer', 'name', 'node0p']);
        spawnSync('ip', ['-n', host.name, 'addr', 'add', '192.168.78.1/24', 'dev', 'node0']);
        spawnSync('ip', ['-n', host.name, 'link', 'set', 'node0', 'up']);
        spawnSync('ip', ['-n', host.name, 'link', 'set', 'node0p', 'up']);
        const confDir = join(tmp, `conf-${pm}`);
        mkdirSync(confDir, { recursive: true });
        writeFileSync(
          join(confDir, '10-pm.conflist'),
          JSON.stringify({
            cniVersion: '1.0.0',
            name: 'pm',
            plugins: [
              {
                type: 'bridge',
                bridge: 'kpm0',
                isGateway: true,
                isDefaultGateway: true,
                ipMasq: true,
                hairpinMode: true,
                ipam: { type: 'host-local', ranges: [[{ subnet: '10.62.0.0/24' }]], dataDir: join(tmp, `ipam-${pm}`) },
              },
              { type: pm, capabilities: { portMappings: true } },
            ],
          }),
        );
        const rt = new CniRuntime({
          confDir,
          binDirs: [bin, REFERENCE_BIN_DIR],
          cacheDir: join(tmp, `cache-${pm}`),
          execWrapper: ['ip', 'netns', 'exec', host.name],
        });
        const list = await rt.loadConfList('pm');
        // As containerd 1.6 passes them: Go field names.
        const att = {
          containerId: `pm-${pm}`,
          netns: pod.path,
          ifname: 'eth0',
          capabilityArgs: { portMappings: [{ HostPort: 18090, ContainerPort: 80, Protocol: 'tcp', HostIP: '' }] },
        };
        await rt.addNetworkList(list, att);
        spawnSync('ip', ['-n', pod.name, 'link', 'set', 'lo', 'up']);
        server = spawn('ip', [
          'netns',
          'exec',
          pod.name,
          process.execPath,
          '-e',
          "require('net').createServer(s=>s.end('hello from pod')).listen(80,'0.0.0.0',()=>console.log('up'))",
        ]);
        await new Promise<void>((res, rej) => {
          server!.stdout!.once('data', () => res());
          server!.once('exit', (code) => rej(new Error(`server exited ${code}`)));
        });
        expect(inNetns(host.name, 'cat', ['/proc/sys/net/ipv4/conf/kpm0/route_localnet']).stdout.trim()).toBe('1');
        expect(fetchFrom(host.name, '127.0.0.1', 18090)).toBe('hello from pod');
        expect(fetchFrom(host.name, '192.168.78.1', 18090)).toBe('hello from pod');
        // Hairpin: the pod reaches itself through the node's hostPort; with the bridge's ipMasq chain in
        // POSTROUTING too, the hostPort's masquerade must come first (the reference prepends its own).
        expect(fetchFrom(pod.name, '192.168.78.1', 18090)).toBe('hello from pod');

        await rt.delNetworkList(list, att);
        const nat = inNetns(host.name, 'iptables', ['-w', '-t', 'nat', '-S']).stdout;
        expect(nat).not.toMatch(/KEMU-DN-|KEMU-SN-|CNI-DN-/);
        expect(readdirSync(join(tmp, `ipam-${pm}`, 'pm')).filter((f) => f.startsWith('10.'))).toEqual([]);
      } finally {
        server?.kill();
        delNetns(pod.name);
        delNetns(host.name);
      }
    });
  }
});
