import { CniError, CniErrorCode } from './errors.js';

/** Deepest nesting of arrays and objects a config may have: far more than any real one, far less than the stack. */
export const MAX_JSON_DEPTH = 512;

/** How deep `text` nests arrays and objects (strings skipped), stopping early once past `limit`. */
function depthOf(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max && (max = depth) > limit) return max;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/**
 * Whether `text` opens at most `limit` arrays and objects, brackets inside strings counted too: then it cannot
 * nest deeper than that, and the character-by-character walk is not needed. Real configs open a few dozen.
 */
function opensAtMost(text: string, limit: number): boolean {
  let n = 0;
  for (const bracket of ['{', '[']) {
    for (let i = text.indexOf(bracket); i !== -1; i = text.indexOf(bracket, i + 1)) if (++n > limit) return false;
  }
  return true;
}

/**
 * JSON.parse for configs and results from outside: a document nested past {@link MAX_JSON_DEPTH} is refused
 * (code 6) before parsing, since JSON.parse accepts nesting that JSON.stringify, structuredClone and any
 * recursive walk then overflow the stack on.
 */
export function parseJson(text: string, what: string): unknown {
  if (!opensAtMost(text, MAX_JSON_DEPTH) && depthOf(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw new CniError(CniErrorCode.DecodingFailure, `error parsing ${what}: nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CniError(CniErrorCode.DecodingFailure, `error parsing ${what}: ${(e as Error).message}`);
  }
}
