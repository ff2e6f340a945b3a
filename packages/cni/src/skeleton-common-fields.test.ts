import { describe, expect, it } from 'vitest';
import { execDelegate } from './invoke-exec.js';
import { type CniPlugin, invokePlugin } from './skeleton.js';

// A plugin that reports the config's dns in its result, as the bridge does.
const echoDns: CniPlugin = {
  name: 't',
  async add(ctx) {
    return { cniVersion: ctx.version, dns: ctx.conf.dns ?? {} };
  },
  async del() {},
};
const env = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c', CNI_NETNS: '/x', CNI_IFNAME: 'eth0', CNI_PATH: '/x' };
const add = async (extra: Record<string, unknown>) =>
  JSON.parse(
    (
      await invokePlugin(echoDns, {
        env,
        stdin: JSON.stringify({ cniVersion: '1.0.0', name: 'n', type: 't', ...extra }),
        delegate: execDelegate,
        datapath: () => Promise.reject(new Error('none')),
      })
    ).stdout,
  );

describe('the common config fields have their spec types', () => {
  it('refuses dns, capabilities, args, runtimeConfig and ipam of the wrong type with code 7 naming the key', async () => {
    expect(await add({ dns: [1, 2] })).toMatchObject({ code: 7, msg: '"dns" must be an object, got [1,2]' });
    expect(await add({ dns: { nameservers: '10.0.0.1' } })).toMatchObject({ code: 7, msg: '"dns.nameservers" must be a list of strings' });
    expect(await add({ dns: { domain: 5 } })).toMatchObject({ code: 7, msg: '"dns.domain" must be a string' });
    for (const key of ['capabilities', 'args', 'runtimeConfig', 'ipam']) {
      expect(await add({ [key]: 'x' })).toMatchObject({ code: 7, msg: `"${key}" must be an object, got "x"` });
    }
  });

  it('passes well-typed dns through', async () => {
    const dns = { nameservers: ['10.0.0.53'], domain: 'example', search: ['a'], options: ['ndots:5'] };
    expect(await add({ dns })).toEqual({ cniVersion: '1.0.0', dns });
  });
});
