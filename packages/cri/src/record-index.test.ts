import { describe, expect, it } from 'vitest';
import { RecordIndex } from './record-index.js';

interface Rec {
  id: string;
  group: string;
  labels?: Record<string, string>;
}

const index = () => new RecordIndex<Rec>((r) => r.labels, (r) => r.group);
const ids = (rs: Rec[]) => rs.map((r) => r.id).sort();

describe('RecordIndex', () => {
  it('answers a label selector with exactly the records holding every entry', () => {
    const x = index();
    x.set('a', { id: 'a', group: 's1', labels: { uid: 'u1', name: 'web' } });
    x.set('b', { id: 'b', group: 's1', labels: { uid: 'u1', name: 'side' } });
    x.set('c', { id: 'c', group: 's2', labels: { uid: 'u2', name: 'web' } });
    x.set('d', { id: 'd', group: 's2' });
    expect(ids(x.matching({ uid: 'u1' }))).toEqual(['a', 'b']);
    expect(ids(x.matching({ uid: 'u1', name: 'web' }))).toEqual(['a']);
    expect(ids(x.matching({ name: 'web' }))).toEqual(['a', 'c']);
    expect(x.matching({ uid: 'u1', name: 'nope' })).toEqual([]);
    expect(x.matching({ missing: '' })).toEqual([]);
    // A label present with the empty value is matched by the empty value only.
    x.set('e', { id: 'e', group: 's3', labels: { uid: '' } });
    expect(ids(x.matching({ uid: '' }))).toEqual(['e']);
    expect(ids(x.matching({}))).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(ids(x.matching(undefined))).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('groups records and keeps both indexes right across delete, replace and clear', () => {
    const x = index();
    x.set('a', { id: 'a', group: 's1', labels: { uid: 'u1' } });
    x.set('b', { id: 'b', group: 's1', labels: { uid: 'u1' } });
    expect(ids(x.inGroup('s1'))).toEqual(['a', 'b']);
    expect(x.delete('a')).toBe(true);
    expect(x.delete('a')).toBe(false);
    expect(ids(x.inGroup('s1'))).toEqual(['b']);
    expect(ids(x.matching({ uid: 'u1' }))).toEqual(['b']);
    // Setting an id again replaces what it was indexed under.
    x.set('b', { id: 'b', group: 's2', labels: { uid: 'u2' } });
    expect(x.inGroup('s1')).toEqual([]);
    expect(x.matching({ uid: 'u1' })).toEqual([]);
    expect(ids(x.matching({ uid: 'u2' }))).toEqual(['b']);
    expect(ids(x.inGroup('s2'))).toEqual(['b']);
    expect(x.size).toBe(1);
    x.clear();
    expect(x.size).toBe(0);
    expect(x.matching({ uid: 'u2' })).toEqual([]);
    expect(x.inGroup('s2')).toEqual([]);
  });
});
