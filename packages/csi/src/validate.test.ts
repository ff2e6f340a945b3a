import { describe, expect, it } from 'vitest';
import { type CsiError, parseCode } from './errors.js';
import { formatSize, parseSize } from './quantity.js';
import { checkIdentifier, checkMountFlags, checkNodePath } from './validate.js';

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as CsiError).code;
  }
  return 0;
};

describe('checkIdentifier', () => {
  it.each(['pvc-1234', 'a.b_c-d', 'x'.repeat(128), 'sanity'])('accepts %s', (id) => {
    expect(code(() => checkIdentifier('volume_id', id))).toBe(0);
  });
  it.each(['..', 'a/../b', 'a/b', 'a\0b', '.', 'a..b', 'x'.repeat(129), 'a\\b', 'tab\there'])(
    'refuses %j',
    (id) => {
      expect(code(() => checkIdentifier('volume_id', id))).toBe(3);
    },
  );
  it('names the problem in the message', () => {
    expect(() => checkIdentifier('name', 'a/b')).toThrow('name "a/b" must not contain "/"');
  });
});

describe('checkNodePath', () => {
  const roots = ['/var/lib/kubelet'];
  it('accepts paths under a root and normalises them', () => {
    expect(checkNodePath('target_path', '/var/lib/kubelet/pods/x/mount/', roots)).toBe(
      '/var/lib/kubelet/pods/x/mount',
    );
  });
  it.each([
    ['relative', 'pods/x'],
    ['outside the roots', '/etc/passwd'],
    ['a sibling with the root as prefix', '/var/lib/kubelet-evil/x'],
    ['the root itself', '/var/lib/kubelet'],
    ['dot-dot segments', '/var/lib/kubelet/../../etc'],
    ['NUL', '/var/lib/kubelet/a\0b'],
  ])('refuses %s', (_what, p) => {
    expect(code(() => checkNodePath('target_path', p, roots))).toBe(3);
  });
  it('tells how to allow another root', () => {
    expect(() => checkNodePath('target_path', '/mnt/x', roots)).toThrow(/--path-root/);
  });
});

describe('mount flags, sizes and codes', () => {
  it('refuses unsupported mount flags', () => {
    expect(code(() => checkMountFlags(['ro', 'nosuid']))).toBe(0);
    expect(code(() => checkMountFlags(['uid=0']))).toBe(3);
  });
  it('parses Kubernetes quantities', () => {
    expect(parseSize('100Gi')).toBe(100 * 2 ** 30);
    expect(parseSize('1.5Ki')).toBe(1536);
    expect(parseSize('1G')).toBe(1e9);
    expect(parseSize('42')).toBe(42);
    expect(() => parseSize('10 apples')).toThrow(/invalid size "10 apples": use/);
    expect(() => parseSize('99999999Pi')).toThrow(/larger than/);
    expect(formatSize(10 * 2 ** 30)).toBe('10Gi');
  });
  it('parses gRPC codes by name or number', () => {
    expect(parseCode('NOT_FOUND')).toBe(5);
    expect(parseCode('unavailable')).toBe(14);
    expect(parseCode('8')).toBe(8);
    expect(() => parseCode('NOPE')).toThrow(/unknown gRPC status code/);
  });
});
