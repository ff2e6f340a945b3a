// CEL for admission (ValidatingAdmissionPolicy and webhook matchConditions), on @bufbuild/cel: JSON
// objects become CEL maps with integers as ints, expressions are parsed once and cached, and failures come
// back as data (compile or evaluation errors), never thrown.
import { celEnv, isCelError, parse, plan } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';

type Program = (bindings: Record<string, unknown>) => unknown;
const env = celEnv({ funcs: strings });
const cache = new Map<string, Program | Error>();
const CACHE_MAX = 4096;

/** A JSON value as CEL input: objects as maps, whole numbers as int, lists recursively. */
export function toCel(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(toCel);
  if (v !== null && typeof v === 'object') return new Map(Object.entries(v).map(([k, x]) => [k, toCel(x)]));
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  return v === undefined ? null : v;
}

/** A CEL result as JSON-ish JS (ints as numbers, maps as objects), for messages and patches. */
export function fromCel(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), fromCel(x)]));
  if (Array.isArray(v)) return v.map(fromCel);
  if (v && typeof v === 'object' && Symbol.iterator in (v as object) && typeof (v as { get?: unknown }).get === 'function') {
    return [...(v as Iterable<unknown>)].map(fromCel);
  }
  return v;
}

export function compile(expression: string): Program | Error {
  let p = cache.get(expression);
  if (!p) {
    try {
      p = plan(env, parse(expression)) as unknown as Program;
    } catch (err) {
      p = new Error(`compilation failed: ${(err as Error).message.split('\n')[0]}`);
    }
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(expression, p);
  }
  return p;
}

export type CelOutcome = { value: unknown } | { error: string };

/** Evaluates an expression with the given (already CEL-converted) bindings. */
export function evaluate(expression: string, bindings: Record<string, unknown>): CelOutcome {
  const p = compile(expression);
  if (p instanceof Error) return { error: p.message };
  try {
    const v = p(bindings);
    if (isCelError(v)) return { error: (v as Error).message };
    return { value: v };
  } catch (err) {
    return { error: (err as Error).message };
  }
}
