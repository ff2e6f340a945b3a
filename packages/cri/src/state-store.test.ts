// The state store's crash behaviour: changes are durable before a call returns (journal), files are
// written by compaction, a torn journal tail is ignored, and a reopened store sees exactly the last state.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileStateStore } from './state-store.js';
import { tempDir } from './test-util.js';

const id = (n: number) => n.toString(16).padStart(64, '0');

describe('FileStateStore', () => {
  it('recovers from the journal when the process dies before compaction', async () => {
    const dir = tempDir('kemu-cri-state-');
    const a = new FileStateStore(dir, { compactAfterMs: 60_000 });
    await a.save('sandboxes', id(1), { id: id(1), v: 1 });
    await a.save('sandboxes', id(1), { id: id(1), v: 2 });
    await a.save('containers', id(2), { id: id(2) });
    await a.save('containers', id(3), { id: id(3) });
    await a.remove('containers', id(3));
    // No close(): the journal is all there is on disk, like after a kill -9.
    expect(fs.readdirSync(path.join(dir, 'sandboxes'))).toEqual([]);
    const journal = fs.readdirSync(dir).find((f) => f.startsWith('journal-'))!;
    fs.appendFileSync(path.join(dir, journal), '{"k":"sandboxes","i":"torn'); // a write cut short by the crash
    const b = new FileStateStore(dir);
    expect(b.loadAll('sandboxes')).toEqual([{ id: id(1), v: 2 }]);
    expect(b.loadAll('containers')).toEqual([{ id: id(2) }]);
    // Recovery wrote the objects as files and dropped the replayed journal.
    expect(fs.readdirSync(path.join(dir, 'sandboxes'))).toEqual([`${id(1)}.json`]);
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('journal-'))).toHaveLength(1);
    await b.close();
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('journal-'))).toEqual([]);
  });

  it('compacts changed objects into atomic per-object files and skips objects that came and went', async () => {
    const dir = tempDir('kemu-cri-state-');
    const s = new FileStateStore(dir, { compactAfterMs: 10 });
    await s.save('sandboxes', id(7), { n: 1 });
    await s.save('sandboxes', id(8), { n: 2 });
    await s.remove('sandboxes', id(8));
    await s.compact();
    expect(fs.readdirSync(path.join(dir, 'sandboxes'))).toEqual([`${id(7)}.json`]);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'sandboxes', `${id(7)}.json`), 'utf8'))).toEqual({ n: 1 });
    await s.remove('sandboxes', id(7));
    await s.close();
    expect(fs.readdirSync(path.join(dir, 'sandboxes'))).toEqual([]);
    expect(new FileStateStore(dir).loadAll('sandboxes')).toEqual([]);
  });

  it('removes the files of compacted records, and never touches disk for a record that came and went', async () => {
    const dir = tempDir('kemu-cri-state-');
    const a = new FileStateStore(dir, { compactAfterMs: 60_000 });
    await a.save('sandboxes', id(1), { id: id(1) });
    await a.compact();
    expect(fs.readdirSync(path.join(dir, 'sandboxes'))).toEqual([`${id(1)}.json`]);
    await a.save('containers', id(2), { id: id(2) });
    await a.remove('containers', id(2));
    await a.remove('sandboxes', id(1));
    const rm = fs.promises.rm;
    const removed: string[] = [];
    fs.promises.rm = (async (p: fs.PathLike, o?: fs.RmOptions) => {
      removed.push(String(p));
      return rm(p, o);
    }) as typeof fs.promises.rm;
    try {
      await a.compact();
    } finally {
      fs.promises.rm = rm;
    }
    // The sandbox's file is gone; the container that never reached a file cost no call; only the
    // rotated-out journal joins it.
    expect(removed.filter((p) => !path.basename(p).startsWith('journal-'))).toEqual([path.join(dir, 'sandboxes', `${id(1)}.json`)]);
    expect(fs.readdirSync(path.join(dir, 'sandboxes'))).toEqual([]);
    expect(fs.readdirSync(path.join(dir, 'containers'))).toEqual([]);
    await a.close();
    const b = new FileStateStore(dir);
    expect(b.loadAll('sandboxes')).toEqual([]);
    expect(b.loadAll('containers')).toEqual([]);
    await b.close();
  });
});
