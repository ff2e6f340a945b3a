import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryDatapath } from './datapath-memory.js';
import { CniError } from './errors.js';
import { InProcessInvoker } from './invoke-inprocess.js';
import { CniRuntime, parseConfList } from './runtime.js';
import type { CniPlugin } from './skeleton.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-rt-bad-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const echo: CniPlugin = {
  name: 'echo',
  async add(ctx) {
    return { cniVersion: ctx.version, ips: [{ address: '10.0.0.2/24' }] };
  },
  async del() {},
};
const list = { cniVersion: '1.0.0', name: 'net', plugins: [{ type: 'echo' }] };

function runtime(name: string, files: Record<string, string | { link: string } | { dir: true }>) {
  const dir = join(tmp, name);
  mkdirSync(join(dir, 'conf'), { recursive: true });
  for (const [f, c] of Object.entries(files)) {
    const p = join(dir, 'conf', f);
    if (typeof c === 'string') writeFileSync(p, c);
    else if ('link' in c) symlinkSync(c.link, p);
    else mkdirSync(p);
  }
  const invoker = new InProcessInvoker({ plugins: [echo], datapath: new MemoryDatapath() });
  return { dir, rt: new CniRuntime({ confDir: join(dir, 'conf'), cacheDir: join(dir, 'cache'), binDirs: [join(dir, 'bin')], invoker, resultCache: 'disk' }) };
}

async function rejection(p: Promise<unknown>): Promise<CniError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(CniError);
    return e as CniError;
  }
  throw new Error('expected a rejection');
}

describe('the runtime reads conf files and cached results with a bound', () => {
  it('a conf file that is a symlink to /dev/zero fails at once, naming the file', async () => {
    const { rt, dir } = runtime('zero', { '10-net.conflist': JSON.stringify(list), '20-zero.conf': { link: '/dev/zero' } });
    const e = await rejection(rt.listConfLists());
    expect(e.code).toBe(5);
    expect(e.message).toBe(`conf file ${join(dir, 'conf', '20-zero.conf')} is not a regular file`);
  });

  it('a conf file over 4 MiB is refused; a directory named like a conf file is skipped, as libcni does', async () => {
    const big = runtime('big', { '10-big.conflist': `${JSON.stringify(list)}${' '.repeat(4 << 20)}` });
    expect((await rejection(big.rt.listConfLists())).message).toMatch(/10-big\.conflist is larger than 4194304 bytes/);
    const withDir = runtime('dir', { '10-net.conflist': JSON.stringify(list), '20-dir.conf': { dir: true } });
    expect((await withDir.rt.listConfLists()).map((l) => l.name)).toEqual(['net']);
  });

  it('a cached result replaced by a device fails DEL and CHECK with code 5 instead of hanging; GC skips it', async () => {
    const { rt, dir } = runtime('cache', { '10-net.conflist': JSON.stringify(list) });
    const l = parseConfList(Buffer.from(JSON.stringify(list)));
    const att = { containerId: 'c1', netns: '/var/run/netns/x', ifname: 'eth0' };
    await rt.addNetworkList(l, att);
    const entry = join(dir, 'cache', 'results', 'net-c1-eth0');
    rmSync(entry);
    symlinkSync('/dev/zero', entry);
    const e = await rejection(rt.delNetworkList(l, att));
    expect(e.code).toBe(5);
    expect(e.message).toMatch(/cached result .*net-c1-eth0 is not a regular file/);
    expect((await rejection(rt.checkNetworkList(l, att))).code).toBe(5);
    expect(await rt.cachedAttachments(l)).toEqual([]);
  });
});
