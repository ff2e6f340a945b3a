import { describe, expect, it } from 'vitest';
import { compareQuantities, parseQuantity, Quantity, QuantityError } from './quantity.js';

describe('quantity', () => {
  it.each([
    ['100m', 100, '100m'],
    ['1', 1000, '1'],
    ['1.5', 1500, '1500m'],
    ['0.5', 500, '500m'],
    ['2e3', 2_000_000, '2e3'],
    ['1000m', 1000, '1'],
    ['1k', 1_000_000, '1k'],
    ['1.5Gi', 1536 * 1024 * 1024 * 1000, '1536Mi'],
    ['1Gi', 1024 ** 3 * 1000, '1Gi'],
    ['1024Mi', 1024 ** 3 * 1000, '1Gi'],
    ['128974848', 128974848000, '128974848'],
    ['129e6', 129e9, '129e6'],
    ['123Mi', 123 * 1024 * 1024 * 1000, '123Mi'],
    ['-5m', -5, '-5m'],
    ['0', 0, '0'],
    ['1n', 1, '1n'],
  ])('parses %s', (input, milli, canonical) => {
    const q = parseQuantity(input);
    expect(q.milliValue()).toBe(milli === 1 && input === '1n' ? 1 : milli);
    expect(q.toString()).toBe(canonical);
  });

  it('rounds values up like Kubernetes Value()/MilliValue()', () => {
    expect(parseQuantity('100m').value()).toBe(1);
    expect(parseQuantity('1n').milliValue()).toBe(1);
    expect(parseQuantity('1.5').value()).toBe(2);
  });

  it('compares and does arithmetic exactly', () => {
    expect(compareQuantities('1Gi', '1024Mi')).toBe(0);
    expect(compareQuantities('1G', '1Gi')).toBe(-1);
    expect(compareQuantities('2', '1500m')).toBe(1);
    expect(parseQuantity('250m').add('750m').toString()).toBe('1');
    expect(parseQuantity('1Gi').sub('512Mi').toString()).toBe('512Mi');
    expect(Quantity.fromMilli(1500).toString()).toBe('1500m');
    expect(parseQuantity(0.25).toString()).toBe('250m');
    expect(JSON.stringify({ q: parseQuantity('2Gi') })).toBe('{"q":"2Gi"}');
  });

  it.each(['', 'abc', '1.2.3', '1Kb', '--1', '1 Gi', 'Gi', '1e'])('rejects %j', (bad) => {
    expect(() => parseQuantity(bad)).toThrow(QuantityError);
  });
});
