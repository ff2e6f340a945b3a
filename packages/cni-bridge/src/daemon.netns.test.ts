// kemu-bridge + kemu-host-local exec'd as installed (launcher + bundle) while `kemu-cni daemon` runs: the
// call is handed to the daemon, and everything the runtime and the kernel see is what the plugin alone
// would have produced.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CniDaemon, serveCniDaemon } from '@kemu/cni';
import {
  addNetns,
  buildPluginLaunchers,
  delAllNetns,
  delNetns,
  ipJson,
  REFERENCE_BIN_DIR,
  runPlugin,
  hostLocalFiles,
} from '@kemu/cni/testing';
import { hostLocal } from '@kemu/cni-host-local';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { bridge } from './bridge.js';

const ok = requirePeers('the kemu-cni daemon netns tests', [peers.netns, peers.referenceCni]);

const tmp = mkdtempSync(join(tmpdir(), 'kemu-brd-'));
const socketPath = join(tmp, 'run', 'cni.sock');
let bin = '';
let daemon: CniDaemon | undefined;
const calls: { plugin: string; command: string; handled: boolean; reason?: string }[] = [];

beforeAll(async () => {
  if (!ok) return;
  bin = await buildPluginLaunchers(join(tmp, 'bin'), ['bridge', 'host-local']);
  // The daemon runs in this process, in the real host's namespace; callers run under `ip netns exec`, so
  // it must program their namespace, never its own.
  daemon = await serveCniDaemon({ socketPath, plugins: [bridge, hostLocal], onRequest: (r) => calls.push(r) });
});
afterAll(async () => {
  await daemon?.close();
  delAllNetns();
  rmSync(tmp, { recursive: true, force: true });
});

const conf = (dataDir: string, ipam = 'kemu-host-local') => ({
  cniVersion: '1.0.0',
  name: 'dnet',
  type: 'kemu-bridge',
  bridge: 'kbrd0',
  isGateway: true,
  isDefaultGateway: true,
  ipMasq: false,
  ipam: { type: ipam, ranges: [[{ subnet: '10.62.0.0/24' }]], dataDir },
});

function podState(ns: string) {
  return {
    addrs: ipJson(ns, ['-4', 'addr', 'show', 'eth0'])[0]?.addr_info.map((a: any) => `${a.local}/${a.prefixlen}`),
    routes: ipJson(ns, ['-4', 'route']).map((r: any) => `${r.dst} ${r.gateway ?? ''} ${r.dev}`),
  };
}

function hostBridge(ns: string) {
  const br = ipJson(ns, ['-4', 'addr', 'show', 'kbrd0'])[0];
  return br?.addr_info.map((a: any) => `${a.local}/${a.prefixlen}`);
}


describe.runIf(ok)('kemu-cni daemon with the linux datapath', () => {
  it('serves an exec ADD/DEL with the same result, netns state and host-local files as the plugin alone', async () => {
    const seen = [];
    for (const daemonSetting of ['off', socketPath]) {
      const host = addNetns('host');
      const pod = addNetns('pod');
      const dataDir = join(tmp, `diff-${daemonSetting === 'off' ? 'alone' : 'daemon'}`);
      const before = calls.length;
      const env = { containerId: 'ctr1', netns: pod.path, ifname: 'eth0', path: bin, hostNetns: host.name, extra: { KEMU_CNI_DAEMON: daemonSetting } };
      const r = await runPlugin(join(bin, 'kemu-bridge'), 'ADD', conf(dataDir), env);
      expect(r.exitCode, r.stdout).toBe(0);
      // Exactly one call reached the daemon when it was asked, none otherwise; IPAM ran inside it.
      expect(calls.slice(before).map((c) => `${c.plugin} ${c.command} ${c.handled}`)).toEqual(
        daemonSetting === 'off' ? [] : ['kemu-bridge ADD true'],
      );
      seen.push({ result: r.json, pod: podState(pod.name), host: hostBridge(host.name), files: hostLocalFiles(join(dataDir, 'dnet')) });
      const chk = await runPlugin(join(bin, 'kemu-bridge'), 'CHECK', { ...conf(dataDir), prevResult: r.json }, env);
      expect(chk.exitCode, chk.stdout).toBe(0);
      const d = await runPlugin(join(bin, 'kemu-bridge'), 'DEL', conf(dataDir), env);
      expect(d.exitCode, d.stdout).toBe(0);
      expect(Object.keys(hostLocalFiles(join(dataDir, 'dnet'))).filter((f) => f.startsWith('10.'))).toEqual([]);
      delNetns(pod.name);
      delNetns(host.name);
    }
    const [alone, viaDaemon] = seen as any[];
    const norm = (res: any) => ({
      ...res,
      interfaces: res.interfaces.map((i: any) => ({
        ...i,
        mac: /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(i.mac) ? 'mac' : i.mac,
        sandbox: i.sandbox ? 'sandbox' : undefined,
      })),
    });
    expect(norm(viaDaemon.result)).toEqual(norm(alone.result));
    expect(viaDaemon.pod).toEqual(alone.pod);
    expect(viaDaemon.pod.addrs).toEqual(['10.62.0.2/24']);
    expect(viaDaemon.host).toEqual(alone.host);
    expect(viaDaemon.files).toEqual(alone.files);
    // The daemon's own namespace (the real host) never got the bridge.
    expect(existsSync('/sys/class/net/kbrd0')).toBe(false);
  });

  it('execs a delegate it does not carry (the reference host-local) in the caller namespace', async () => {
    const host = addNetns('host');
    const pod = addNetns('pod');
    const dataDir = join(tmp, 'ref-ipam');
    const env = {
      containerId: 'ctr2',
      netns: pod.path,
      ifname: 'eth0',
      path: `${bin}:${REFERENCE_BIN_DIR}`,
      hostNetns: host.name,
      extra: { KEMU_CNI_DAEMON: socketPath },
    };
    const before = calls.length;
    const r = await runPlugin(join(bin, 'kemu-bridge'), 'ADD', conf(dataDir, 'host-local'), env);
    expect(r.exitCode, r.stdout).toBe(0);
    expect(calls.slice(before).map((c) => c.handled)).toEqual([true]);
    expect(r.json.ips[0].address).toBe('10.62.0.2/24');
    expect(readFileSync(join(dataDir, 'dnet', '10.62.0.2'), 'utf8').split(/\r?\n/)[0]).toBe('ctr2');
    expect(podState(pod.name).addrs).toEqual(['10.62.0.2/24']);
    const d = await runPlugin(join(bin, 'kemu-bridge'), 'DEL', conf(dataDir, 'host-local'), env);
    expect(d.exitCode, d.stdout).toBe(0);
    expect(existsSync(join(dataDir, 'dnet', '10.62.0.2'))).toBe(false);
  });

  it('20 concurrent exec ADDs through the daemon get 20 distinct IPs; bad config fails as alone, leaving nothing', async () => {
    const host = addNetns('host');
    const dataDir = join(tmp, 'many');
    const pods = Array.from({ length: 20 }, () => addNetns('pod'));
    const envFor = (i: number) => ({
      containerId: `c${i}`,
      netns: pods[i]!.path,
      ifname: 'eth0',
      path: bin,
      hostNetns: host.name,
      extra: { KEMU_CNI_DAEMON: socketPath },
    });
    const adds = await Promise.all(pods.map((_, i) => runPlugin(join(bin, 'kemu-bridge'), 'ADD', conf(dataDir), envFor(i))));
    for (const a of adds) expect(a.exitCode, a.stdout).toBe(0);
    const ips = adds.map((a) => a.json.ips[0].address);
    expect(new Set(ips).size).toBe(20);

    const bad = await runPlugin(join(bin, 'kemu-bridge'), 'ADD', { ...conf(dataDir), mtu: 'big' }, envFor(0));
    const badAlone = await runPlugin(join(bin, 'kemu-bridge'), 'ADD', { ...conf(dataDir), mtu: 'big' }, {
      ...envFor(0),
      extra: { KEMU_CNI_DAEMON: 'off' },
    });
    expect(bad.exitCode).toBe(1);
    expect(bad.json).toEqual(badAlone.json);
    expect(bad.json.code).toBe(7);

    const dels = await Promise.all(pods.map((_, i) => runPlugin(join(bin, 'kemu-bridge'), 'DEL', conf(dataDir), envFor(i))));
    for (const d of dels) expect(d.exitCode, d.stdout).toBe(0);
    expect(readdirSync(join(dataDir, 'dnet')).filter((f) => f.startsWith('10.'))).toEqual([]);
  });

  it('declines a caller for whom CNI_NETNS is another file, which then does the work itself', async () => {
    const host = addNetns('host');
    const named = addNetns('pod');
    const actual = addNetns('pod');
    const dataDir = join(tmp, 'other-view');
    // The caller's mount namespace has `actual` mounted over `named`: the same path, another namespace.
    const child = spawn(
      'ip',
      ['netns', 'exec', host.name, 'unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', 'mount --bind "$1" "$2" && exec "$3"', 'sh', actual.path, named.path, join(bin, 'kemu-bridge')],
      {
        env: {
          PATH: process.env.PATH,
          CNI_COMMAND: 'ADD',
          CNI_CONTAINERID: 'ctr3',
          CNI_NETNS: named.path,
          CNI_IFNAME: 'eth0',
          CNI_PATH: bin,
          KEMU_CNI_DAEMON: socketPath,
        },
      },
    );
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stdin.end(JSON.stringify(conf(dataDir)));
    const before = calls.length;
    expect(await new Promise((r) => child.on('close', r)), out).toBe(0);
    expect(calls.slice(before)).toEqual([
      expect.objectContaining({ handled: false, reason: `${named.path} is not the same file for the caller and the daemon` }),
    ]);
    // Done by the executable in its own view: the interface is in the namespace it saw.
    expect(podState(actual.name).addrs).toEqual(['10.62.0.2/24']);
    expect(ipJson(named.name, ['link', 'show']).map((l: any) => l.ifname)).toEqual(['lo']);
  });
});
