// Resource quantities (`100m`, `1.5Gi`, `2e3`) with the Kubernetes canonical format. Values are held
// exactly as an integer count of nano-units (bigint), so arithmetic and comparison never round.

export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

const NANO = 1_000_000_000n;

const DECIMAL_SUFFIX: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIX: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

const QUANTITY_RE = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

export class QuantityError extends Error {
  constructor(input: string) {
    super(`quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`);
    this.name = 'QuantityError';
    (this as { input?: string }).input = input;
  }
}

const POW10: bigint[] = Array.from({ length: 40 }, (_, i) => 10n ** BigInt(i));
function pow10(e: number): bigint {
  return e < POW10.length ? POW10[e] : 10n ** BigInt(e);
}

/** ceil(a / b) for b > 0. */
function divCeil(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a > 0n ? q + 1n : q;
}

export class Quantity {
  /** Exact value in units of 1e-9. */
  readonly nanos: bigint;
  readonly format: QuantityFormat;

  constructor(nanos: bigint, format: QuantityFormat = 'DecimalSI') {
    this.nanos = nanos;
    this.format = format;
  }

  static parse(input: string | number): Quantity {
    return parseQuantity(input);
  }

  static fromMilli(milli: number | bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(BigInt(milli) * 1_000_000n, format);
  }

  static fromValue(value: number | bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(BigInt(value) * NANO, format);
  }

  /** Integer value, rounded up (Kubernetes `Value()`). */
  value(): number {
    return Number(divCeil(this.nanos, NANO));
  }

  /** Value in thousandths, rounded up (Kubernetes `MilliValue()`), e.g. CPU millicores. */
  milliValue(): number {
    return Number(divCeil(this.nanos, 1_000_000n));
  }

  /** The value as a float, for display and scoring. */
  asNumber(): number {
    return Number(this.nanos) / 1e9;
  }

  cmp(other: Quantity | string | number): -1 | 0 | 1 {
    const o = other instanceof Quantity ? other : parseQuantity(other);
    return this.nanos < o.nanos ? -1 : this.nanos > o.nanos ? 1 : 0;
  }

  add(other: Quantity | string | number): Quantity {
    const o = other instanceof Quantity ? other : parseQuantity(other);
    return new Quantity(this.nanos + o.nanos, this.format);
  }

  sub(other: Quantity | string | number): Quantity {
    const o = other instanceof Quantity ? other : parseQuantity(other);
    return new Quantity(this.nanos - o.nanos, this.format);
  }

  neg(): Quantity {
    return new Quantity(-this.nanos, this.format);
  }

  isZero(): boolean {
    return this.nanos === 0n;
  }

  /** Canonical string, as the API server would serialise it. */
  toString(): string {
    return formatQuantity(this);
  }

  toJSON(): string {
    return this.toString();
  }
}

// Objects repeat the same few quantity strings (`100m`, `128Mi`) endlessly: remember parses.
const parsed = new Map<string, Quantity>();
const PARSE_CACHE_MAX = 4096;

export function parseQuantity(input: string | number): Quantity {
  if (typeof input === 'string') {
    const hit = parsed.get(input);
    if (hit) return hit;
    const q = parseUncached(input);
    if (parsed.size >= PARSE_CACHE_MAX) parsed.clear();
    parsed.set(input, q);
    return q;
  }
  return parseUncached(input);
}

function parseUncached(input: string | number): Quantity {
  const s = typeof input === 'number' ? numberToString(input) : input.trim();
  const m = QUANTITY_RE.exec(s);
  if (!m) throw new QuantityError(String(input));
  const [, sign, num, exp, suffix = ''] = m;
  let format: QuantityFormat = 'DecimalSI';
  let dec = 0; // power of ten
  let bin = 0; // power of two
  if (exp) {
    format = 'DecimalExponent';
    dec = Number.parseInt(exp.slice(1), 10);
    if (Math.abs(dec) > 1000) throw new QuantityError(String(input));
  } else if (suffix in BINARY_SUFFIX) {
    format = 'BinarySI';
    bin = BINARY_SUFFIX[suffix];
  } else {
    dec = DECIMAL_SUFFIX[suffix];
  }
  const [ip, fp = ''] = num.split('.');
  const digits = BigInt((ip || '0') + fp);
  // value = digits * 10^(dec - fp.length) * 2^bin, expressed in nanos (* 10^9)
  let e10 = dec - fp.length + 9;
  let n = digits * (1n << BigInt(bin));
  if (e10 >= 0) n *= pow10(e10);
  else {
    // Precision below a nano-unit rounds up, as Kubernetes does.
    n = divCeil(n, pow10(-e10));
    e10 = 0;
  }
  if (sign === '-') n = -n;
  return new Quantity(n, format);
}

function numberToString(n: number): string {
  if (!Number.isFinite(n)) throw new QuantityError(String(n));
  const s = String(n);
  return s.includes('e') ? s.replace('e+', 'e') : s;
}

export function formatQuantity(q: Quantity): string {
  const neg = q.nanos < 0n;
  const abs = neg ? -q.nanos : q.nanos;
  const sign = neg ? '-' : '';
  if (abs === 0n) return '0';
  if (q.format === 'BinarySI' && abs % NANO === 0n) {
    const v = abs / NANO;
    // Largest binary suffix that keeps the number whole; numbers below 1Ki print plain.
    const names = ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'];
    for (let i = 0; i < names.length; i++) {
      const shift = BigInt(60 - i * 10);
      const unit = 1n << shift;
      if (v >= unit && v % unit === 0n) return `${sign}${v / unit}${names[i]}`;
    }
    if (v < 1024n) return `${sign}${v}`;
    // Not a multiple of 1024: fall back to decimal form.
  }
  // Decimal: the largest exponent (multiple of 3) at which the value is whole.
  let exp = -9;
  let mant = abs;
  while (exp < 18 && mant % 1000n === 0n) {
    mant /= 1000n;
    exp += 3;
  }
  if (q.format === 'DecimalExponent') {
    return exp === 0 ? `${sign}${mant}` : exp > 0 ? `${sign}${mant}e${exp}` : `${sign}${mant}e${exp}`;
  }
  const suffix = Object.entries(DECIMAL_SUFFIX).find(([, e]) => e === exp)![0];
  return `${sign}${mant}${suffix}`;
}

/** True when `s` parses as a quantity. */
export function isQuantity(s: unknown): boolean {
  if (typeof s !== 'string' && typeof s !== 'number') return false;
  try {
    parseQuantity(s);
    return true;
  } catch {
    return false;
  }
}

/** Compare two quantities given in any accepted form. */
export function compareQuantities(a: Quantity | string | number, b: Quantity | string | number): -1 | 0 | 1 {
  return (a instanceof Quantity ? a : parseQuantity(a)).cmp(b);
}
