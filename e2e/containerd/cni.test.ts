// kemu's CNI plugins as containerd 1.6's CRI plugin runs them: pods with and without hostPorts start, get the
// addresses and routes the reference plugins give, reach each other and are reached through their hostPort
// from the node (its address and 127.0.0.1), and leave nothing behind (IPs, NAT rules, veths, netns files).
// The same scenario runs with the reference plugins, with kemu's under their documented kemu-* names, and
// with kemu's installed under the reference names (`kemu-cni install --names reference`).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cri } from '@kemu/proto';
import { peers, program, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPauseImage, cleanupDir, type Containerd, podNetns, startContainerd } from './harness.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PLUGINS = ['bridge', 'host-local', 'portmap', 'loopback'];

const ok = requirePeers('the containerd CNI e2e test', [
  peers.netns,
  peers.referenceCni,
  peers.iptables,
  peers.nft,
  peers.nsenter,
  peers.ping,
  peers.busybox,
  program('containerd', 'containerd'),
  program('ctr', 'containerd'),
  program('runc', 'runc'),
]);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-ctd-'));
const nsName = `kemu-test-${process.pid}-ctdnode`;
let kemuBin = '';
let pauseArchive = '';

/** Builds a plugin package (tsup) when its executable is missing or older than the sources it bundles. */
function ensurePluginBuilt(p: string): void {
  const dir = path.join(REPO, 'packages', `cni-${p}`);
  const bin = path.join(dir, 'dist', 'bin.cjs');
  const newest = (d: string): number =>
    Math.max(0, ...readdirSync(d, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(path.join(d, e.name)) : statSync(path.join(d, e.name)).mtimeMs)));
  const srcs = [path.join(dir, 'src'), path.join(REPO, 'packages', 'cni', 'src'), path.join(REPO, 'packages', 'cni-host-local', 'src')];
  if (existsSync(bin) && statSync(bin).mtimeMs >= Math.max(...srcs.map(newest))) return;
  const r = spawnSync('npx', ['tsup'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`build of cni-${p} failed:\n${r.stdout}${r.stderr}`);
}

function kemuCni(args: string[]): void {
  const r = spawnSync(
    process.execPath,
    ['--conditions=@kemu/source', '--import', 'tsx', path.join(REPO, 'packages', 'cni', 'src', 'install.ts'), ...args],
    { cwd: REPO, encoding: 'utf8', timeout: 60_000 },
  );
  if (r.status !== 0) throw new Error(`kemu-cni ${args.join(' ')}: ${r.stderr}`);
}

function inNs(nsPath: string, cmd: string, args: string[], timeoutMs = 10_000) {
  return spawnSync('nsenter', [`--net=${nsPath}`, cmd, ...args], { encoding: 'utf8', timeout: timeoutMs });
}
const NODE_NS = `/var/run/netns/${nsName}`;

/** What a TCP connect from inside `nsPath` to host:port reads, or why it failed (3 s budget). */
function fetchFrom(nsPath: string, host: string, port: number): string {
  const js =
    `const s=require('net').connect(${port},${JSON.stringify(host)});let b='';s.setTimeout(3000,()=>{console.log('timeout');process.exit(0)});` +
    "s.on('data',d=>b+=d);s.on('end',()=>console.log(b));s.on('error',e=>console.log('error '+e.code))";
  return inNs(nsPath, process.execPath, ['-e', js]).stdout.trim();
}

async function serveIn(nsPath: string, port: number, text: string): Promise<ChildProcess> {
  const p = spawn('nsenter', [
    `--net=${nsPath}`,
    process.execPath,
    '-e',
    `require('net').createServer(s=>s.end(${JSON.stringify(text)})).listen(${port},'0.0.0.0',()=>console.log('up'))`,
  ]);
  await new Promise<void>((res, rej) => {
    p.stdout!.once('data', () => res());
    p.once('exit', (code) => rej(new Error(`server in ${nsPath} exited ${code}`)));
  });
  return p;
}

const routesOf = (nsPath: string) =>
  (JSON.parse(inNs(nsPath, 'ip', ['-j', '-4', 'route']).stdout) as { dst: string; gateway?: string; dev: string; prefsrc?: string }[]).map(
    (r) => ({ dst: r.dst, gateway: r.gateway, dev: r.dev }),
  );

beforeAll(() => {
  if (!ok) return;
  for (const p of PLUGINS) ensurePluginBuilt(p);
  kemuBin = path.join(tmp, 'kemu-bin');
  kemuCni(['install', '--bin-dir', kemuBin]);
  // containerd's CRI plugin runs its own loopback network with "type": "loopback" from the same bin dir.
  kemuCni(['install', '--bin-dir', kemuBin, '--names', 'reference']);
  pauseArchive = buildPauseImage(tmp);
  spawnSync('ip', ['netns', 'add', nsName]);
  spawnSync('ip', ['-n', nsName, 'link', 'set', 'lo', 'up']);
  // The node's own address (a veth stands in for the uplink).
  spawnSync('ip', ['-n', nsName, 'link', 'add', 'node0', 'type', 'veth', 'peer', 'name', 'node0p']);
  spawnSync('ip', ['-n', nsName, 'addr', 'add', '192.168.79.1/24', 'dev', 'node0']);
  spawnSync('ip', ['-n', nsName, 'link', 'set', 'node0', 'up']);
  spawnSync('ip', ['-n', nsName, 'link', 'set', 'node0p', 'up']);
  // Bridged frames skip iptables here (no br_netfilter on the bridge): a pod's reply to another pod that came
  // through a hostPort reaches the node's conntrack only if the hostPort masqueraded the pod network.
  spawnSync('ip', ['netns', 'exec', nsName, 'sh', '-c', 'echo 0 > /proc/sys/net/bridge/bridge-nf-call-iptables || true']);
}, 180_000);

afterAll(() => {
  spawnSync('ip', ['netns', 'del', nsName]);
  cleanupDir(tmp);
});

const variants = [
  { name: 'reference plugins', bin: () => '/usr/lib/cni', types: { bridge: 'bridge', ipam: 'host-local', portmap: 'portmap' } },
  { name: 'kemu plugins, kemu-* names', bin: () => kemuBin, types: { bridge: 'kemu-bridge', ipam: 'kemu-host-local', portmap: 'kemu-portmap' } },
  { name: 'kemu plugins under the reference names', bin: () => kemuBin, types: { bridge: 'bridge', ipam: 'host-local', portmap: 'portmap' } },
];

describe.runIf(ok)('kemu CNI plugins under containerd 1.6 (CRI)', () => {
  variants.forEach((v, i) => {
    it(`${v.name}: pods start, reach each other and their hostPort, and are cleaned up`, async () => {
      const dir = path.join(tmp, `v${i}`);
      const confDir = path.join(dir, 'net.d');
      const dataDir = path.join(dir, 'ipam');
      mkdirSync(confDir, { recursive: true });
      writeFileSync(
        path.join(confDir, '10-kemu.conflist'),
        JSON.stringify({
          cniVersion: '1.0.0',
          name: 'kemu',
          plugins: [
            {
              type: v.types.bridge,
              bridge: 'kcd0',
              isGateway: true,
              isDefaultGateway: true,
              ipMasq: true,
              hairpinMode: true,
              ipam: { type: v.types.ipam, ranges: [[{ subnet: '10.63.0.0/24' }]], dataDir },
            },
            { type: v.types.portmap, capabilities: { portMappings: true } },
          ],
        }),
      );
      let ctd: Containerd | undefined;
      const servers: ChildProcess[] = [];
      try {
        ctd = await startContainerd({
          dir: path.join(dir, 'containerd'),
          netns: nsName,
          cniConfDir: confDir,
          cniBinDir: v.bin(),
          // The executables do the work themselves: a `kemu-cni daemon` elsewhere on the machine must not answer.
          env: { KEMU_CNI_DAEMON: 'off' },
          sandboxImageArchive: pauseArchive,
        });
        const rt = ctd.runtime;
        const run = async (name: string, portMappings: cri.PortMapping[]) => {
          const r = await rt.RunPodSandbox(
            {
              config: {
                metadata: { name, uid: `uid-${name}-${i}`, namespace: 'e2e', attempt: 0 },
                hostname: name,
                logDirectory: path.join(dir, 'logs', name),
                portMappings,
                linux: {},
              },
            },
            { timeoutMs: 60_000 },
          );
          const id = r.podSandboxId!;
          const st = await rt.PodSandboxStatus({ podSandboxId: id });
          return { id, ip: st.status?.network?.ip ?? '', netns: await podNetns(rt, id) };
        };
        const web = await run('web', [{ protocol: cri.Protocol.TCP, containerPort: 80, hostPort: 18080 }]);
        const client = await run('client', []);

        // Addresses and routes as the reference plugins give them (the first variant is the reference).
        expect([web.ip, client.ip]).toEqual(['10.63.0.2', '10.63.0.3']);
        for (const p of [web, client]) {
          expect(routesOf(p.netns)).toEqual([
            { dst: 'default', gateway: '10.63.0.1', dev: 'eth0' },
            { dst: '10.63.0.0/24', gateway: undefined, dev: 'eth0' },
          ]);
        }
        expect(readdirSync(path.join(dataDir, 'kemu')).filter((f) => f.startsWith('10.')).sort()).toEqual(['10.63.0.2', '10.63.0.3']);

        // Pod to pod: ping and TCP.
        const ping = inNs(client.netns, 'ping', ['-c', '1', '-W', '2', web.ip]);
        expect(ping.status, ping.stdout + ping.stderr).toBe(0);
        servers.push(await serveIn(web.netns, 80, 'hello from web'));
        expect(fetchFrom(client.netns, web.ip, 80)).toBe('hello from web');
        // The hostPort from the node: its own address and 127.0.0.1 (route_localnet + SNAT), and from a pod.
        expect(fetchFrom(NODE_NS, '192.168.79.1', 18080)).toBe('hello from web');
        expect(fetchFrom(NODE_NS, '127.0.0.1', 18080)).toBe('hello from web');
        expect(fetchFrom(client.netns, '192.168.79.1', 18080)).toBe('hello from web');
        // Hairpin: the pod through its own hostPort.
        expect(fetchFrom(web.netns, '192.168.79.1', 18080)).toBe('hello from web');

        for (const p of [web, client]) {
          await rt.StopPodSandbox({ podSandboxId: p.id }, { timeoutMs: 60_000 });
          await rt.RemovePodSandbox({ podSandboxId: p.id }, { timeoutMs: 60_000 });
        }
        // Nothing left: addresses released, per-pod NAT rules gone (the shared top-level chains may stay, as
        // the reference leaves its own), veths gone, containerd's netns files gone.
        expect(readdirSync(path.join(dataDir, 'kemu')).filter((f) => f.startsWith('10.'))).toEqual([]);
        const nat = inNs(NODE_NS, 'iptables', ['-w', '-t', 'nat', '-S']).stdout;
        expect(nat).not.toMatch(/KEMU-(DN|SN|MASQ)-|CNI-DN-|CNI-[0-9a-f]{24}|10\.63\.0\.[23]/);
        const ruleset = inNs(NODE_NS, 'nft', ['list', 'ruleset']).stdout;
        expect(ruleset).not.toMatch(/10\.63\.0\.[23]|18080/);
        const links = (JSON.parse(inNs(NODE_NS, 'ip', ['-j', 'link']).stdout) as { ifname: string }[]).map((l) => l.ifname);
        expect(links.filter((l) => l.startsWith('veth'))).toEqual([]);
        expect(existsSync(web.netns) || existsSync(client.netns)).toBe(false);
      } finally {
        for (const s of servers) s.kill();
        await ctd?.stop();
        // Leave the node namespace as it was for the next variant.
        spawnSync('ip', ['-n', nsName, 'link', 'del', 'kcd0']);
        inNs(NODE_NS, 'iptables', ['-w', '-t', 'nat', '-F']);
      }
    }, 180_000);
  });
});
