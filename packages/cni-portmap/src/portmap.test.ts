import { HOST_NETNS, MemoryDatapath } from '@kemu/cni';
import { callPlugin } from '@kemu/cni/testing';
import { describe, expect, it } from 'vitest';
import { portmap } from './portmap.js';

const prevResult = {
  cniVersion: '1.0.0',
  interfaces: [{ name: 'cni0' }, { name: 'veth1' }, { name: 'eth0', sandbox: '/var/run/netns/p' }],
  ips: [
    { interface: 2, address: '10.5.0.7/24', gateway: '10.5.0.1' },
    { interface: 2, address: 'fd05::7/64', gateway: 'fd05::1' },
  ],
};
const conf = (extra: Record<string, unknown> = {}, mappings: unknown = [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }]) => ({
  cniVersion: '1.0.0',
  name: 'pmnet',
  type: 'kemu-portmap',
  capabilities: { portMappings: true },
  runtimeConfig: { portMappings: mappings },
  prevResult,
  ...extra,
});
const env = { containerId: 'ctr', netns: '/var/run/netns/p', ifname: 'eth0' };

describe('kemu-portmap', () => {
  it('installs one DNAT per mapping and family, returns prevResult unchanged, DEL removes them (twice)', async () => {
    const dp = new MemoryDatapath();
    const r = await callPlugin(portmap, 'ADD', conf({}, [
      { hostPort: 8080, containerPort: 80, protocol: 'tcp' },
      { hostPort: 5353, containerPort: 53, protocol: 'udp', hostIP: '192.168.1.2' },
    ]), env, dp);
    expect(r.exitCode, r.stdout).toBe(0);
    expect(r.json.ips).toEqual(prevResult.ips);
    const rules = await dp.listNatRules(HOST_NETNS);
    expect(rules).toEqual([
      { kind: 'dnat', owner: 'portmap pmnet ctr', protocol: 'tcp', hostPort: 8080, toIP: '10.5.0.7', toPort: 80, snat: true, masqSrc: '10.5.0.0/24' },
      { kind: 'dnat', owner: 'portmap pmnet ctr', protocol: 'tcp', hostPort: 8080, toIP: 'fd05::7', toPort: 80, snat: true, masqSrc: 'fd05::/64' },
      {
        kind: 'dnat',
        owner: 'portmap pmnet ctr',
        protocol: 'udp',
        hostPort: 5353,
        toIP: '10.5.0.7',
        toPort: 53,
        snat: true,
        masqSrc: '10.5.0.0/24',
        hostIP: '192.168.1.2',
      },
    ]);
    expect((await callPlugin(portmap, 'CHECK', conf(), env, dp)).exitCode).toBe(0);
    expect((await callPlugin(portmap, 'DEL', conf(), env, dp)).exitCode).toBe(0);
    expect((await callPlugin(portmap, 'DEL', conf(), env, dp)).exitCode).toBe(0);
    expect(await dp.listNatRules(HOST_NETNS)).toEqual([]);
  });

  it.each([
    ['no prevResult', { prevResult: undefined }, undefined, 7, /prevResult/],
    ['bad hostPort', {}, [{ hostPort: 70000, containerPort: 80 }], 7, /"hostPort"/],
    ['missing containerPort', {}, [{ hostPort: 80 }], 7, /"containerPort"/],
    ['bad protocol', {}, [{ hostPort: 80, containerPort: 80, protocol: 'icmp' }], 7, /"protocol"/],
    ['unsupported condition', { conditionsV4: ['-m', 'mark'] }, undefined, 2, /conditionsV4/],
    ['unsupported masqAll', { masqAll: true }, undefined, 2, /"masqAll"/],
  ])('%s → code %i naming the key, nothing installed', async (_n, extra, mappings, code, msg) => {
    const dp = new MemoryDatapath();
    const r = await callPlugin(portmap, 'ADD', conf(extra as Record<string, unknown>, mappings), env, dp);
    expect(r.exitCode).toBe(1);
    expect(r.json.code).toBe(code);
    expect(r.json.msg).toMatch(msg);
    expect(await dp.listNatRules(HOST_NETNS)).toEqual([]);
  });

  it('passes structured source/interface conditions through', async () => {
    const dp = new MemoryDatapath();
    const r = await callPlugin(portmap, 'ADD', conf({ conditionsV4: ['-s', '10.0.0.0/8', '!', '-i', 'cni0'] }), env, dp);
    expect(r.exitCode, r.stdout).toBe(0);
    const v4 = (await dp.listNatRules(HOST_NETNS)).find((x) => x.kind === 'dnat' && x.toIP === '10.5.0.7');
    expect(v4).toMatchObject({ conditions: [{ srcCidr: '10.0.0.0/8', notIif: 'cni0' }] });
  });

  // What the runtimes put on stdin (keys sorted as Go marshals a map; the mapping as each runtime's struct
  // marshals it): containerd 1.6 (go-cni's PortMapping has no JSON tags) and CRI-O (ocicni's has).
  const stdinFrom = (mapping: string) =>
    `{"capabilities":{"portMappings":true},"cniVersion":"1.0.0","name":"pmnet","prevResult":${JSON.stringify(prevResult)},` +
    `"runtimeConfig":{"portMappings":[${mapping}]},"type":"kemu-portmap"}`;
  it.each([
    ['containerd 1.6', '{"HostPort":18080,"ContainerPort":80,"Protocol":"tcp","HostIP":""}'],
    ['CRI-O', '{"hostPort":18080,"containerPort":80,"protocol":"tcp","hostIP":""}'],
  ])('reads the port mappings %s sends', async (_runtime, mapping) => {
    const dp = new MemoryDatapath();
    const r = await callPlugin(portmap, 'ADD', stdinFrom(mapping), env, dp);
    expect(r.exitCode, r.stdout).toBe(0);
    expect(await dp.listNatRules(HOST_NETNS)).toEqual([
      { kind: 'dnat', owner: 'portmap pmnet ctr', protocol: 'tcp', hostPort: 18080, toIP: '10.5.0.7', toPort: 80, snat: true, masqSrc: '10.5.0.0/24' },
      { kind: 'dnat', owner: 'portmap pmnet ctr', protocol: 'tcp', hostPort: 18080, toIP: 'fd05::7', toPort: 80, snat: true, masqSrc: 'fd05::/64' },
    ]);
    expect((await callPlugin(portmap, 'CHECK', stdinFrom(mapping), env, dp)).exitCode).toBe(0);
    expect((await callPlugin(portmap, 'DEL', stdinFrom(mapping), env, dp)).exitCode).toBe(0);
    expect(await dp.listNatRules(HOST_NETNS)).toEqual([]);
  });

  it('takes the exact stdin containerd 1.6 (Debian 1.6.20) sent for ADD and DEL', async () => {
    // Captured from containerd's CRI plugin running a pod with one hostPort (a tee in front of the plugin).
    const add = String.raw`{"capabilities":{"portMappings":true},"cniVersion":"1.0.0","name":"ref","prevResult":{"cniVersion":"1.0.0","dns":{},"interfaces":[{"mac":"ee:c1:1e:c7:96:98","name":"kcd0"},{"mac":"72:1d:fc:50:c1:ec","name":"veth715eacaa"},{"mac":"8e:a2:6b:86:c9:63","name":"eth0","sandbox":"/var/run/netns/cni-f077abea-269a-43cd-52fa-45909a924155"}],"ips":[{"address":"10.63.0.2/24","gateway":"10.63.0.1","interface":2}],"routes":[{"dst":"0.0.0.0/0","gw":"10.63.0.1"}]},"runtimeConfig":{"portMappings":[{"HostPort":18080,"ContainerPort":80,"Protocol":"tcp","HostIP":""}]},"type":"portmap"}`;
    const del = String.raw`{"capabilities":{"portMappings":true},"cniVersion":"1.0.0","name":"ref","runtimeConfig":{"portMappings":[{"HostPort":18080,"ContainerPort":80,"Protocol":"tcp","HostIP":""}]},"type":"portmap"}`;
    const dp = new MemoryDatapath();
    const netns = JSON.parse(add).prevResult.interfaces[2].sandbox;
    const r = await callPlugin(portmap, 'ADD', add.replace('"type":"portmap"', '"type":"kemu-portmap"'), { ...env, netns }, dp);
    expect(r.exitCode, r.stdout).toBe(0);
    expect(await dp.listNatRules(HOST_NETNS)).toEqual([
      { kind: 'dnat', owner: 'portmap ref ctr', protocol: 'tcp', hostPort: 18080, toIP: '10.63.0.2', toPort: 80, snat: true, masqSrc: '10.63.0.0/24' },
    ]);
    expect((await callPlugin(portmap, 'DEL', del, { ...env, netns }, dp)).exitCode).toBe(0);
    expect(await dp.listNatRules(HOST_NETNS)).toEqual([]);
  });

  it('top-level keys in another case are read too (SNAT, RuntimeConfig), the last spelling wins', async () => {
    const dp = new MemoryDatapath();
    const c = conf({ SNAT: false });
    const { runtimeConfig, ...rest } = c;
    const r = await callPlugin(portmap, 'ADD', { ...rest, RuntimeConfig: runtimeConfig }, env, dp);
    expect(r.exitCode, r.stdout).toBe(0);
    expect((await dp.listNatRules(HOST_NETNS)).map((x) => x.kind === 'dnat' && x.snat)).toEqual([false, false]);
  });
});
