// Timestamps: the CRI speaks Unix nanoseconds; logs speak RFC3339Nano as Go prints it.
const originNs = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();

export function nowNsBig(): bigint {
  return originNs + process.hrtime.bigint();
}

/** Unix time in nanoseconds as a JS number (sub-microsecond precision is lost above 2^53, harmlessly). */
export function nowNs(): number {
  return Number(nowNsBig());
}

/** RFC3339 with nanoseconds and trailing zeros trimmed, matching Go's time.RFC3339Nano. */
export function rfc3339Nano(ns: bigint = nowNsBig()): string {
  const ms = ns / 1_000_000n;
  const iso = new Date(Number(ms)).toISOString(); // 2026-01-02T03:04:05.678Z
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${iso.slice(0, 19)}${frac ? `.${frac}` : ''}Z`;
}
