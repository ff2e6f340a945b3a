// The simple JSON paths CRDs use in printer columns and the scale subresource: `.spec.replicas`,
// `.metadata.labels['app.kubernetes.io/name']`, `.spec.ports[0].port`, `.items[*].name`, and filters
// `.status.conditions[?(@.type=="Ready")].status`.
import { BadRequestError } from '@kemu/core';

type Step = { key: string } | { index: number } | { all: true } | { filter: { path: string[]; value: unknown } };

/** Parse a path; a BadRequest names what is not understood. */
export function parseJsonPath(path: string): Step[] {
  const src = path.replace(/^\{(.*)\}$/, '$1');
  const steps: Step[] = [];
  let i = 0;
  const fail = (why: string) => new BadRequestError(`JSON path "${path}": ${why} at offset ${i}`);
  if (src[0] === '$') i++;
  while (i < src.length) {
    if (src[i] === '.') {
      i++;
      const m = /^[A-Za-z0-9_-]+/.exec(src.slice(i));
      if (!m) throw fail('expected a field name');
      steps.push({ key: m[0] });
      i += m[0].length;
    } else if (src[i] === '[') {
      const close = src.indexOf(']', i);
      if (close < 0) throw fail('unclosed [');
      const inner = src.slice(i + 1, close).trim();
      i = close + 1;
      let m: RegExpExecArray | null;
      if (inner === '*') steps.push({ all: true });
      else if ((m = /^-?\d+$/.exec(inner))) steps.push({ index: Number(m[0]) });
      else if ((m = /^'([^']*)'$/.exec(inner) ?? /^"([^"]*)"$/.exec(inner))) steps.push({ key: m[1] });
      else if ((m = /^\?\(@((?:\.[A-Za-z0-9_-]+)+)\s*==\s*(?:"([^"]*)"|'([^']*)'|(-?\d+(?:\.\d+)?|true|false))\)$/.exec(inner)))
        steps.push({ filter: { path: m[1].slice(1).split('.'), value: m[2] ?? m[3] ?? JSON.parse(m[4]) } });
      else throw fail(`unsupported selector [${inner}]`);
    } else throw fail(`unexpected "${src[i]}"`);
  }
  return steps;
}

/** Every value the path finds in an object. */
export function findAll(obj: unknown, steps: Step[]): unknown[] {
  let cur: unknown[] = [obj];
  for (const s of steps) {
    const next: unknown[] = [];
    for (const v of cur) {
      if ('key' in s) {
        if (v && typeof v === 'object' && !Array.isArray(v) && s.key in v) next.push((v as Record<string, unknown>)[s.key]);
      } else if ('index' in s) {
        if (Array.isArray(v)) {
          const x = v[s.index < 0 ? v.length + s.index : s.index];
          if (x !== undefined) next.push(x);
        }
      } else if ('all' in s) {
        if (Array.isArray(v)) next.push(...v);
        else if (v && typeof v === 'object') next.push(...Object.values(v));
      } else if (Array.isArray(v)) {
        for (const x of v) {
          let y: unknown = x;
          for (const k of s.filter.path) y = y && typeof y === 'object' ? (y as Record<string, unknown>)[k] : undefined;
          if (y === s.filter.value) next.push(x);
        }
      }
    }
    cur = next;
  }
  return cur;
}
