import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AtomicWriter, DATA_DIR_NAME, type FileProjection, PayloadPathError } from './atomic-writer.js';

let root: string;
let vol: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-atomic-'));
  vol = path.join(root, 'vol');
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const payload = (entries: Record<string, string | [string, number]>) =>
  new Map<string, FileProjection>(
    Object.entries(entries).map(([k, v]) => [k, typeof v === 'string' ? { data: Buffer.from(v), mode: 0o644 } : { data: Buffer.from(v[0]), mode: v[1] }]),
  );

describe('AtomicWriter', () => {
  it('publishes files through ..data and user-visible symlinks, with the modes given', () => {
    const w = new AtomicWriter(vol);
    expect(w.write(payload({ 'app.properties': 'a=1\n', 'nested/dir/key': ['secret', 0o400], 'run.sh': ['#!/bin/sh', 0o755] }))).toBe(true);
    const data = fs.readlinkSync(path.join(vol, DATA_DIR_NAME));
    expect(data).toMatch(/^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\..+$/);
    expect(fs.readlinkSync(path.join(vol, 'app.properties'))).toBe('..data/app.properties');
    expect(fs.readlinkSync(path.join(vol, 'nested'))).toBe('..data/nested');
    expect(fs.readFileSync(path.join(vol, 'app.properties'), 'utf8')).toBe('a=1\n');
    expect(fs.readFileSync(path.join(vol, 'nested/dir/key'), 'utf8')).toBe('secret');
    expect(fs.statSync(path.join(vol, 'nested/dir/key')).mode & 0o777).toBe(0o400);
    expect(fs.statSync(path.join(vol, 'run.sh')).mode & 0o777).toBe(0o755);
    expect(fs.readdirSync(vol).sort()).toEqual([DATA_DIR_NAME, data, 'app.properties', 'nested', 'run.sh'].sort());
  });

  it('swaps to a new version, drops removed keys and the old version, and skips an unchanged payload', () => {
    const w = new AtomicWriter(vol);
    w.write(payload({ a: '1', b: '2' }));
    const first = fs.readlinkSync(path.join(vol, DATA_DIR_NAME));
    // A reader holding the old version's file keeps reading it whole while the swap happens.
    const held = fs.openSync(path.join(vol, 'a'), 'r');
    expect(w.write(payload({ a: '1', b: '2' }))).toBe(false);
    expect(fs.readlinkSync(path.join(vol, DATA_DIR_NAME))).toBe(first);
    expect(w.write(payload({ a: 'changed', c: '3' }))).toBe(true);
    const second = fs.readlinkSync(path.join(vol, DATA_DIR_NAME));
    expect(second).not.toBe(first);
    expect(fs.existsSync(path.join(vol, first))).toBe(false);
    expect(fs.readFileSync(held, 'utf8')).toBe('1');
    fs.closeSync(held);
    expect(fs.readFileSync(path.join(vol, 'a'), 'utf8')).toBe('changed');
    expect(fs.existsSync(path.join(vol, 'b'))).toBe(false);
    expect(fs.lstatSync(path.join(vol, 'b'), { throwIfNoEntry: false })).toBeUndefined();
    expect(fs.readFileSync(path.join(vol, 'c'), 'utf8')).toBe('3');
    // A mode change alone is a change.
    expect(w.write(payload({ a: ['changed', 0o600], c: '3' }))).toBe(true);
    expect(fs.statSync(path.join(vol, 'a')).mode & 0o777).toBe(0o600);
  });

  it('refuses paths that would leave the volume, writing nothing', () => {
    const w = new AtomicWriter(vol);
    w.write(payload({ ok: 'v1' }));
    const before = fs.readlinkSync(path.join(vol, DATA_DIR_NAME));
    for (const [bad, message] of [
      ['../escape', "invalid path: must not contain '..': ../escape"],
      ['a/../../escape', "invalid path: must not contain '..': a/../../escape"],
      ['/etc/passwd', 'invalid path: must be relative path: /etc/passwd'],
      ['..data/x', "invalid path: must not start with '..': ..data/x"],
      ['', 'invalid path: must not be empty: ""'],
    ] as const) {
      expect(() => w.write(payload({ ok: 'v2', [bad]: 'x' })), bad).toThrow(new PayloadPathError(message));
    }
    expect(fs.readlinkSync(path.join(vol, DATA_DIR_NAME))).toBe(before);
    expect(fs.readFileSync(path.join(vol, 'ok'), 'utf8')).toBe('v1');
    expect(fs.readdirSync(root)).toEqual(['vol']);
  });

  it('does not write through a symlink planted in the volume', () => {
    const outside = path.join(root, 'outside');
    fs.mkdirSync(outside);
    fs.mkdirSync(vol);
    fs.symlinkSync(outside, path.join(vol, 'conf'));
    const w = new AtomicWriter(vol);
    w.write(payload({ 'conf/evil': 'x', other: 'y' }));
    expect(fs.readdirSync(outside)).toEqual([]);
    const data = fs.readlinkSync(path.join(vol, DATA_DIR_NAME));
    expect(fs.readFileSync(path.join(vol, data, 'conf/evil'), 'utf8')).toBe('x');
  });
});

describe.runIf(process.getuid?.() === 0)('AtomicWriter with an fsGroup (as root, to give files away)', () => {
  it("gives every version to the pod's fsGroup: group-readable files, setgid group-searchable directories", () => {
    const w = new AtomicWriter(vol, 'volume', 5000);
    expect(w.write(payload({ 'creds/password': ['s3cr3t', 0o400], plain: 'x' }))).toBe(true);
    const data = path.join(vol, fs.readlinkSync(path.join(vol, DATA_DIR_NAME)));
    const file = fs.statSync(path.join(vol, 'creds/password'));
    expect([file.gid, file.mode & 0o7777]).toEqual([5000, 0o440]);
    expect(fs.statSync(path.join(vol, 'plain')).mode & 0o7777).toBe(0o644);
    for (const d of [vol, data, path.join(data, 'creds')]) {
      const st = fs.statSync(d);
      expect([d, st.gid, st.mode & 0o7777]).toEqual([d, 5000, 0o2755]);
    }
    expect(fs.lstatSync(path.join(vol, 'creds')).gid).toBe(5000);
    // The same payload again is already there: nothing is rewritten.
    expect(w.write(payload({ 'creds/password': ['s3cr3t', 0o400], plain: 'x' }))).toBe(false);
  });
});
