import { describe, expect, it } from 'vitest';
import { checkIdSyntax, IdIndex, newId } from './ids';

describe('newId', () => {
  it('gives 64 lowercase hex digits, never the same twice, across many refills of its random pool', () => {
    const ids = Array.from({ length: 1000 }, () => newId());
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // No id is a copy of part of another (a pool slice handed out twice would show up as one).
    expect(new Set(ids.map((id) => id.slice(0, 16))).size).toBe(ids.length);
    for (const id of ids) expect(checkIdSyntax(id, 'sandbox')).toBe(id);
  });

  it('ids resolve by unique prefix', () => {
    const index = new IdIndex();
    const a = newId();
    index.add(a);
    expect(index.resolve(a.slice(0, 12))).toBe(a);
  });
});
