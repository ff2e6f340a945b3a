import { spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { NotFoundError } from './errors.js';
import { storeContract } from './store-contract.suite.js';
import { FileStore, FileStoreError } from './store-file.js';
import { applyToModel } from './testdata/crash-ops.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'kemu-filestore-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

storeContract('file', async () => {
  // A small snapshot interval so the contract also runs across snapshot and segment rotation.
  const store = await FileStore.open({ dir: tempDir(), bookmarkIntervalMs: 100, snapshotEvery: 64 });
  return { store, compact: async (rv) => store.compact(Number(rv)), cleanup: () => store.close() };
});

const cm = (name: string, v: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: { v } });

describe('FileStore durability', () => {
  it('restarts with the same objects, uids and resourceVersions', async () => {
    const dir = tempDir();
    const a = await FileStore.open({ dir });
    const x = await a.create(cm('x', '1'));
    await a.create(cm('y', '1'));
    const x2 = await a.update({ ...x, data: { v: '2' } });
    await a.delete('ConfigMap', 'default', 'y');
    const rv = await a.resourceVersion();
    await a.close();
    const b = await FileStore.open({ dir });
    expect(await b.get('ConfigMap', 'default', 'x')).toEqual(x2);
    await expect(b.get('ConfigMap', 'default', 'y')).rejects.toBeInstanceOf(NotFoundError);
    expect(await b.resourceVersion()).toBe(rv);
    // New writes continue the resourceVersion sequence.
    const z = await b.create(cm('z', '1'));
    expect(Number(z.metadata.resourceVersion)).toBe(Number(rv) + 1);
    // History from before the restart is gone: such a watch must relist.
    const err = await b.watch('ConfigMap', { resourceVersion: x.metadata.resourceVersion }).catch((e) => e);
    expect(err.code).toBe(410);
    await b.close();
  });

  it('snapshots rotate the log and recovery uses the snapshot plus the newer log', async () => {
    const dir = tempDir();
    const a = await FileStore.open({ dir, snapshotEvery: 10 });
    for (let i = 0; i < 35; i++) await a.create(cm(`c${i}`, String(i)));
    await a.delete('ConfigMap', 'default', 'c3');
    await a.snapshot();
    await a.create(cm('after', 'x'));
    await a.close();
    const files = readdirSync(dir).sort();
    expect(files.filter((f) => f.startsWith('snapshot-'))).toHaveLength(1);
    expect(files.filter((f) => f.startsWith('wal-'))).toHaveLength(1);
    const b = await FileStore.open({ dir });
    expect(b.recovery.snapshotRv).toBeGreaterThan(0);
    expect(b.recovery.replayed).toBe(1);
    const names = (await b.list('ConfigMap', { namespace: 'default' })).items.map((i) => i.metadata.name);
    expect(names).toHaveLength(35);
    expect(names).toContain('after');
    expect(names).not.toContain('c3');
    await b.close();
  });

  it('cuts a torn final record and keeps everything before it', async () => {
    const dir = tempDir();
    const a = await FileStore.open({ dir });
    await a.create(cm('kept', '1'));
    await a.create(cm('torn', '1'));
    await a.close();
    const wal = join(dir, readdirSync(dir).find((f) => f.startsWith('wal-'))!);
    const size = statSync(wal).size;
    truncateSync(wal, size - 7); // the last record loses its tail, as a crash mid-write would leave it
    const b = await FileStore.open({ dir });
    expect(b.recovery.tornBytes).toBeGreaterThan(0);
    await b.get('ConfigMap', 'default', 'kept');
    await expect(b.get('ConfigMap', 'default', 'torn')).rejects.toBeInstanceOf(NotFoundError);
    // The log stays appendable after the cut.
    await b.create(cm('next', '1'));
    await b.close();
    const c = await FileStore.open({ dir });
    await c.get('ConfigMap', 'default', 'next');
    expect(c.recovery.tornBytes).toBe(0);
    await c.close();
  });

  it('refuses to start on damage that is not a torn tail, and leaves the files alone', async () => {
    const dir = tempDir();
    const a = await FileStore.open({ dir });
    await a.create(cm('a', '1'));
    await a.create(cm('b', '1'));
    await a.close();
    const wal = join(dir, readdirSync(dir).find((f) => f.startsWith('wal-'))!);
    const buf = readFileSync(wal);
    buf[20] ^= 0xff; // flip a byte inside the first record
    writeFileSync(wal, buf);
    const err = await FileStore.open({ dir }).catch((e) => e);
    expect(err).toBeInstanceOf(FileStoreError);
    expect(err.message).toMatch(/checksum mismatch at offset 0 .* refusing to start/);
    expect(readFileSync(wal)).toEqual(buf);
  });

  it('ignores an incomplete snapshot and falls back to the log', async () => {
    const dir = tempDir();
    const a = await FileStore.open({ dir });
    await a.create(cm('a', '1'));
    await a.close();
    writeFileSync(join(dir, `snapshot-${'9'.padStart(20, '0')}.json`), '{"rv":9,"count":3}\n{"k":"ConfigMap"');
    appendFileSync(join(dir, 'junk.tmp'), 'x');
    const b = await FileStore.open({ dir });
    await b.get('ConfigMap', 'default', 'a');
    expect(readdirSync(dir)).not.toContain('junk.tmp');
    await b.close();
  });

  it('refuses a directory locked by a live process, or already open in this one', async () => {
    const dir = tempDir();
    const a = await FileStore.open({ dir });
    const twice = await FileStore.open({ dir }).catch((e) => e);
    expect(twice.message).toBe(`${dir} is already open in this process; close the other FileStore first`);
    await a.close();
    writeFileSync(join(dir, 'LOCK'), '1'); // pid 1 is alive
    const err = await FileStore.open({ dir }).catch((e) => e);
    expect(err.message).toBe(`${dir} is in use by process 1; stop it or use another directory`);
    rmSync(join(dir, 'LOCK'));
    await (await FileStore.open({ dir })).close();
  });

  it('refuses a log, snapshot or lock that is a symlink or not a regular file, and leaves it alone', async () => {
    const planted: [string, (p: string) => void][] = [
      [`wal-${'0'.padStart(20, '0')}.log`, (p) => symlinkSync('/dev/zero', p)],
      [`snapshot-${'5'.padStart(20, '0')}.json`, (p) => symlinkSync('/dev/zero', p)],
      [`snapshot-${'6'.padStart(20, '0')}.json`, (p) => expect(spawnSync('mkfifo', [p]).status).toBe(0)],
      ['LOCK', (p) => symlinkSync('/dev/zero', p)],
    ];
    for (const [name, plant] of planted) {
      const dir = tempDir();
      plant(join(dir, name));
      const err = await FileStore.open({ dir }).catch((e) => e);
      expect(err, name).toBeInstanceOf(FileStoreError);
      expect(err.message).toMatch(new RegExp(`${name} is (a symbolic link|not a regular file); .* remove it$`));
      expect(readdirSync(dir)).toContain(name);
    }
  });
});

describe('FileStore crash test', () => {
  it('50 SIGKILLs at random moments lose no acknowledged write and invent none', { timeout: 120_000 }, async () => {
    const dir = tempDir();
    const source = join(dirname(fileURLToPath(import.meta.url)), 'testdata', 'crash-writer.ts');
    // Bundle the child once so each of the 50 restarts is a plain `node` start (tsx costs ~0.6 s each);
    // fall back to tsx when esbuild is not installed.
    let args = ['--import', 'tsx', source];
    try {
      const esbuild = await import('esbuild');
      const out = join(dir, '..', `${dir.split('/').pop()}-child.mjs`);
      dirs.push(out);
      await esbuild.build({ entryPoints: [source], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: out, logLevel: 'silent' });
      args = [out];
    } catch {
      // tsx it is
    }
    // Three concurrent writers with disjoint keys: their writes share WAL batches and fsyncs.
    const WRITERS = 3;
    const models = Array.from({ length: WRITERS }, () => new Map<string, string>());
    const next = Array.from({ length: WRITERS }, () => 0); // ops applied to each model so far
    let totalAcked = 0;
    let inflightLanded = 0;
    for (let round = 0; round < 50; round++) {
      const proc = spawn(process.execPath, [...args, dir, next.join(',')], { stdio: ['ignore', 'pipe', 'pipe'], cwd: dirname(source) });
      const lastAck = next.map((n) => n - 1);
      let buf = '';
      let stderr = '';
      proc.stderr.on('data', (d) => {
        stderr += d;
      });
      const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
      await new Promise<void>((resolve, reject) => {
        proc.stdout.on('data', (d: Buffer) => {
          buf += d.toString();
          let nl = buf.indexOf('\n');
          while (nl >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            if (line === 'ready') {
              // Kill somewhere in the next 0-250 ms: mid-write, mid-fsync, mid-snapshot, ...
              setTimeout(() => proc.kill('SIGKILL'), Math.random() * 250);
              resolve();
            } else {
              const m = /^(\d+):(\d+)$/.exec(line);
              if (m) lastAck[Number(m[1])] = Number(m[2]);
            }
            nl = buf.indexOf('\n');
          }
        });
        exited.then(() => resolve());
        setTimeout(() => reject(new Error(`child did not start: ${stderr}`)), 30_000).unref();
      });
      const code = await exited;
      expect(code, stderr).toBeNull(); // killed, not crashed
      const store = await FileStore.open({ dir, noBootstrap: true });
      const items = (await store.list('ConfigMap', { namespace: 'default' })).items;
      await store.close();
      const state = new Map(items.map((i) => [i.metadata.name!, i.data?.v as string]));
      const keysOf = (w: number) => new Map([...state].filter(([k]) => k.startsWith(`w${w}-`)));
      expect(items.every((i) => /^w\d+-k\d+$/.test(i.metadata.name!))).toBe(true);
      for (let w = 0; w < WRITERS; w++) {
        // Exactly the acknowledged ops; the one in flight may or may not have landed.
        for (let i = next[w]; i <= lastAck[w]; i++) await applyToModel(models[w], w, i);
        totalAcked += lastAck[w] - next[w] + 1;
        const withInflight = new Map(models[w]);
        await applyToModel(withInflight, w, lastAck[w] + 1);
        const mine = keysOf(w);
        const same = (m: Map<string, string>) => m.size === mine.size && [...m].every(([k, v]) => mine.get(k) === v);
        if (same(models[w])) next[w] = lastAck[w] + 1;
        else if (same(withInflight)) {
          await applyToModel(models[w], w, lastAck[w] + 1);
          next[w] = lastAck[w] + 2;
          inflightLanded++;
        } else {
          expect(Object.fromEntries(mine), `round ${round}, writer ${w}: state after restart`).toEqual(Object.fromEntries(models[w]));
        }
      }
    }
    expect(totalAcked).toBeGreaterThan(100);
    console.log(`crash test: 50 kills, ${totalAcked} acknowledged writes verified, ${inflightLanded} unacknowledged in-flight writes found applied`);
  });
});
