// A Job's successPolicy (Indexed Jobs): the rules are tried in order and the first one the succeeded
// indexes satisfy declares the Job successful before every index has run, as upstream's matchSuccessPolicy.
// succeededIndexes alone: every listed index succeeded; succeededCount alone: that many indexes succeeded;
// both: that many of the listed indexes succeeded.
import type { Job } from '@kemu/core';
import { parseIndexes } from './job-indexes.js';

/** The SuccessCriteriaMet message of the first rule that matches (`Matched rules at index N`), or undefined. */
export function matchSuccessPolicy(policy: Job['spec']['successPolicy'], completions: number, succeeded: ReadonlySet<number>): string | undefined {
  if (!policy || succeeded.size === 0) return undefined;
  for (const [i, rule] of (policy.rules ?? []).entries()) {
    if (rule.succeededIndexes !== undefined) {
      const required = [...parseIndexes(rule.succeededIndexes)].filter((x) => x < completions);
      if (!required.length) continue;
      const hits = required.filter((x) => succeeded.has(x)).length;
      if (rule.succeededCount === undefined ? hits === required.length : hits >= rule.succeededCount) return `Matched rules at index ${i}`;
    } else if (rule.succeededCount !== undefined && succeeded.size >= rule.succeededCount) return `Matched rules at index ${i}`;
  }
  return undefined;
}
