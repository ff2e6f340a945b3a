import { describe, expect, it } from 'vitest';
import { BadRequestError } from './errors.js';
import { parseFieldSelector } from './fields.js';
import { kindInfo } from './kinds.js';
import { matchLabels, parseSelector, selectorFromLabelSelector } from './labels.js';

describe('label selectors', () => {
  const l = { app: 'web', tier: 'front', rev: '7' };
  it.each([
    ['', true],
    ['app=web', true],
    ['app==web', true],
    ['app!=web', false],
    ['app=db', false],
    ['app in (db, web)', true],
    ['app notin (web)', false],
    ['tier', true],
    ['!tier', false],
    ['!missing', true],
    ['missing!=x', true],
    ['app=web,tier=back', false],
    ['rev>5', true],
    ['rev<5', false],
    ['example.com/key', false],
  ])('%j matches %s', (sel, want) => {
    expect(parseSelector(sel).matches(l)).toBe(want);
  });

  it('canonical string form is sorted by key', () => {
    expect(parseSelector('b=1, a in (y,x)').toString()).toBe('a in (x,y),b=1');
  });

  it.each(['app in (', 'app=web,', '=x', 'app in x', 'bad key=1', 'a=b c'])('rejects %j as BadRequest', (bad) => {
    expect(() => parseSelector(bad)).toThrow(BadRequestError);
  });

  it('compiles matchLabels and matchExpressions', () => {
    const s = selectorFromLabelSelector({
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'tier', operator: 'In', values: ['front', 'mid'] },
        { key: 'legacy', operator: 'DoesNotExist' },
      ],
    });
    expect(s.matches(l)).toBe(true);
    expect(s.matches({ app: 'web', tier: 'back' })).toBe(false);
    expect(matchLabels({}, undefined)).toBe(true);
    expect(() => selectorFromLabelSelector({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] })).toThrow(BadRequestError);
  });
});

describe('field selectors', () => {
  it('parses, escapes and binds to a kind', () => {
    const f = parseFieldSelector('spec.nodeName=n1,status.phase!=Failed');
    const m = f.bind(kindInfo('Pod'));
    expect(m({ metadata: {}, spec: { nodeName: 'n1' }, status: { phase: 'Running' } })).toBe(true);
    expect(m({ metadata: {}, spec: { nodeName: 'n1' }, status: { phase: 'Failed' } })).toBe(false);
    expect(f.exactValue('spec.nodeName')).toBe('n1');
    expect(parseFieldSelector('metadata.name=a\\,b').requirements[0].value).toBe('a,b');
  });

  it('rejects unsupported fields and malformed input', () => {
    expect(() => parseFieldSelector('spec.nope=1').bind(kindInfo('Pod'))).toThrow(/field label not supported: spec.nope/);
    expect(() => parseFieldSelector('justaword')).toThrow(BadRequestError);
  });
});
