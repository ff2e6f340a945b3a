import { describe, expect, it } from 'vitest';
import { execDelegate } from './invoke-exec.js';
import { MAX_JSON_DEPTH, parseJson } from './parse-json.js';
import { parseConfList } from './runtime.js';
import { type CniPlugin, invokePlugin } from './skeleton.js';

const deep = (n: number) => `{"cniVersion":"1.0.0","name":"n","type":"t","ipam":${'['.repeat(n)}${']'.repeat(n)}}`;

describe('parseJson', () => {
  it('parses nesting up to the bound (brackets inside strings do not count) and refuses deeper with code 6', () => {
    expect(parseJson(deep(MAX_JSON_DEPTH - 1), 'x')).toMatchObject({ name: 'n' });
    expect(parseJson(`{"a":"${'['.repeat(5000)}"}`, 'x')).toEqual({ a: '['.repeat(5000) });
    // More brackets than the bound, side by side rather than nested: shallow, so parsed.
    expect(parseJson(`{"a":[${'[],'.repeat(600)}{}]}`, 'x')).toMatchObject({ a: expect.arrayContaining([[], {}]) });
    expect(() => parseJson(deep(MAX_JSON_DEPTH), 'x')).toThrow(`error parsing x: nested deeper than ${MAX_JSON_DEPTH} levels`);
    expect(() => parseJson('{', 'x')).toThrow(/error parsing x: /);
  });

  it('a plugin given a config nested 5000 deep answers code 6, not a stack overflow (999)', async () => {
    const p: CniPlugin = {
      name: 't',
      async add(ctx) {
        // What a plugin passing its config on (to IPAM) does.
        JSON.stringify(ctx.conf);
        return { cniVersion: ctx.version };
      },
      async del() {},
    };
    const env = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c', CNI_NETNS: '/x', CNI_IFNAME: 'eth0', CNI_PATH: '/x' };
    const out = await invokePlugin(p, { env, stdin: deep(5000), delegate: execDelegate, datapath: () => Promise.reject(new Error('none')) });
    expect(JSON.parse(out.stdout)).toEqual({ cniVersion: '1.1.0', code: 6, msg: 'error parsing network config: nested deeper than 512 levels' });
    expect(() => parseConfList(Buffer.from(deep(5000)), '/etc/cni/net.d/10-deep.conf')).toThrow(/10-deep\.conf: nested deeper/);
  });
});
