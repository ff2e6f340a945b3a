import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLinuxDatapath, CniRuntime, InProcessInvoker, type LinuxDatapath, parseConfList } from '@kemu/cni';
import {
  addNetns,
  buildPluginBins,
  delAllNetns,
  delNetns,
  inNetns,
  ipJson,
  REFERENCE_BIN_DIR,
  runPlugin,
  hostLocalFiles,
} from '@kemu/cni/testing';
import { hostLocal } from '@kemu/cni-host-local';
import { portmap } from '@kemu/cni-portmap';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { bridge } from './bridge.js';

const ok = requirePeers('the bridge netns tests', [peers.netns, peers.referenceCni, peers.iptables]);

const tmp = mkdtempSync(join(tmpdir(), 'kemu-br-'));
let bin = '';
let cniPath = '';

beforeAll(async () => {
  if (!ok) return;
  bin = await buildPluginBins(join(tmp, 'bin'));
  cniPath = `${bin}:${REFERENCE_BIN_DIR}`;
});
afterAll(() => {
  delAllNetns();
  rmSync(tmp, { recursive: true, force: true });
});

const bridgeConf = (type: string, ipamType: string, dataDir: string, extra: Record<string, unknown> = {}) => ({
  cniVersion: '1.0.0',
  name: 'brnet',
  type,
  bridge: 'kbr0',
  isGateway: true,
  isDefaultGateway: true,
  ipMasq: true,
  mtu: 1400,
  hairpinMode: true,
  ipam: { type: ipamType, ranges: [[{ subnet: '10.61.0.0/24' }]], dataDir },
  ...extra,
});

/** What `ip -j` says about a namespace, minus what is random (MACs, ifindexes, IPv6 link-local). */
function netnsState(ns: string) {
  const links = ipJson(ns, ['-d', 'addr']).map((l: any) => ({
    ifname: l.ifname,
    flags: l.flags,
    mtu: l.mtu,
    operstate: l.operstate,
    link_type: l.link_type,
    txqlen: l.txqlen,
    kind: l.linkinfo?.info_kind,
    addrs: (l.addr_info ?? [])
      .filter((a: any) => !(a.family === 'inet6' && a.scope === 'link'))
      .map((a: any) => ({ family: a.family, local: a.local, prefixlen: a.prefixlen, broadcast: a.broadcast, scope: a.scope })),
  }));
  const routes = ipJson(ns, ['route', 'show', 'table', 'all']).filter((r: any) => !String(r.dst).startsWith('fe80') && r.type !== 'multicast');
  return { links, routes };
}

function hostState(ns: string, hostVeth: string) {
  const br = ipJson(ns, ['-d', 'addr', 'show', 'kbr0'])[0];
  const veth = ipJson(ns, ['-d', 'link', 'show', hostVeth])[0];
  return {
    bridge: {
      mtu: br.mtu,
      flags: br.flags.filter((f: string) => f !== 'LOWER_UP' && f !== 'NO-CARRIER'),
      addrs: br.addr_info.filter((a: any) => a.scope === 'global').map((a: any) => `${a.local}/${a.prefixlen} brd ${a.broadcast}`),
    },
    veth: {
      mtu: veth.mtu,
      master: veth.master,
      flags: veth.flags,
      txqlen: veth.txqlen,
      hairpin: veth.linkinfo?.info_slave_data?.hairpin,
    },
    forward: inNetns(ns, 'sysctl', ['-n', 'net.ipv4.ip_forward']).stdout.trim(),
    // The masquerade rule for the pod: source match + ACCEPT for its subnet + MASQUERADE, whatever the chain is called.
    masq: (() => {
      const rules = inNetns(ns, 'iptables', ['-w', '-t', 'nat', '-S']).stdout.split('\n');
      const jump = rules.find((l) => l.startsWith('-A POSTROUTING -s 10.61.0.2/32'));
      const chain = jump?.split(' -j ')[1];
      const body = rules.filter((l) => chain && l.startsWith(`-A ${chain} `));
      return {
        jump: !!jump,
        acceptSubnet: body.some((l) => l.includes('-d 10.61.0.0/24') && l.endsWith('-j ACCEPT')),
        masquerade: body.some((l) => l.endsWith('-j MASQUERADE')),
      };
    })(),
  };
}


describe.runIf(ok)('kemu-bridge on Linux', () => {
  const variants: [string, Record<string, unknown>][] = [
    ['gateway + default route + masquerade + hairpin, 1.0.0', {}],
    [
      'plain L2 bridge, 0.4.0',
      { cniVersion: '0.4.0', isGateway: false, isDefaultGateway: false, ipMasq: false, hairpinMode: false, mtu: undefined },
    ],
    ['gateway without default route, promiscuous bridge, 0.3.1', { cniVersion: '0.3.1', isDefaultGateway: false, ipMasq: false, hairpinMode: false, promiscMode: true }],
  ];
  it.each(variants)('matches the reference bridge (%s): result, container netns, host side, host-local files', async (_name, over) => {
    const sides = [
      { bridgeBin: join(REFERENCE_BIN_DIR, 'bridge'), type: 'bridge', ipam: 'host-local' },
      { bridgeBin: join(bin, 'kemu-bridge'), type: 'kemu-bridge', ipam: 'kemu-host-local' },
    ];
    const seen = [];
    for (const s of sides) {
      const host = addNetns('host');
      const pod = addNetns('pod');
      const dataDir = join(tmp, `diff-${s.type}-${String(over.cniVersion)}-${String(over.isGateway)}`);
      const r = await runPlugin(s.bridgeBin, 'ADD', { ...bridgeConf(s.type, s.ipam, dataDir), ...over }, {
        containerId: 'ctr1',
        netns: pod.path,
        ifname: 'eth0',
        path: cniPath,
        hostNetns: host.name,
      });
      expect(r.exitCode, r.stdout).toBe(0);
      seen.push({
        result: r.json,
        pod: netnsState(pod.name),
        host: hostState(host.name, r.json.interfaces[1].name),
        files: hostLocalFiles(join(dataDir, 'brnet')),
      });
    }
    const [ref, ours] = seen as any[];
    if (process.env.KEMU_DEBUG) console.log(JSON.stringify(seen, null, 1));
    // Same shape; MACs and the host veth name are random on the reference side.
    const norm = (res: any) => ({
      ...res,
      interfaces: res.interfaces.map((i: any) => ({
        ...i,
        name: i.name.startsWith('veth') ? 'veth*' : i.name,
        mac: /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(i.mac) ? 'mac' : i.mac,
        sandbox: i.sandbox ? 'sandbox' : undefined,
      })),
    });
    expect(norm(ours.result)).toEqual(norm(ref.result));
    expect(ours.pod).toEqual(ref.pod);
    expect(ours.host).toEqual(ref.host);
    if (over.ipMasq !== false) expect(ours.host.masq).toEqual({ jump: true, acceptSubnet: true, masquerade: true });
    expect(ours.files).toEqual(ref.files);
  });

  it('two pods on the bridge ping each other; DEL twice succeeds; DEL after the netns is gone releases the IP', async () => {
    const host = addNetns('host');
    const pods = [addNetns('pod'), addNetns('pod')];
    const dataDir = join(tmp, 'ping');
    const conf = bridgeConf('kemu-bridge', 'kemu-host-local', dataDir);
    const env = (i: number) => ({ containerId: `p${i}`, netns: pods[i]!.path, ifname: 'eth0', path: cniPath, hostNetns: host.name });
    const ips: string[] = [];
    for (const i of [0, 1]) {
      const r = await runPlugin(join(bin, 'kemu-bridge'), 'ADD', conf, env(i));
      expect(r.exitCode, r.stdout).toBe(0);
      ips.push(r.json.ips[0].address.split('/')[0]);
    }
    const ping = inNetns(pods[0]!.name, 'ping', ['-c', '2', '-W', '2', ips[1]!]);
    expect(ping.status, ping.stdout + ping.stderr).toBe(0);
    const back = inNetns(pods[1]!.name, 'ping', ['-c', '1', '-W', '2', ips[0]!]);
    expect(back.status).toBe(0);

    expect((await runPlugin(join(bin, 'kemu-bridge'), 'DEL', conf, env(0))).exitCode).toBe(0);
    expect((await runPlugin(join(bin, 'kemu-bridge'), 'DEL', conf, env(0))).exitCode).toBe(0);
    delNetns(pods[1]!.name);
    const gone = await runPlugin(join(bin, 'kemu-bridge'), 'DEL', conf, env(1));
    expect(gone.exitCode, gone.stdout).toBe(0);
    expect(readdirSync(join(dataDir, 'brnet')).filter((f) => f.startsWith('10.'))).toEqual([]);
    const hostLinks = ipJson(host.name, ['link']).map((l: any) => l.ifname);
    expect(hostLinks.filter((n: string) => n.startsWith('veth'))).toEqual([]);
    const nat = inNetns(host.name, 'iptables', ['-w', '-t', 'nat', '-S']).stdout;
    expect(nat).not.toMatch(/KEMU-MASQ-/);
  });

  it('bad input fails with the right code, names the key, and leaves nothing behind', async () => {
    const host = addNetns('host');
    const pod = addNetns('pod');
    const dataDir = join(tmp, 'bad');
    const env = { containerId: 'bad1', netns: pod.path, ifname: 'eth0', path: cniPath, hostNetns: host.name };
    const run = (conf: unknown, e = env) => runPlugin(join(bin, 'kemu-bridge'), 'ADD', conf, e);
    const base = bridgeConf('kemu-bridge', 'kemu-host-local', dataDir);
    const cases: [unknown, number, RegExp, typeof env?][] = [
      ['{"cniVersion":"1.0.0",', 6, /parsing/],
      [{ ...base, mtu: 'big' }, 7, /"mtu"/],
      [{ ...base, vlan: 100 }, 2, /"vlan"/],
      [{ ...base, promiscMode: true }, 7, /"hairpinMode" and "promiscMode"/],
      [{ ...base, cniVersion: '9.9.9' }, 1, /incompatible/],
      [base, 4, /CNI_IFNAME/, { ...env, ifname: 'way-too-long-ifname0' }],
      // Fails inside IPAM after the veth exists: everything must be rolled back.
      [{ ...base, ipam: { type: 'kemu-host-local', ranges: [[{ subnet: '10.62.0.0/33' }]], dataDir } }, 7, /"subnet"/],
      [{ ...base, ipam: { type: 'no-such-ipam' } }, 103, /no-such-ipam/],
    ];
    for (const [conf, code, msg, e] of cases) {
      const r = await run(conf, e);
      expect(r.exitCode).toBe(1);
      expect(r.json?.code, r.stdout).toBe(code);
      expect(r.json.msg).toMatch(msg);
      expect(r.stdout).not.toMatch(/\s+at\s.+:\d+:\d+/);
    }
    expect(ipJson(pod.name, ['link']).map((l: any) => l.ifname)).toEqual(['lo']);
    expect(ipJson(host.name, ['link']).map((l: any) => l.ifname).filter((n: string) => n.startsWith('veth'))).toEqual([]);
    const leftovers = (() => {
      try {
        return readdirSync(join(dataDir, 'brnet')).filter((f) => f.startsWith('10.'));
      } catch {
        return [];
      }
    })();
    expect(leftovers).toEqual([]);
  });
});

describe.runIf(ok)('mixed chains through the runtime (exec), with kemu-portmap last', () => {
  const chains = [
    { name: 'reference bridge + kemu-host-local', bridge: 'bridge', ipam: 'kemu-host-local' },
    { name: 'kemu-bridge + reference host-local', bridge: 'kemu-bridge', ipam: 'host-local' },
  ];
  for (const c of chains) {
    it(`${c.name}: ADD, port map reachable, CHECK, DEL cleans up`, async () => {
      const host = addNetns('host');
      const pod = addNetns('pod');
      spawnSync('ip', ['-n', host.name, 'link', 'set', 'lo', 'up']);
      // The node's own address (a veth stands in for the uplink: the dummy module may be unavailable).
      spawnSync('ip', ['-n', host.name, 'link', 'add', 'node0', 'type', 'veth', 'peer', 'name', 'node0p']);
      spawnSync('ip', ['-n', host.name, 'addr', 'add', '192.168.77.1/24', 'dev', 'node0']);
      spawnSync('ip', ['-n', host.name, 'link', 'set', 'node0', 'up']);
      spawnSync('ip', ['-n', host.name, 'link', 'set', 'node0p', 'up']);
      const dataDir = join(tmp, `chain-${c.bridge}`);
      const confDir = join(tmp, `conf-${c.bridge}`);
      const { mkdirSync, writeFileSync } = await import('node:fs');
      mkdirSync(confDir, { recursive: true });
      writeFileSync(
        join(confDir, '10-chain.conflist'),
        JSON.stringify({
          cniVersion: '1.0.0',
          name: 'chain',
          plugins: [
            { ...bridgeConf(c.bridge, c.ipam, dataDir), name: undefined, cniVersion: undefined },
            { type: 'kemu-portmap', capabilities: { portMappings: true }, snat: true },
          ],
        }),
      );
      const rt = new CniRuntime({
        confDir,
        binDirs: [bin, REFERENCE_BIN_DIR],
        cacheDir: join(tmp, `cache-${c.bridge}`),
        execWrapper: ['ip', 'netns', 'exec', host.name],
      });
      const list = await rt.loadConfList('chain');
      const att = {
        containerId: 'chainpod',
        netns: pod.path,
        ifname: 'eth0',
        capabilityArgs: { portMappings: [{ hostPort: 18080, containerPort: 80, protocol: 'tcp' }] },
      };
      const result = await rt.addNetworkList(list, att);
      const podIP = result.ips![0]!.address.split('/')[0]!;
      expect(podIP).toBe('10.61.0.2');
      // libcni's cache layout.
      const cached = JSON.parse(readFileSync(join(tmp, `cache-${c.bridge}`, 'results', 'chain-chainpod-eth0'), 'utf8'));
      expect(cached).toMatchObject({ kind: 'cniCacheV1', containerId: 'chainpod', ifName: 'eth0', networkName: 'chain' });
      expect(cached.result.ips[0].address).toBe('10.61.0.2/24');

      const server = spawn('ip', [
        'netns',
        'exec',
        pod.name,
        process.execPath,
        '-e',
        "require('net').createServer(s=>s.end('hello from pod')).listen(80,'0.0.0.0',()=>console.log('up'))",
      ]);
      try {
        await new Promise<void>((res, rej) => {
          server.stdout.once('data', () => res());
          server.once('exit', (code) => rej(new Error(`server exited ${code}`)));
        });
        spawnSync('ip', ['-n', pod.name, 'link', 'set', 'lo', 'up']);
        const reply = inNetns(host.name, process.execPath, [
          '-e',
          "const s=require('net').connect(18080,'192.168.77.1');let b='';s.on('data',d=>b+=d);s.on('end',()=>{console.log(b)});s.on('error',e=>{console.error(e.message);process.exit(1)})",
        ]);
        expect(reply.stdout.trim(), reply.stderr).toBe('hello from pod');
      } finally {
        server.kill();
      }
      await rt.checkNetworkList(list, att);
      await rt.delNetworkList(list, att);
      await rt.delNetworkList(list, att);
      expect(readdirSync(join(dataDir, 'chain')).filter((f) => f.startsWith('10.'))).toEqual([]);
      const nat = inNetns(host.name, 'iptables', ['-w', '-t', 'nat', '-S']).stdout;
      expect(nat).not.toMatch(/KEMU-DN-|KEMU-SN-/);
      expect(ipJson(pod.name, ['link']).map((l: any) => l.ifname)).toEqual(['lo']);
    });
  }
});

describe.runIf(ok)('in-process invoker on the linux datapath', () => {
  let dp: LinuxDatapath;
  afterAll(async () => {
    await dp?.close();
  });

  it('50 concurrent ADDs on one network get 50 distinct IPs, then GC releases all but the valid ones', async () => {
    const host = addNetns('host');
    dp = createLinuxDatapath({ hostNetns: host.path });
    const dataDir = join(tmp, 'inproc');
    const invoker = new InProcessInvoker({ plugins: [bridge, hostLocal, portmap], datapath: dp });
    const list = parseConfList(
      Buffer.from(
        JSON.stringify({
          cniVersion: '1.1.0',
          name: 'scale',
          plugins: [{ ...bridgeConf('kemu-bridge', 'kemu-host-local', dataDir), ipMasq: false, hairpinMode: false, name: undefined }],
        }),
      ),
    );
    const rt = new CniRuntime({ binDirs: [bin], cacheDir: join(tmp, 'cache-inproc'), invoker });
    const pods = Array.from({ length: 50 }, () => addNetns('scale'));
    const sockets = () => readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:');
      } catch {
        return false;
      }
    }).length;
    const socketsBefore = sockets();
    const results = await Promise.all(
      pods.map((p, i) => rt.addNetworkList(list, { containerId: `s${i}`, netns: p.path, ifname: 'eth0' })),
    );
    const ips = results.map((r) => r.ips![0]!.address);
    expect(new Set(ips).size).toBe(50);
    // Pod namespaces are not pinned by cached netlink sockets once their calls returned.
    expect(sockets() - socketsBefore).toBeLessThan(5);
    // Each pod really has its address.
    const addr7 = ipJson(pods[7]!.name, ['addr', 'show', 'eth0'])[0].addr_info.find((a: any) => a.family === 'inet');
    expect(`${addr7.local}/${addr7.prefixlen}`).toBe(ips[7]);

    await rt.gcNetworkList(list, [{ containerId: 's3', ifname: 'eth0' }]);
    expect(readdirSync(join(dataDir, 'scale')).filter((f) => f.startsWith('10.'))).toEqual([ips[3]!.split('/')[0]]);
    const vethsLeft = ipJson(host.name, ['link']).filter((l: any) => l.ifname.startsWith('veth'));
    expect(vethsLeft.length).toBe(1);
    expect(readdirSync(join(tmp, 'cache-inproc', 'results'))).toEqual(['scale-s3-eth0']);
  });

  it('programs NAT inside the node namespace, not the real host (masquerade + port map, in process)', async () => {
    const host = addNetns('host');
    const pod = addNetns('pod');
    const local = createLinuxDatapath({ hostNetns: host.path });
    try {
      const invoker = new InProcessInvoker({ plugins: [bridge, hostLocal, portmap], datapath: local });
      const list = parseConfList(
        Buffer.from(
          JSON.stringify({
            cniVersion: '1.0.0',
            name: 'natnet',
            plugins: [
              { ...bridgeConf('kemu-bridge', 'kemu-host-local', join(tmp, 'nat')), name: undefined },
              { type: 'kemu-portmap', capabilities: { portMappings: true } },
            ],
          }),
        ),
      );
      const rt = new CniRuntime({ binDirs: [bin], cacheDir: join(tmp, 'cache-nat'), invoker });
      const realBefore = spawnSync('iptables', ['-w', '-t', 'nat', '-S'], { encoding: 'utf8' }).stdout;
      const att = {
        containerId: 'natpod',
        netns: pod.path,
        ifname: 'eth0',
        capabilityArgs: { portMappings: [{ hostPort: 18081, containerPort: 81, protocol: 'udp' }] },
      };
      await rt.addNetworkList(list, att);
      const nat = inNetns(host.name, 'iptables', ['-w', '-t', 'nat', '-S']).stdout;
      expect(nat).toMatch(/-A POSTROUTING -s 10\.61\.0\.2\/32 .*-j KEMU-MASQ-/);
      expect(nat).toMatch(/-A KEMU-DN-\S+ -p udp -m udp --dport 18081 .*--to-destination 10\.61\.0\.2:81/);
      expect(spawnSync('iptables', ['-w', '-t', 'nat', '-S'], { encoding: 'utf8' }).stdout).toBe(realBefore);
      expect(inNetns(host.name, 'sysctl', ['-n', 'net.ipv4.ip_forward']).stdout.trim()).toBe('1');
      await rt.delNetworkList(list, att);
      expect(inNetns(host.name, 'iptables', ['-w', '-t', 'nat', '-S']).stdout).not.toMatch(/KEMU-(MASQ|DN|SN)-/);
    } finally {
      await local.close();
    }
  });
});
