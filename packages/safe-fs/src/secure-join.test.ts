import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { secureJoin } from './secure-join.js';

let tmp: string;
let root: string;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'safe-fs-')));
  root = path.join(tmp, 'rootfs');
  fs.mkdirSync(path.join(root, 'run'), { recursive: true });
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('secureJoin', () => {
  it('resolves paths as a process whose root is the root directory would', () => {
    expect(secureJoin(root, '/etc/resolv.conf')).toBe(path.join(root, 'etc/resolv.conf'));
    expect(secureJoin(root, '../../../etc')).toBe(path.join(root, 'etc'));
    expect(secureJoin(root, '/a/../../b/./c')).toBe(path.join(root, 'b/c'));
  });

  it('follows links inside the root, an absolute target starting again at the root', () => {
    fs.mkdirSync(path.join(root, 'var'));
    fs.symlinkSync('/run', path.join(root, 'var', 'run'));
    fs.symlinkSync('../run', path.join(root, 'relative'));
    expect(secureJoin(root, '/var/run/secrets')).toBe(path.join(root, 'run/secrets'));
    expect(secureJoin(root, '/relative/x')).toBe(path.join(root, 'run/x'));
  });

  it('keeps a link that points at a host path inside the root', () => {
    fs.symlinkSync(tmp, path.join(root, 'escape'));
    fs.symlinkSync('../../../../../../..', path.join(root, 'up'));
    expect(secureJoin(root, '/escape/x')).toBe(path.join(root, tmp, 'x'));
    expect(secureJoin(root, '/up/etc/passwd')).toBe(path.join(root, 'etc/passwd'));
  });

  it('refuses a link loop', () => {
    fs.symlinkSync('/loop', path.join(root, 'loop'));
    expect(() => secureJoin(root, '/loop/x')).toThrow(/more than 40 symbolic links/);
  });
});
