import { describe, expect, it } from 'vitest';
import { NodeInfo } from './node-info.js';
import { NodeStatusMap, tallyStatuses } from './node-statuses.js';
import { Status } from './status.js';
import { makeNode } from './testing.js';

describe('NodeStatusMap', () => {
  const nodes = ['a', 'b', 'c'].map((n) => new NodeInfo(makeNode(n)));
  const positions = new Map(nodes.map((n, i) => [n.name, i]));
  const cpu = Status.unschedulable('Insufficient cpu');
  const taint = Status.unresolvable('node(s) had untolerated taint {k: v}');

  it('behaves as a Map from node name to status, in node order', () => {
    const m = new NodeStatusMap(nodes, positions);
    m.setAt(2, cpu);
    m.set('a', taint);
    m.set('elsewhere', cpu);
    expect(m.size).toBe(3);
    expect(m.get('a')).toBe(taint);
    expect(m.get('b')).toBeUndefined();
    expect(m.has('c')).toBe(true);
    expect(m.has('b')).toBe(false);
    expect(m.get('elsewhere')).toBe(cpu);
    expect([...m.keys()]).toEqual(['a', 'c', 'elsewhere']);
    expect([...m]).toEqual([
      ['a', taint],
      ['c', cpu],
      ['elsewhere', cpu],
    ]);
    expect(m instanceof Map).toBe(true);
    const seen: string[] = [];
    m.forEach((_v, k) => seen.push(k));
    expect(seen).toEqual(['a', 'c', 'elsewhere']);
    expect(m.delete('c')).toBe(true);
    expect(m.delete('c')).toBe(false);
    expect(m.size).toBe(2);
    m.set('a', cpu);
    expect(m.size).toBe(2);
    m.clear();
    expect(m.size).toBe(0);
    expect([...m.values()]).toEqual([]);
  });

  it('tallies shared statuses the same way for a plain Map', () => {
    const m = new NodeStatusMap(nodes, positions);
    m.set('a', cpu).set('b', cpu).set('c', taint);
    const plain = new Map([...m]);
    const expected = new Map([
      [cpu, 2],
      [taint, 1],
    ]);
    expect(tallyStatuses(m)).toEqual(expected);
    expect(tallyStatuses(plain)).toEqual(expected);
    expect(tallyStatuses(plain.values())).toEqual(expected);
  });
});
