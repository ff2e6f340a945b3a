// Errors cross bundle boundaries (plugin executables bundle their own copy of this package): they are
// recognised by shape, not by class identity.
import { describe, expect, it } from 'vitest';
import { DatapathError, ignoreNotFound, isDatapathError } from './datapath.js';
import { CniError, toCniError } from './errors.js';

class ForeignDatapathError extends Error {
  override readonly name = 'DatapathError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

describe('errors from another copy of the module', () => {
  it('a foreign DatapathError is still a DatapathError, so DEL stays idempotent', async () => {
    const foreign = new ForeignDatapathError('ENOENT', 'Cannot find device "eth0"');
    expect(foreign instanceof DatapathError).toBe(false);
    expect(isDatapathError(foreign, 'ENOENT')).toBe(true);
    expect(isDatapathError(foreign, 'EEXIST')).toBe(false);
    await expect(ignoreNotFound(() => Promise.reject(foreign))).resolves.toBeUndefined();
    expect(isDatapathError(new Error('plain'))).toBe(false);
    expect(isDatapathError({ name: 'DatapathError', code: 'ENOENT' })).toBe(false);
  });

  it('a foreign CniError keeps its code and details', () => {
    class ForeignCniError extends Error {
      override readonly name = 'CniError';
      constructor(
        readonly code: number,
        msg: string,
        readonly details = '',
      ) {
        super(msg);
      }
    }
    const e = toCniError(new ForeignCniError(7, 'bad config', 'key "bridge"'));
    expect(e).toBeInstanceOf(CniError);
    expect(e).toMatchObject({ code: 7, message: 'bad config', details: 'key "bridge"' });
  });
});
