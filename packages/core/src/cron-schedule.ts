// CronJob schedules: the standard five-field cron syntax and the descriptors (@hourly, @daily, ..., @every
// <duration>) that the CronJob controller accepts, evaluated in a time zone. Parsing is cron-parser's; this
// module adds the field-count rule and @every, and is the one place both validation and the controller use.
import { CronExpressionParser } from 'cron-parser';

export interface Schedule {
  /** The first activation strictly after `after`. */
  next(after: Date): Date;
}

const DESCRIPTORS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const DURATION_UNITS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, µs: 0.001, ns: 0.000001 };

/** Go's time.ParseDuration subset used by `@every` (e.g. `1h30m`, `90s`). */
function parseDuration(s: string): number | undefined {
  const re = /(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    total += Number(m[1]) * DURATION_UNITS[m[2]];
    consumed = re.lastIndex;
  }
  return consumed === s.length && s.length > 0 ? total : undefined;
}

/** Parse a schedule; throws an Error worded like the upstream parser's when it is not valid. */
export function parseSchedule(spec: string, timeZone?: string): Schedule {
  const text = String(spec ?? '').trim();
  if (text === '') throw new Error('empty spec string');
  if (text.startsWith('@every ')) {
    const ms = parseDuration(text.slice(7).trim());
    if (ms === undefined) throw new Error(`failed to parse duration ${text}: time: invalid duration "${text.slice(7).trim()}"`);
    const step = Math.max(1000, Math.floor(ms / 1000) * 1000);
    return { next: (after) => new Date(Math.floor(after.getTime() / 1000) * 1000 + step) };
  }
  let expr = text;
  if (text.startsWith('@')) {
    const d = DESCRIPTORS[text];
    if (!d) throw new Error(`unrecognized descriptor: ${text}`);
    expr = d;
  } else {
    const fields = text.split(/\s+/);
    if (fields.length !== 5) throw new Error(`expected exactly 5 fields, found ${fields.length}: [${fields.join(' ')}]`);
  }
  // Validate once up front so a bad expression fails here, not at the first activation.
  CronExpressionParser.parse(expr, { tz: timeZone });
  return {
    next(after: Date): Date {
      const it = CronExpressionParser.parse(expr, { currentDate: after, tz: timeZone });
      return it.next().toDate();
    },
  };
}

/** Whether an IANA time zone name is known to this runtime. */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
