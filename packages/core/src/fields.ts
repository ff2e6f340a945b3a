// Field selectors (`spec.nodeName=n1,status.phase!=Failed`): parsed once, then bound to a kind's
// supported fields so an unsupported field is a BadRequest, as on the API server.
import { BadRequestError } from './errors.js';
import { type FieldGetter, fieldGetter, type KindInfo } from './kinds.js';

export interface FieldRequirement {
  field: string;
  operator: '=' | '!=';
  value: string;
}

export class FieldSelector {
  readonly requirements: readonly FieldRequirement[];

  constructor(requirements: FieldRequirement[]) {
    this.requirements = requirements;
  }

  empty(): boolean {
    return this.requirements.length === 0;
  }

  /** The value pinned by an `=` requirement on `field`, if any. */
  exactValue(field: string): string | undefined {
    return this.requirements.find((r) => r.field === field && r.operator === '=')?.value;
  }

  toString(): string {
    return this.requirements.map((r) => `${r.field}${r.operator}${escapeValue(r.value)}`).join(',');
  }

  /** Compile against a kind; throws BadRequest for fields the kind does not support. */
  bind(info: KindInfo): (obj: any) => boolean {
    if (this.requirements.length === 0) return () => true;
    const checks: [FieldGetter, boolean, string][] = this.requirements.map((r) => [
      fieldGetter(info, r.field),
      r.operator === '=',
      r.value,
    ]);
    return (obj) => {
      for (const [get, eq, v] of checks) if ((get(obj) === v) !== eq) return false;
      return true;
    };
  }
}

function escapeValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/,/g, '\\,').replace(/=/g, '\\=');
}

export const everyField = new FieldSelector([]);

/** Parse `a=b,c==d,e!=f`; `\` escapes `,`, `=` and `\` inside values. */
export function parseFieldSelector(input: string | undefined | null): FieldSelector {
  if (!input || input.trim() === '') return everyField;
  const parts: string[] = [];
  let cur = '';
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (c === '\\' && i + 1 < input.length) {
      cur += c + input[++i];
    } else if (c === ',') {
      parts.push(cur);
      cur = '';
    } else cur += c;
  }
  parts.push(cur);
  const reqs: FieldRequirement[] = [];
  for (const p of parts) {
    const m = /^([^=!\\]+?)\s*(==|=|!=)\s*(.*)$/.exec(p.trim());
    if (!m) throw new BadRequestError(`invalid selector: '${input}'; can't understand '${p}'`);
    const value = m[3].replace(/\\(.)/g, '$1');
    reqs.push({ field: m[1].trim(), operator: m[2] === '!=' ? '!=' : '=', value });
  }
  return new FieldSelector(reqs);
}

/** Accept a string or a parsed selector. */
export function toFieldSelector(sel: string | FieldSelector | undefined | null): FieldSelector {
  return sel instanceof FieldSelector ? sel : parseFieldSelector(sel);
}
