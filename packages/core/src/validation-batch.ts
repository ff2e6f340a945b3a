// Validation of batch/v1 Job and CronJob with the API server's field paths and wording.
import type { CronJob, Job, JobSpec } from './api-batch.js';
import type { KubeObject } from './api-meta.js';
import { isTimeZone, parseSchedule } from './cron-schedule.js';
import type { FieldErrors } from './field-errors.js';
import { selectorFromLabelSelector } from './labels.js';
import { nonNegative, positive, validateTemplate } from './validation-apps.js';
import { validateLabelSelector } from './validation.js';

const oneOf = (v: unknown, set: readonly string[]) => typeof v === 'string' && set.includes(v);
const JOB_RESTART = ['OnFailure', 'Never'] as const;
const ACTIONS = ['Count', 'FailIndex', 'FailJob', 'Ignore'] as const;
/** Upstream's bounds on a successPolicy: rules, and the length of a rule's succeededIndexes. */
const MAX_SUCCESS_POLICY_RULES = 20;
const MAX_SUCCEEDED_INDEXES_LENGTH = 64 * 1024;
/** A CronJob's name leaves room for the 11-character suffix of the Jobs it creates. */
const MAX_CRONJOB_NAME = 52;

export function validateJobSpec(e: FieldErrors, path: string, s: JobSpec | undefined, generatedSelector: boolean): void {
  if (!s || typeof s !== 'object') return e.required(path);
  nonNegative(e, `${path}.parallelism`, s.parallelism);
  nonNegative(e, `${path}.completions`, s.completions);
  positive(e, `${path}.activeDeadlineSeconds`, s.activeDeadlineSeconds);
  nonNegative(e, `${path}.backoffLimit`, s.backoffLimit);
  nonNegative(e, `${path}.ttlSecondsAfterFinished`, s.ttlSecondsAfterFinished);
  if (s.completionMode !== undefined && !oneOf(s.completionMode, ['Indexed', 'NonIndexed'])) {
    e.notSupported(`${path}.completionMode`, s.completionMode, ['Indexed', 'NonIndexed']);
  }
  if (s.completionMode === 'Indexed' && s.completions === undefined) e.required(`${path}.completions`, 'when completion mode is Indexed');
  if (s.backoffLimitPerIndex !== undefined) {
    if (s.completionMode !== 'Indexed') e.forbidden(`${path}.backoffLimitPerIndex`, 'requires indexed completion mode');
    nonNegative(e, `${path}.backoffLimitPerIndex`, s.backoffLimitPerIndex);
  }
  if (s.maxFailedIndexes !== undefined && s.backoffLimitPerIndex === undefined) {
    e.required(`${path}.backoffLimitPerIndex`, 'when maxFailedIndexes is specified');
  }
  if (s.manualSelector === true) {
    if (!s.selector) e.required(`${path}.selector`);
  }
  if (s.selector) {
    validateLabelSelector(e, `${path}.selector`, s.selector);
    try {
      const sel = selectorFromLabelSelector(s.selector);
      const labels = s.template?.metadata?.labels ?? {};
      if (!sel.empty() && s.template && !sel.matches(labels)) {
        e.invalid(`${path}.template.metadata.labels`, labels, '`selector` does not match template `labels`');
      }
    } catch {
      // reported by validateLabelSelector
    }
  }
  void generatedSelector;
  validateTemplate(e, `${path}.template`, s.template, JOB_RESTART);
  (s.podFailurePolicy?.rules ?? []).forEach((r, i) => {
    const p = `${path}.podFailurePolicy.rules[${i}]`;
    if (!oneOf(r?.action, ACTIONS)) e.notSupported(`${p}.action`, r?.action ?? '', ACTIONS);
    if (r?.action === 'FailIndex' && s.backoffLimitPerIndex === undefined) {
      e.forbidden(`${p}.action`, 'requires the backoffLimitPerIndex to be set');
    }
    const has = (r?.onExitCodes ? 1 : 0) + (r?.onPodConditions?.length ? 1 : 0);
    if (has !== 1) e.invalid(p, 'specifying one of OnExitCodes and OnPodConditions is required', '');
    if (r?.onExitCodes && !oneOf(r.onExitCodes.operator, ['In', 'NotIn'])) {
      e.notSupported(`${p}.onExitCodes.operator`, r.onExitCodes.operator, ['In', 'NotIn']);
    }
  });
  if (s.successPolicy !== undefined) {
    if (s.completionMode !== 'Indexed') e.invalid(`${path}.successPolicy`, s.successPolicy, 'requires indexed completion mode');
    else validateSuccessPolicy(e, `${path}.successPolicy`, s.successPolicy, s.completions ?? 0);
  }
  if (s.podFailurePolicy && s.template?.spec?.restartPolicy !== 'Never') {
    e.invalid(`${path}.podFailurePolicy`, null, 'pod failure policy is only supported for pods with restartPolicy=Never');
  }
}

/**
 * An interval list of completion indexes (`1,3-5`): each below `completions`, in increasing order. Returns
 * how many indexes it names, or the reason it is malformed.
 */
export function indexesFormat(indexes: string, completions: number): { total: number } | { error: string } {
  if (!indexes) return { total: 0 };
  let last: number | undefined;
  let total = 0;
  const int = (x: string) => (/^[+-]?\d+$/.test(x) ? Number(x) : undefined);
  for (const interval of indexes.split(',')) {
    const parts = interval.split('-');
    if (parts.length > 2) return { error: `the fragment ${JSON.stringify(interval)} violates the requirement that an index interval can have at most two parts separated by '-'` };
    const bounds: number[] = [];
    for (const part of parts) {
      const x = int(part);
      if (x === undefined) return { error: `cannot convert string to integer for index: ${JSON.stringify(part)}` };
      if (x >= completions) return { error: `too large index: ${JSON.stringify(part)}` };
      bounds.push(x);
    }
    const [x, y = x] = bounds;
    if (parts.length === 2 && x >= y) return { error: `non-increasing order, previous: ${x}, current: ${y}` };
    if (last !== undefined && last >= x) return { error: `non-increasing order, previous: ${last}, current: ${x}` };
    total += y - x + 1;
    last = y;
  }
  return { total };
}

function validateSuccessPolicy(e: FieldErrors, path: string, policy: NonNullable<JobSpec['successPolicy']>, completions: number): void {
  const rules = policy.rules ?? [];
  if (!rules.length) e.required(`${path}.rules`, 'at least one rules must be specified when the successPolicy is specified');
  if (rules.length > MAX_SUCCESS_POLICY_RULES) e.tooMany(`${path}.rules`, rules.length, MAX_SUCCESS_POLICY_RULES);
  rules.forEach((rule, i) => {
    const p = `${path}.rules[${i}]`;
    if (rule?.succeededIndexes === undefined && rule?.succeededCount === undefined) {
      e.required(p, 'at least one of succeededCount or succeededIndexes must be specified');
    }
    let total = 0;
    if (rule?.succeededIndexes !== undefined) {
      if (rule.succeededIndexes.length > MAX_SUCCEEDED_INDEXES_LENGTH) e.tooLong(`${p}.succeededIndexes`, MAX_SUCCEEDED_INDEXES_LENGTH);
      const f = indexesFormat(rule.succeededIndexes, completions);
      if ('error' in f) e.invalid(`${p}.succeededIndexes`, rule.succeededIndexes, `error parsing succeededIndexes: ${f.error}`);
      else total = f.total;
    }
    if (rule?.succeededCount !== undefined) {
      const c = rule.succeededCount;
      nonNegative(e, `${p}.succeededCount`, c);
      if (c > completions) e.invalid(`${p}.succeededCount`, c, `must be less than or equal to ${completions} (the number of specified completions)`);
      if (rule.succeededIndexes !== undefined && c > total) {
        e.invalid(`${p}.succeededCount`, c, `must be less than or equal to ${total} (the number of indexes in the specified succeededIndexes field)`);
      }
    }
  });
}

export function validateJob(e: FieldErrors, obj: KubeObject): void {
  validateJobSpec(e, 'spec', (obj as Job).spec, true);
}

export function validateJobUpdate(e: FieldErrors, next: KubeObject, prev: KubeObject): void {
  const a = (prev as Job).spec;
  const b = (next as Job).spec;
  const same = (x: unknown, y: unknown) => JSON.stringify(x ?? null) === JSON.stringify(y ?? null);
  if (!same(a?.selector, b?.selector)) e.invalid('spec.selector', b?.selector, 'field is immutable');
  if (!same(a?.completionMode, b?.completionMode)) e.invalid('spec.completionMode', b?.completionMode, 'field is immutable');
  if (!same(a?.successPolicy, b?.successPolicy)) e.invalid('spec.successPolicy', b?.successPolicy, 'field is immutable');
  // Completions may change only together with parallelism in Indexed mode (elastic indexed jobs).
  if (!same(a?.completions, b?.completions) && !(b?.completionMode === 'Indexed' && b.completions === b.parallelism)) {
    e.invalid('spec.completions', b?.completions, 'field is immutable');
  }
  // The template is immutable, except while a never-started job is suspended.
  if (!same(a?.template, b?.template) && !(a?.suspend && !prev.status?.startTime)) {
    e.invalid('spec.template', b?.template, 'field is immutable');
  }
}

export function validateCronJob(e: FieldErrors, obj: KubeObject): void {
  const cj = obj as CronJob;
  const name = cj.metadata?.name;
  if (name && name.length > MAX_CRONJOB_NAME) e.invalid('metadata.name', name, `must be no more than ${MAX_CRONJOB_NAME} characters`);
  const s = cj.spec;
  if (!s || typeof s !== 'object') return e.required('spec');
  if (!s.schedule) e.required('spec.schedule');
  else if (/(^|\s)(CRON_)?TZ=/.test(s.schedule)) {
    e.invalid('spec.schedule', s.schedule, 'cannot use TZ or CRON_TZ in schedule, use timeZone field instead');
  } else {
    try {
      parseSchedule(s.schedule, s.timeZone && isTimeZone(s.timeZone) ? s.timeZone : undefined);
    } catch (err) {
      e.invalid('spec.schedule', s.schedule, (err as Error).message);
    }
  }
  if (s.timeZone !== undefined && (typeof s.timeZone !== 'string' || !isTimeZone(s.timeZone) || s.timeZone.trim() === '')) {
    e.invalid('spec.timeZone', s.timeZone, `unknown time zone ${s.timeZone}`);
  }
  if (!oneOf(s.concurrencyPolicy, ['Allow', 'Forbid', 'Replace'])) {
    e.notSupported('spec.concurrencyPolicy', s.concurrencyPolicy ?? '', ['Allow', 'Forbid', 'Replace']);
  }
  nonNegative(e, 'spec.startingDeadlineSeconds', s.startingDeadlineSeconds);
  nonNegative(e, 'spec.successfulJobsHistoryLimit', s.successfulJobsHistoryLimit);
  nonNegative(e, 'spec.failedJobsHistoryLimit', s.failedJobsHistoryLimit);
  if (!s.jobTemplate) e.required('spec.jobTemplate');
  else validateJobSpec(e, 'spec.jobTemplate.spec', s.jobTemplate.spec, false);
}
