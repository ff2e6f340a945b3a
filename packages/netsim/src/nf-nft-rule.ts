// One nftables rule: the expressions kube-proxy's nftables mode and simple firewalls use, parsed from
// `nft` syntax (what `nft -f` takes and what `nft list` prints) and printed back the way `nft list`
// prints it, so a rule set read back from the kernel compares with the one netsim holds.
import { type Family, formatIpBytes, parseAddrWithLen, type Prefix, toPrefix } from '@kemu/ip';
import { NetsimError } from './errors.js';

/** A word of nft syntax; `quoted` for a "..." string. */
export interface NftToken {
  t: string;
  quoted?: boolean;
}

/** Splits nft text into tokens: words, quoted strings, and { } , ; : . = as tokens of their own. */
export function nftTokens(text: string): NftToken[] {
  const out: NftToken[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === ' ' || ch === '\t' || ch === '\r') {
      i++;
      continue;
    }
    if (ch === '"') {
      const end = text.indexOf('"', i + 1);
      if (end < 0) throw new NetsimError('EINVAL', 'unterminated string');
      out.push({ t: text.slice(i + 1, end), quoted: true });
      i = end + 1;
      continue;
    }
    if (ch === '=' && text[i + 1] === '=') {
      out.push({ t: '==' });
      i += 2;
      continue;
    }
    if (ch === '{' || ch === '}' || ch === ',' || ch === ';' || ch === '\n' || ch === '=') {
      out.push({ t: ch === '\n' ? ';' : ch });
      i++;
      continue;
    }
    // ':' and '.' are tokens when standing alone; inside a word they are part of it (10.1.2.3:80).
    if ((ch === ':' || ch === '.') && /[\s]/.test(text[i + 1] ?? ' ')) {
      out.push({ t: ch });
      i++;
      continue;
    }
    if (text.startsWith('!=', i) || text.startsWith('==', i)) {
      out.push({ t: text.slice(i, i + 2) });
      i += 2;
      continue;
    }
    let j = i;
    while (j < text.length && !/[\s{},;"=]/.test(text[j]!)) j++;
    out.push({ t: text.slice(i, j) });
    i = j;
  }
  return out;
}

export type NftField =
  | 'ip saddr' | 'ip daddr' | 'ip6 saddr' | 'ip6 daddr'
  | 'meta l4proto' | 'meta mark' | 'th sport' | 'th dport'
  | 'tcp sport' | 'tcp dport' | 'udp sport' | 'udp dport' | 'sctp sport' | 'sctp dport'
  | 'ct state' | 'fib saddr type' | 'fib daddr type' | 'numgen';

/** A value a field is compared with: an address prefix, a number, or a name (tcp, local, new). */
export type NftValue = { kind: 'prefix'; p: Prefix } | { kind: 'num'; n: number } | { kind: 'name'; s: string };

export type NftVerdict = { kind: 'accept' | 'drop' | 'return' } | { kind: 'jump' | 'goto'; chain: string };

export interface NftElement {
  /** Key parts in canonical text, joined with " . " (10.96.0.1 . tcp . 80). */
  key: string;
  verdict?: NftVerdict;
  comment?: string;
  /** Virtual-clock expiry (us) of an element a rule added to a set with a timeout. */
  expiresUs?: number;
}

export type NftExpr =
  | { kind: 'cmp'; field: NftField; neg: boolean; values: NftValue[]; mask?: number }
  | { kind: 'lookup'; fields: NftField[]; set: string; neg: boolean }
  | { kind: 'vmap'; fields: NftField[]; map?: string; elements?: Map<string, NftElement>; mod?: number }
  | { kind: 'mark-set'; op: '|' | '^' | '&' | '='; value: number }
  | { kind: 'dnat'; addr: Uint8Array; family: Family; port?: number }
  | { kind: 'masquerade'; flags: string[] }
  | { kind: 'reject' }
  | { kind: 'update'; set: string; fields: NftField[] }
  | { kind: 'counter' };

export interface NftRule {
  exprs: NftExpr[];
  verdict?: NftVerdict;
  comment?: string;
  /** The rule as `nft list` prints it. */
  text: string;
}

const PROTOS: Record<string, number> = { tcp: 6, udp: 17, sctp: 132, icmp: 1, 'ipv6-icmp': 58, icmpv6: 58 };
export const PROTO_NAME: Record<number, string> = { 6: 'tcp', 17: 'udp', 132: 'sctp', 1: 'icmp', 58: 'ipv6-icmp' };
const CT_STATES = new Set(['new', 'established', 'related', 'invalid', 'untracked']);
const ADDR_TYPES = new Set(['local', 'unicast', 'broadcast', 'multicast', 'anycast', 'blackhole', 'unreachable', 'prohibit']);

function bad(msg: string): never {
  throw new NetsimError('EINVAL', msg);
}

/** Canonical text of one key part for a field: addresses as printed, protocols by name, ports as numbers. */
export function fieldValueText(field: NftField, v: NftValue): string {
  if (v.kind === 'prefix') {
    const full = v.p.len === (v.p.family === 4 ? 32 : 128);
    return `${formatIpBytes(v.p.bytes, 0, v.p.family)}${full ? '' : `/${v.p.len}`}`;
  }
  if (v.kind === 'num') {
    if (field === 'meta l4proto') return PROTO_NAME[v.n] ?? String(v.n);
    if (field === 'meta mark') return hex8(v.n);
    return String(v.n);
  }
  return v.s;
}

const hex8 = (n: number) => `0x${(n >>> 0).toString(16).padStart(8, '0')}`;

function parseNum(s: string | undefined, what: string): number {
  if (s === undefined || !/^(0x[0-9a-fA-F]{1,8}|\d{1,10})$/.test(s)) bad(`${what}: bad value "${String(s)}"`);
  const n = Number(s);
  if (n > 0xffffffff) bad(`${what}: value "${s}" out of range`);
  return n >>> 0;
}

/** Parses one value of a field (a key part of an element or the right side of a comparison). */
export function parseFieldValue(field: NftField, s: string, family: Family): NftValue {
  if (field.endsWith('saddr') || field.endsWith('daddr')) {
    const a = parseAddrWithLen(s);
    if (!a) bad(`Could not resolve hostname: ${s}`);
    if (a.ip.family !== family) bad(`${field}: ${s} is not an IPv${family} address`);
    return { kind: 'prefix', p: toPrefix(a.ip, a.len) };
  }
  if (field === 'meta l4proto') {
    const n = PROTOS[s] ?? (/^\d{1,3}$/.test(s) && Number(s) < 256 ? Number(s) : undefined);
    if (n === undefined) bad(`unknown protocol "${s}"`);
    return { kind: 'num', n };
  }
  if (field === 'ct state') {
    if (!CT_STATES.has(s)) bad(`ct state: unknown state "${s}"`);
    return { kind: 'name', s };
  }
  if (field === 'fib saddr type' || field === 'fib daddr type') {
    if (!ADDR_TYPES.has(s)) bad(`fib: unknown address type "${s}"`);
    return { kind: 'name', s };
  }
  if (field === 'meta mark' || field === 'numgen') return { kind: 'num', n: parseNum(s, field) };
  // Ports.
  if (!/^\d{1,5}$/.test(s) || Number(s) > 65535) bad(`${field}: invalid port "${s}"`);
  return { kind: 'num', n: Number(s) };
}

/** The canonical key of a concatenation's values ("10.96.0.1 . tcp . 80"). */
export function elementKey(fields: NftField[], parts: string[], family: Family): string {
  if (parts.length !== fields.length) bad(`element "${parts.join(' . ')}" does not match the key type (${fields.length} parts)`);
  return parts.map((p, i) => fieldValueText(fields[i]!, parseFieldValue(fields[i]!, p, family))).join(' . ');
}

const CHAIN_NAME = /^[A-Za-z_.][A-Za-z0-9_./-]{0,255}$/;

export function checkChainName(s: string | undefined): string {
  if (s === undefined || !CHAIN_NAME.test(s)) bad(`invalid chain name "${String(s)}"`);
  return s;
}

/** A cursor over tokens, shared by the rule and the script parser. */
export class NftCursor {
  i = 0;
  constructor(readonly toks: NftToken[]) {}
  peek(k = 0): string | undefined {
    return this.toks[this.i + k]?.t;
  }
  next(what: string): string {
    const t = this.toks[this.i++];
    if (!t) bad(`syntax error, unexpected end of input, expecting ${what}`);
    return t.t;
  }
  expect(s: string): void {
    const t = this.next(`"${s}"`);
    if (t !== s) bad(`syntax error, unexpected "${t}", expecting "${s}"`);
  }
  quoted(what: string): string {
    const t = this.toks[this.i++];
    if (!t?.quoted) bad(`syntax error, ${what} needs a quoted string`);
    return t.t;
  }
  atEnd(): boolean {
    const t = this.peek();
    return t === undefined || t === ';' || t === '}';
  }
}

function parseVerdict(c: NftCursor): NftVerdict {
  const v = c.next('a verdict');
  if (v === 'accept' || v === 'drop' || v === 'return') return { kind: v };
  if (v === 'jump' || v === 'goto') return { kind: v, chain: checkChainName(c.next('a chain name')) };
  return bad(`syntax error, unexpected "${v}", expecting a verdict`);
}

export function verdictText(v: NftVerdict): string {
  return v.kind === 'jump' || v.kind === 'goto' ? `${v.kind} ${v.chain}` : v.kind;
}

/** `{ e1, e2 : verdict, ... }` after the opening brace was read; keys as canonical text. */
export function parseElements(c: NftCursor, fields: NftField[], family: Family, withVerdict: boolean): NftElement[] {
  const out: NftElement[] = [];
  for (;;) {
    while (c.peek() === ';') c.i++;
    if (c.peek() === '}') {
      c.i++;
      return out;
    }
    const parts = [c.next('an element')];
    while (c.peek() === '.') {
      c.i++;
      parts.push(c.next('a key part'));
    }
    const el: NftElement = { key: elementKey(fields, parts, family) };
    for (;;) {
      const t = c.peek();
      if (t === 'comment') {
        c.i++;
        el.comment = c.quoted('comment');
      } else if (t === 'timeout' || t === 'expires') {
        c.i += 2;
      } else break;
    }
    if (withVerdict) {
      c.expect(':');
      el.verdict = parseVerdict(c);
    }
    out.push(el);
    while (c.peek() === ';') c.i++;
    if (c.peek() === ',') c.i++;
  }
}

/** Reads a field name (one or more words), or undefined when the cursor is not at one. */
function parseField(c: NftCursor, family: Family): NftField | undefined {
  const a = c.peek();
  const b = c.peek(1);
  const ipx = family === 4 ? 'ip' : 'ip6';
  if ((a === 'ip' || a === 'ip6') && (b === 'saddr' || b === 'daddr')) {
    if (a !== ipx) bad(`${a} ${b} in an IPv${family} table`);
    c.i += 2;
    return `${a} ${b}` as NftField;
  }
  if (a === 'meta' && (b === 'l4proto' || b === 'mark')) {
    c.i += 2;
    return `meta ${b}` as NftField;
  }
  if (a === 'mark') {
    c.i += 1;
    return 'meta mark';
  }
  if ((a === 'th' || a === 'tcp' || a === 'udp' || a === 'sctp') && (b === 'sport' || b === 'dport')) {
    c.i += 2;
    return `${a} ${b}` as NftField;
  }
  if (a === 'ct' && b === 'state') {
    c.i += 2;
    return 'ct state';
  }
  if (a === 'fib' && (b === 'saddr' || b === 'daddr') && c.peek(2) === 'type') {
    c.i += 3;
    return `fib ${b} type` as NftField;
  }
  if (a === 'numgen' && b === 'random' && c.peek(2) === 'mod') {
    c.i += 3;
    return 'numgen';
  }
  return undefined;
}

/** Parses the words of one rule (up to `;`, a newline or `}`). */
export function parseNftRule(c: NftCursor, family: Family): NftRule {
  const r: NftRule = { exprs: [], text: '' };
  while (!c.atEnd()) {
    if (r.verdict && c.peek() !== 'comment') bad(`syntax error, unexpected "${c.peek()}" after the verdict`);
    const f = parseField(c, family);
    if (f === 'numgen') {
      const mod = parseNum(c.next('a modulus'), 'numgen mod');
      if (mod < 1) bad('numgen: modulus must be at least 1');
      c.expect('vmap');
      c.expect('{');
      const els = parseElements(c, ['numgen'], family, true);
      r.exprs.push({ kind: 'vmap', fields: ['numgen'], elements: new Map(els.map((e) => [e.key, e])), mod });
      continue;
    }
    if (f) {
      const fields: NftField[] = [f];
      while (c.peek() === '.') {
        c.i++;
        const g = parseField(c, family);
        if (!g || g === 'numgen') bad(`syntax error, unexpected "${c.peek()}" in a concatenation`);
        fields.push(g);
      }
      let t = c.peek();
      if (fields.length === 1 && f === 'meta mark' && t === 'set') {
        c.i++;
        if (c.peek() === 'meta') c.i++;
        if (c.peek() === 'mark') {
          c.i++;
          const op = c.next('an operator');
          const o = op === 'or' || op === '|' ? '|' : op === 'xor' || op === '^' ? '^' : op === 'and' || op === '&' ? '&' : bad(`mark set: unknown operator "${op}"`);
          r.exprs.push({ kind: 'mark-set', op: o, value: parseNum(c.next('a mark'), 'mark set') });
        } else r.exprs.push({ kind: 'mark-set', op: '=', value: parseNum(c.next('a mark'), 'mark set') });
        continue;
      }
      if (t === 'vmap') {
        c.i++;
        const m = c.next('a map');
        if (m === '{') {
          const els = parseElements(c, fields, family, true);
          r.exprs.push({ kind: 'vmap', fields, elements: new Map(els.map((e) => [e.key, e])) });
        } else if (m.startsWith('@') && m.length > 1) r.exprs.push({ kind: 'vmap', fields, map: m.slice(1) });
        else bad(`syntax error, unexpected "${m}" after vmap`);
        continue;
      }
      let mask: number | undefined;
      if (t === '&' || t === 'and') {
        c.i++;
        mask = parseNum(c.next('a mask'), f);
        t = c.peek();
      }
      let neg = false;
      if (t === '!=' || t === '==') {
        neg = t === '!=';
        c.i++;
        t = c.peek();
      }
      if (t?.startsWith('@')) {
        c.i++;
        r.exprs.push({ kind: 'lookup', fields, set: t.slice(1), neg });
        continue;
      }
      if (fields.length > 1) bad('a concatenation needs vmap or a set');
      const values: NftValue[] = [];
      if (t === '{') {
        c.i++;
        for (;;) {
          const v = c.next('a value');
          if (v === '}') break;
          if (v === ',') continue;
          values.push(parseFieldValue(f, v, family));
        }
        if (values.length === 0) bad('empty set');
      } else if (f === 'ct state') {
        // "ct state new,established".
        values.push(parseFieldValue(f, c.next('a state'), family));
        while (c.peek() === ',') {
          c.i++;
          values.push(parseFieldValue(f, c.next('a state'), family));
        }
      } else values.push(parseFieldValue(f, c.next('a value'), family));
      r.exprs.push({ kind: 'cmp', field: f, neg, values, mask });
      continue;
    }
    const w = c.next('a statement');
    if (w === 'accept' || w === 'drop' || w === 'return' || w === 'jump' || w === 'goto') {
      c.i--;
      r.verdict = parseVerdict(c);
    } else if (w === 'comment') r.comment = c.quoted('comment');
    else if (w === 'counter') {
      r.exprs.push({ kind: 'counter' });
      if (c.peek() === 'packets') c.i += 4;
    } else if (w === 'reject') r.exprs.push({ kind: 'reject' });
    else if (w === 'masquerade') {
      const flags: string[] = [];
      while (['fully-random', 'random', 'persistent'].includes(c.peek() ?? '')) flags.push(c.next('a flag'));
      r.exprs.push({ kind: 'masquerade', flags });
    } else if (w === 'dnat') {
      if (c.peek() === 'ip' || c.peek() === 'ip6') c.i++;
      c.expect('to');
      const v = c.next('an address');
      const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(v) ?? (family === 4 ? /^([^:]+)(?::(\d+))?$/.exec(v) : /^([^\]]+)()$/.exec(v));
      const a = m ? parseAddrWithLen(m[1]!) : null;
      if (!m || !a || a.ip.family !== family || a.len !== (family === 4 ? 32 : 128)) bad(`dnat: bad address "${v}"`);
      const port = m[2] ? Number(m[2]) : undefined;
      if (port !== undefined && port > 65535) bad(`dnat: bad port in "${v}"`);
      r.exprs.push({ kind: 'dnat', addr: a.ip.bytes, family, port });
    } else if (w === 'update' || w === 'add') {
      const s = c.next('a set');
      if (!s.startsWith('@')) bad(`${w}: expecting @set, got "${s}"`);
      c.expect('{');
      const fields: NftField[] = [];
      for (;;) {
        const g = parseField(c, family);
        if (!g) break;
        fields.push(g);
        if (c.peek() === '.') c.i++;
      }
      c.expect('}');
      if (!fields.length) bad(`${w} @${s.slice(1)}: no key`);
      r.exprs.push({ kind: 'update', set: s.slice(1), fields });
    } else bad(`syntax error, unexpected "${w}"`);
  }
  r.text = formatNftRule(r);
  return r;
}

function elementsText(fields: NftField[], els: Map<string, NftElement>): string {
  void fields;
  return `{ ${[...els.values()].map((e) => `${e.key}${e.comment !== undefined ? ` comment ${JSON.stringify(e.comment)}` : ''}${e.verdict ? ` : ${verdictText(e.verdict)}` : ''}`).join(', ')} }`;
}

/** The rule as `nft list` prints it. */
export function formatNftRule(r: NftRule): string {
  const o: string[] = [];
  for (const e of r.exprs) {
    switch (e.kind) {
      case 'cmp': {
        const vals = e.values.map((v) => fieldValueText(e.field, v));
        const rhs = vals.length === 1 ? vals[0]! : `{ ${vals.join(', ')} }`;
        if (e.mask !== undefined) o.push(`${e.field} & ${hex8(e.mask)} ${e.neg ? '!=' : '=='} ${rhs}`);
        else if (e.field === 'ct state' && vals.length > 1 && !e.neg) o.push(`${e.field} ${vals.join(',')}`);
        else o.push(`${e.field} ${e.neg ? '!= ' : ''}${rhs}`);
        break;
      }
      case 'lookup':
        o.push(`${e.fields.join(' . ')} ${e.neg ? '!= ' : ''}@${e.set}`);
        break;
      case 'vmap':
        if (e.mod !== undefined) o.push(`numgen random mod ${e.mod} vmap ${elementsText(e.fields, e.elements!)}`);
        else o.push(`${e.fields.join(' . ')} vmap ${e.map ? `@${e.map}` : elementsText(e.fields, e.elements!)}`);
        break;
      case 'mark-set':
        o.push(e.op === '=' ? `meta mark set ${hex8(e.value)}` : `meta mark set meta mark ${e.op} ${hex8(e.value)}`);
        break;
      case 'dnat': {
        const a = formatIpBytes(e.addr, 0, e.family);
        o.push(`dnat to ${e.port === undefined ? a : e.family === 6 ? `[${a}]:${e.port}` : `${a}:${e.port}`}`);
        break;
      }
      case 'masquerade':
        o.push(['masquerade', ...e.flags].join(' '));
        break;
      case 'reject':
        o.push('reject');
        break;
      case 'update':
        o.push(`update @${e.set} { ${e.fields.join(' . ')} }`);
        break;
      case 'counter':
        o.push('counter packets 0 bytes 0');
        break;
    }
  }
  if (r.verdict) o.push(verdictText(r.verdict));
  if (r.comment !== undefined) o.push(`comment ${JSON.stringify(r.comment)}`);
  return o.join(' ');
}
