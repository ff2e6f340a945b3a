import { describe, expect, it } from 'vitest';
import { describeMissing, file, inCI, missingOf, probe, program, pythonModule, root } from './index.js';

describe('requirements', () => {
  it('finds programs on PATH and misses absent ones', () => {
    expect(program('node', 'nodejs').present()).toBe(true);
    expect(program('kemu-no-such-program-x', 'nothing').present()).toBe(false);
    expect(program(process.execPath, 'nodejs').present()).toBe(true);
  });

  it('checks files and python modules', () => {
    expect(file('/no/such/file/kemu', 'x').present()).toBe(false);
    expect(file(process.execPath, 'nodejs').present()).toBe(true);
    expect(pythonModule('kemu_no_such_module', 'python3-x').present()).toBe(false);
  });

  it('lists each missing requirement once and names its package', () => {
    const tshark = program('kemu-absent-tshark', 'tshark');
    const here = probe('always', 'n/a', () => true);
    const missing = missingOf([tshark, here, tshark, probe('broken', 'pkg-b', () => { throw new Error('x'); })]);
    expect(missing.map((m) => m.what)).toEqual(['kemu-absent-tshark', 'broken']);
    expect(describeMissing('tshark checks', missing)).toBe(
      'tshark checks needs kemu-absent-tshark (Debian package tshark), broken (Debian package pkg-b)',
    );
  });

  it('reads CI as CI providers set it', () => {
    expect(inCI({ CI: 'true' })).toBe(true);
    expect(inCI({ CI: '1' })).toBe(true);
    expect(inCI({ CI: 'false' })).toBe(false);
    expect(inCI({ CI: '0' })).toBe(false);
    expect(inCI({})).toBe(false);
  });

  it('says how to get what no Debian package brings', () => {
    expect(describeMissing('bind mounts', [root])).toBe('bind mounts needs root (run as root, as CI does)');
  });

  it('knows whether it runs as root', () => {
    expect(root.present()).toBe(process.getuid?.() === 0);
  });
});
