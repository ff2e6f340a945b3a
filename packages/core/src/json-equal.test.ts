import { describe, expect, it } from 'vitest';
import { jsonEqual } from './json-equal.js';

describe('jsonEqual', () => {
  it('ignores member order and undefined members', () => {
    expect(jsonEqual({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 })).toBe(true);
    expect(jsonEqual({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(jsonEqual({ a: 1 }, { a: 1, b: undefined })).toBe(true);
  });

  it('tells apart a missing member, an extra one and a changed one', () => {
    expect(jsonEqual({ a: 1, b: 2 }, { a: 1 })).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(jsonEqual({ a: 1, b: 2 }, { a: 1, c: 2 })).toBe(false);
    expect(jsonEqual({ a: { b: 'x' } }, { a: { b: 'y' } })).toBe(false);
    // Same number of defined members, but not the same ones.
    expect(jsonEqual({ a: 1, b: undefined, c: 3 }, { a: 1, b: 2, c: undefined })).toBe(false);
  });

  it('keeps array order, length and kind apart', () => {
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual([1], [1, undefined])).toBe(false);
    expect(jsonEqual([], {})).toBe(false);
    expect(jsonEqual({ 0: 'a' }, ['a'])).toBe(false);
  });

  it('compares scalars by value and null apart from objects', () => {
    expect(jsonEqual('1', 1)).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
    expect(jsonEqual({}, null)).toBe(false);
    expect(jsonEqual(null, null)).toBe(true);
    expect(jsonEqual({ toString: 'x' }, {})).toBe(false);
    expect(jsonEqual({}, { toString: 'x' })).toBe(false);
  });
});
