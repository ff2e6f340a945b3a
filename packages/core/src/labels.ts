// Label selectors: the string syntax (`a=b,c!=d,e in (x,y),!f,g>3`) and the structured form
// (matchLabels/matchExpressions), compiled to one Selector type.
import type { LabelSelector } from './api-meta.js';
import { BadRequestError } from './errors.js';
import { labelValue, qualifiedName } from './names.js';

export type SelectorOperator = '=' | '!=' | 'in' | 'notin' | 'exists' | '!' | 'gt' | 'lt';

export interface Requirement {
  key: string;
  operator: SelectorOperator;
  values: string[];
}

export type Labels = Record<string, string> | undefined;

export class Selector {
  readonly requirements: readonly Requirement[];

  constructor(requirements: Requirement[]) {
    // Sorted by key so toString is canonical, as the API machinery does.
    this.requirements = [...requirements].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /** True for the selector that selects everything. */
  empty(): boolean {
    return this.requirements.length === 0;
  }

  matches(labels: Labels): boolean {
    for (const r of this.requirements) if (!requirementMatches(r, labels)) return false;
    return true;
  }

  /** The value a requirement pins with `=`/`in` of one value, for index lookups. */
  exactValue(key: string): string | undefined {
    for (const r of this.requirements) {
      if (r.key === key && (r.operator === '=' || r.operator === 'in') && r.values.length === 1) return r.values[0];
    }
    return undefined;
  }

  toString(): string {
    return this.requirements.map(requirementString).join(',');
  }
}

function requirementMatches(r: Requirement, labels: Labels): boolean {
  const has = labels !== undefined && Object.hasOwn(labels, r.key);
  const v = has ? labels![r.key] : undefined;
  switch (r.operator) {
    case '=':
    case 'in':
      return has && r.values.includes(v!);
    case '!=':
    case 'notin':
      return !has || !r.values.includes(v!);
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt':
    case 'lt': {
      if (!has || !/^-?\d+$/.test(v!)) return false;
      const n = Number(v);
      const ref = Number(r.values[0]);
      return r.operator === 'gt' ? n > ref : n < ref;
    }
  }
}

function requirementString(r: Requirement): string {
  switch (r.operator) {
    case '=':
      return `${r.key}=${r.values[0]}`;
    case '!=':
      return `${r.key}!=${r.values[0]}`;
    case 'in':
      return `${r.key} in (${[...r.values].sort().join(',')})`;
    case 'notin':
      return `${r.key} notin (${[...r.values].sort().join(',')})`;
    case 'exists':
      return r.key;
    case '!':
      return `!${r.key}`;
    case 'gt':
      return `${r.key}>${r.values[0]}`;
    case 'lt':
      return `${r.key}<${r.values[0]}`;
  }
}

export const everything = new Selector([]);

function checkKey(key: string): void {
  const errs = qualifiedName(key);
  if (errs.length) throw new BadRequestError(`unable to parse requirement: invalid label key "${key}": ${errs.join('; ')}`);
}

function checkValue(v: string): void {
  const errs = labelValue(v);
  if (errs.length) throw new BadRequestError(`unable to parse requirement: invalid label value: "${v}": ${errs.join('; ')}`);
}

function makeRequirement(key: string, operator: SelectorOperator, values: string[]): Requirement {
  checkKey(key);
  if ((operator === 'in' || operator === 'notin') && values.length === 0) {
    throw new BadRequestError('unable to parse requirement: for \'in\', \'notin\' operators, values set can\'t be empty');
  }
  if ((operator === '=' || operator === '!=') && values.length !== 1) {
    throw new BadRequestError('unable to parse requirement: exact-match compatibility requires one single value');
  }
  if (operator === 'gt' || operator === 'lt') {
    if (values.length !== 1 || !/^-?\d+$/.test(values[0])) {
      throw new BadRequestError(`unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer`);
    }
  } else values.forEach(checkValue);
  return { key, operator, values };
}

/** Parse the string form used by `kubectl -l` and `?labelSelector=`. Empty string selects everything. */
export function parseSelector(input: string): Selector {
  const s = input.trim();
  if (s === '') return everything;
  const reqs: Requirement[] = [];
  let i = 0;
  const n = s.length;
  const ws = () => {
    while (i < n && (s[i] === ' ' || s[i] === '\t')) i++;
  };
  const ident = (): string => {
    ws();
    const start = i;
    while (i < n && !' \t,()!=<>'.includes(s[i])) i++;
    return s.slice(start, i);
  };
  const fail = (what: string): never => {
    throw new BadRequestError(`unable to parse requirement: ${what} in label selector "${input}"`);
  };
  while (i < n) {
    ws();
    if (s[i] === '!') {
      i++;
      const key = ident();
      if (!key) fail('found \'!\' without a key');
      reqs.push(makeRequirement(key, '!', []));
    } else {
      const key = ident();
      if (!key) fail(`expected a key at position ${i}`);
      ws();
      if (i >= n || s[i] === ',') {
        reqs.push(makeRequirement(key, 'exists', []));
      } else if (s.startsWith('==', i) || s[i] === '=' || s.startsWith('!=', i)) {
        const op: SelectorOperator = s.startsWith('!=', i) ? '!=' : '=';
        i += s.startsWith('==', i) || op === '!=' ? 2 : 1;
        const v = ident();
        reqs.push(makeRequirement(key, op, [v]));
      } else if (s[i] === '>' || s[i] === '<') {
        const op: SelectorOperator = s[i] === '>' ? 'gt' : 'lt';
        i++;
        reqs.push(makeRequirement(key, op, [ident()]));
      } else {
        const word = ident();
        if (word !== 'in' && word !== 'notin') fail(`found '${word}', expected: in, notin, =, ==, !=, gt, lt`);
        ws();
        if (s[i] !== '(') fail(`found '${s[i] ?? ''}', expected: '('`);
        i++;
        const values: string[] = [];
        for (;;) {
          const v = ident();
          ws();
          if (s[i] === ',') {
            values.push(v);
            i++;
          } else if (s[i] === ')') {
            if (v !== '' || values.length > 0) values.push(v);
            i++;
            break;
          } else fail(`found '${s[i] ?? 'end of string'}', expected: ',' or ')'`);
        }
        reqs.push(makeRequirement(key, word as SelectorOperator, values));
      }
    }
    ws();
    if (i < n) {
      if (s[i] !== ',') fail(`found '${s[i]}', expected: ','`);
      i++;
      ws();
      if (i >= n) fail('found end of string after \',\'');
    }
  }
  return new Selector(reqs);
}

/** Compile a structured LabelSelector. `undefined` selects everything; `{}` also selects everything. */
export function selectorFromLabelSelector(ls: LabelSelector | undefined | null): Selector {
  if (!ls) return everything;
  const reqs: Requirement[] = [];
  for (const [k, v] of Object.entries(ls.matchLabels ?? {})) reqs.push(makeRequirement(k, '=', [v]));
  for (const e of ls.matchExpressions ?? []) {
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
        reqs.push(makeRequirement(e.key, 'in', values));
        break;
      case 'NotIn':
        reqs.push(makeRequirement(e.key, 'notin', values));
        break;
      case 'Exists':
        if (values.length) throw new BadRequestError('values: Invalid value: must be empty when `operator` is \'Exists\'');
        reqs.push(makeRequirement(e.key, 'exists', []));
        break;
      case 'DoesNotExist':
        if (values.length) throw new BadRequestError('values: Invalid value: must be empty when `operator` is \'DoesNotExist\'');
        reqs.push(makeRequirement(e.key, '!', []));
        break;
      default:
        throw new BadRequestError(`"${String(e.operator)}" is not a valid label selector operator`);
    }
  }
  return new Selector(reqs);
}

/** Selector matching exactly the given labels (`a=b,c=d`). */
export function selectorFromSet(set: Record<string, string>): Selector {
  return new Selector(Object.entries(set).map(([k, v]) => makeRequirement(k, '=', [v])));
}

/** Accept any selector form: string, structured, compiled or undefined. */
export function toSelector(sel: string | LabelSelector | Selector | undefined | null): Selector {
  if (sel === undefined || sel === null) return everything;
  if (sel instanceof Selector) return sel;
  if (typeof sel === 'string') return parseSelector(sel);
  return selectorFromLabelSelector(sel);
}

/** Convenience: does `labels` match the selector given in any form? */
export function matchLabels(sel: string | LabelSelector | Selector | undefined, labels: Labels): boolean {
  return toSelector(sel).matches(labels);
}
