import { describe, expect, it } from 'vitest';
import { type ConfFields, canonicalConf, conf, field, foldKey, mergeFields } from './conf-decode.js';
import { type CniPlugin, invokePlugin } from './skeleton.js';

describe('config keys are matched as the reference decoder matches them', () => {
  it('exact or case-insensitive, with the two non-ASCII folds of k and s', () => {
    expect(field({ HostPort: 1 }, 'hostPort')).toBe(1);
    expect(field({ HOSTPORT: 2 }, 'hostPort')).toBe(2);
    expect(field({ 'ho\u017ftPort': 3 }, 'hostPort')).toBe(3);
    expect(field({ '\u212aey': 4 }, 'key')).toBe(4);
    expect(field({ hostPorts: 5 }, 'hostPort')).toBeUndefined();
    expect(field({ 'host-port': 6 }, 'hostPort')).toBeUndefined();
    // Only letters fold: U+0130 lower-cases to "i̇" in JavaScript, which is not "i".
    expect(field({ '\u0130d': 7 }, 'id')).toBeUndefined();
    expect(foldKey('Cni.Dev/Valid-Attachments')).toBe('cni.dev/valid-attachments');
    // Outside ASCII only the two folds apply: other letters keep their case, ASCII ones around them fold.
    expect(foldKey('\u00c4Bc')).toBe('\u00c4bc');
    expect(foldKey('\u212aEY\u017f')).toBe('keys');
    expect(field({ '\u00c4d': 8 }, '\u00e4d')).toBeUndefined();
  });

  it('one field set serves every document it reads, each spelling renamed alike', () => {
    const fields: ConfFields = { hostPort: true, nested: { isGateway: true } };
    expect(canonicalConf({ HOSTPORT: 1, Nested: { ISGATEWAY: true } }, fields)).toEqual({ hostPort: 1, nested: { isGateway: true } });
    expect(canonicalConf({ hostport: 2, nested: { isgateway: false }, other: 3 }, fields)).toEqual({
      hostPort: 2,
      nested: { isGateway: false },
      other: 3,
    });
    // A different set with a field of the same spelling renames only its own fields.
    expect(canonicalConf({ HOSTPORT: 4, ISGATEWAY: 5 }, { isGateway: true })).toEqual({ HOSTPORT: 4, isGateway: 5 });
  });

  it('the last key that names a field wins, whatever its spelling', () => {
    expect(field({ hostPort: 1, HostPort: 2 }, 'hostPort')).toBe(2);
    expect(field({ HostPort: 2, hostPort: 1 }, 'hostPort')).toBe(1);
    expect(canonicalConf({ HostPort: 2, hostPort: 1 }, { hostPort: true })).toEqual({ hostPort: 1 });
  });

  it('canonicalConf renames known fields through objects and lists and keeps unknown keys', () => {
    const fields: ConfFields = { runtimeConfig: { portMappings: [{ hostPort: true, hostIP: true }] }, ranges: [[{ subnet: true }]] };
    const out = canonicalConf(
      {
        RuntimeConfig: { PortMappings: [{ HostPort: 80, HostIP: '', Extra: 1 }], other: { HostPort: 9 } },
        RANGES: [[{ Subnet: '10.0.0.0/24' }]],
        unknown: { HostPort: 1 },
      },
      fields,
    );
    expect(out).toEqual({
      runtimeConfig: { portMappings: [{ hostPort: 80, hostIP: '', Extra: 1 }], other: { HostPort: 9 } },
      ranges: [[{ subnet: '10.0.0.0/24' }]],
      unknown: { HostPort: 1 },
    });
    // Values of the wrong shape are left for the plugin's own checks to refuse.
    expect(canonicalConf({ RuntimeConfig: 'x' }, fields)).toEqual({ runtimeConfig: 'x' });
  });

  it('mergeFields nests a plugin\'s fields into the common ones', () => {
    expect(mergeFields({ ipam: { type: true }, runtimeConfig: true }, { ipam: { subnet: true }, runtimeConfig: { ips: true } })).toEqual({
      ipam: { type: true, subnet: true },
      runtimeConfig: { ips: true },
    });
  });

  it('conf.* reads fields in any case and names the key it refuses', () => {
    expect(conf.int({ MTU: 1400 }, 'mtu', 68, 65535)).toBe(1400);
    expect(conf.bool({ IsGateway: true }, 'isGateway')).toBe(true);
    expect(conf.str({ Bridge: 'br0' }, 'bridge')).toBe('br0');
    expect(() => conf.int({ Mtu: 'x' }, 'mtu', 68, 65535)).toThrow(/"mtu" must be an integer/);
    expect(() => conf.list({ Ranges: {} }, 'ranges')).toThrow(/"ranges" must be a list/);
  });
});

describe('invokePlugin hands the plugin its config with canonical keys', () => {
  it('common fields (cniVersion, name, type, runtimeConfig, prevResult) and the plugin\'s own', async () => {
    let seen: Record<string, unknown> | undefined;
    const plugin: CniPlugin = {
      name: 'probe',
      confFields: { runtimeConfig: { portMappings: [{ hostPort: true, containerPort: true }] } },
      add: async (ctx) => {
        seen = ctx.conf;
        return ctx.prevResult!;
      },
      del: async () => undefined,
    };
    const stdin = JSON.stringify({
      CNIVersion: '1.0.0',
      Name: 'net',
      TYPE: 'probe',
      RuntimeConfig: { portMappings: [{ HostPort: 18080, ContainerPort: 80 }] },
      PrevResult: { IPs: [{ Address: '10.0.0.2/24' }], Interfaces: [{ Name: 'eth0', Sandbox: '/x' }] },
    });
    const env = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1', CNI_NETNS: '/var/run/netns/x', CNI_IFNAME: 'eth0', CNI_PATH: '/bin' };
    const out = await invokePlugin(plugin, { env, stdin, datapath: () => Promise.reject(new Error('no')), delegate: () => Promise.reject(new Error('no')) });
    expect(out.exitCode, out.stdout).toBe(0);
    expect(seen).toMatchObject({ cniVersion: '1.0.0', name: 'net', type: 'probe', runtimeConfig: { portMappings: [{ hostPort: 18080, containerPort: 80 }] } });
    expect(JSON.parse(out.stdout)).toMatchObject({ ips: [{ address: '10.0.0.2/24' }], interfaces: [{ name: 'eth0', sandbox: '/x' }] });
  });
});
