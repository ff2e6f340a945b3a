// A namespace's nftables tables: chains (base chains on a hook with a type and priority, and regular
// ones), named sets and verdict maps, loaded from `nft -f` scripts and printed as `nft list table` prints.
// A script is one transaction, as the kernel commits it: every command applies or none does (an undo log
// rolls back a failed one), and a chain still referenced by a rule or a map element cannot be deleted.
import type { Family } from '@kemu/ip';
import { NetsimError } from './errors.js';
import {
  checkChainName,
  elementKey,
  type NftElement,
  type NftField,
  NftCursor,
  type NftRule,
  nftTokens,
  type NftVerdict,
  parseElements,
  parseNftRule,
  verdictText,
} from './nf-nft-rule.js';

export type NftFamily = 'ip' | 'ip6';
export type NftHook = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting';

export interface NftChain {
  name: string;
  /** Creation order: `nft list` prints chains (and sets) in the order they were made. */
  seq: number;
  base?: { type: 'filter' | 'nat' | 'route'; hook: NftHook; priority: number; policy: 'accept' | 'drop' };
  comment?: string;
  rules: NftRule[];
}

export interface NftSet {
  name: string;
  seq: number;
  isMap: boolean;
  /** Key type words ("ipv4_addr", "inet_proto", "inet_service") and the fields they are matched as. */
  type: string[];
  fields: NftField[];
  flags: string[];
  timeoutS?: number;
  size?: number;
  comment?: string;
  elements: Map<string, NftElement>;
}

export interface NftTable {
  family: NftFamily;
  name: string;
  comment?: string;
  chains: Map<string, NftChain>;
  sets: Map<string, NftSet>;
  /** How many rules and map elements name each chain (a referenced chain cannot be deleted). */
  refs: Map<string, number>;
}

const TYPE_FIELD: Record<string, NftField> = {
  ipv4_addr: 'ip daddr',
  ipv6_addr: 'ip6 daddr',
  inet_proto: 'meta l4proto',
  inet_service: 'th dport',
  mark: 'meta mark',
};

const HOOKS = new Set(['prerouting', 'input', 'forward', 'output', 'postrouting']);
const PRIO_NAMES: Record<string, number> = { raw: -300, mangle: -150, dstnat: -100, filter: 0, security: 50, srcnat: 100 };

export const tableKey = (family: NftFamily, name: string) => `${family} ${name}`;
export const familyOf = (f: NftFamily): Family => (f === 'ip' ? 4 : 6);

function bad(msg: string): never {
  throw new NetsimError('EINVAL', msg);
}

/** Every table of a namespace, plus the base chains of each hook in priority order. */
export class NftState {
  readonly tables = new Map<string, NftTable>();
  hooks = new Map<string, { table: NftTable; chain: NftChain }[]>();
  ruleCount = 0;
  seq = 0;
  /** Bumped by every applied `nft -f` transaction (see World.netfilterGeneration). */
  generation = 0;
  /**
   * Parsed rules by family and text: rules hold no state, so chains with the same rule (every Service's
   * endpoint chain for one pod) share one object, which keeps a 2.5M-endpoint rule set in memory.
   */
  readonly parsed = new Map<string, NftRule>();

  parseRule(c: NftCursor, family: Family): NftRule {
    // The rule's text up to its end, as the cache key.
    let j = c.i;
    // A "}" closes an inline map or set inside the rule when a "{" opened it.
    let depth = 0;
    for (let k = c.i; k < c.toks.length; k++) {
      const t = c.toks[k]!.t;
      if (t === '{') depth++;
      else if (t === '}') {
        if (depth === 0) break;
        depth--;
      } else if (t === ';' && depth === 0) break;
      j = k + 1;
    }
    const key = `${family}|${c.toks.slice(c.i, j).map((t) => (t.quoted ? JSON.stringify(t.t) : t.t)).join(' ')}`;
    const hit = this.parsed.get(key);
    if (hit) {
      c.i = j;
      return hit;
    }
    const r = parseNftRule(c, family);
    if (this.parsed.size >= 1 << 22) this.parsed.clear();
    this.parsed.set(key, r);
    return r;
  }

  /** Recomputes the hook lists and the count that tells the datapath whether nftables is in use. */
  reindex(): void {
    const hooks = new Map<string, { table: NftTable; chain: NftChain }[]>();
    let n = 0;
    for (const t of this.tables.values()) {
      n += 1;
      for (const c of baseChains(t)) {
        const k = `${t.family} ${c.base!.hook}`;
        const list = hooks.get(k) ?? [];
        list.push({ table: t, chain: c });
        hooks.set(k, list);
      }
    }
    for (const l of hooks.values()) l.sort((a, b) => a.chain.base!.priority - b.chain.base!.priority);
    this.hooks = hooks;
    this.ruleCount = n;
  }
}

/** Base chains are few and declared first; kept in a side list so a hook lookup never scans all chains. */
const bases = new WeakMap<NftTable, Set<NftChain>>();
function baseChains(t: NftTable): Set<NftChain> {
  let s = bases.get(t);
  if (!s) bases.set(t, (s = new Set()));
  return s;
}

function targetsOf(r: NftRule): string[] {
  const out: string[] = [];
  if (r.verdict?.kind === 'jump' || r.verdict?.kind === 'goto') out.push(r.verdict.chain);
  for (const e of r.exprs) if (e.kind === 'vmap' && e.elements) for (const el of e.elements.values()) if (el.verdict && 'chain' in el.verdict) out.push(el.verdict.chain);
  return out;
}

function setsOf(r: NftRule): string[] {
  const out: string[] = [];
  for (const e of r.exprs) if ((e.kind === 'vmap' && e.map) || e.kind === 'lookup' || e.kind === 'update') out.push(e.kind === 'vmap' ? e.map! : e.set);
  return out;
}

function bump(t: NftTable, chain: string, d: number): void {
  const n = (t.refs.get(chain) ?? 0) + d;
  if (n) t.refs.set(chain, n);
  else t.refs.delete(chain);
}

function parseDuration(s: string): number {
  let total = 0;
  const re = /(\d+)(d|h|ms|m|s)/gy;
  let m: RegExpExecArray | null;
  let at = 0;
  while ((m = re.exec(s))) {
    total += Number(m[1]) * { d: 86400, h: 3600, m: 60, s: 1, ms: 0.001 }[m[2] as 'd'];
    at = re.lastIndex;
  }
  if (at !== s.length || s.length === 0) bad(`bad timeout "${s}"`);
  return total;
}

function formatDuration(s: number): string {
  let out = '';
  for (const [u, n] of [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]] as const) {
    const k = Math.floor(s / n);
    if (k) out += `${k}${u}`;
    s -= k * n;
  }
  return out || '0s';
}

function parsePriority(c: NftCursor): number {
  const w = c.next('a priority');
  let p = PRIO_NAMES[w] ?? (/^-?\d+$/.test(w) ? Number(w) : bad(`unknown priority "${w}"`));
  if (c.peek() === '+' || c.peek() === '-') {
    const sign = c.next('') === '+' ? 1 : -1;
    const v = c.next('a number');
    if (!/^\d+$/.test(v)) bad(`bad priority offset "${v}"`);
    p += sign * Number(v);
  }
  return p;
}

/** Applies an `nft -f` script to a namespace's tables as one transaction. Errors name the line. */
export function nftApply(st: NftState, text: string): void {
  const undo: (() => void)[] = [];
  const added: { t: NftTable; rule?: NftRule; el?: NftElement; set?: NftSet }[] = [];
  const deletedChains: { t: NftTable; name: string }[] = [];
  const lines = text.split('\n');
  let lineNo = 0;
  const fail: (msg: string) => never = (msg) => bad(`line ${lineNo}: ${msg}`);
  try {
    // Join a block that spans lines ("table ip x {" ... "}") into one statement.
    for (let i = 0; i < lines.length; i++) {
      lineNo = i + 1;
      let stmt = lines[i]!;
      let depth = braces(stmt);
      while (depth > 0 && i + 1 < lines.length) {
        stmt += `\n${lines[++i]}`;
        depth += braces(lines[i]!);
      }
      if (depth !== 0) fail('syntax error, unbalanced braces');
      const toks = nftTokens(stmt.replace(/#.*$/gm, ''));
      const c = new NftCursor(toks);
      while (c.peek() !== undefined) {
        if (c.peek() === ';') {
          c.i++;
          continue;
        }
        command(c);
      }
    }
    lineNo = lines.length;
    // References are checked when the whole transaction is in, as the kernel checks them at commit.
    for (const a of added) {
      const targets = a.rule ? targetsOf(a.rule) : a.el?.verdict && 'chain' in a.el.verdict ? [a.el.verdict.chain] : [];
      for (const ch of targets) if (!a.t.chains.has(ch)) fail(`Could not process rule: No such file or directory: chain "${ch}" does not exist in table ${tableKey(a.t.family, a.t.name)}`);
      for (const s of a.rule ? setsOf(a.rule) : []) if (!a.t.sets.has(s)) fail(`Could not process rule: No such file or directory: set "${s}" does not exist in table ${tableKey(a.t.family, a.t.name)}`);
    }
    for (const d of deletedChains) if (!d.t.chains.has(d.name) && (d.t.refs.get(d.name) ?? 0) > 0) fail(`Could not process rule: Device or resource busy: chain "${d.name}" is still referenced`);
  } catch (err) {
    for (let i = undo.length - 1; i >= 0; i--) undo[i]!();
    st.reindex();
    // Errors from a rule's or element's parser get the line, as nft's do.
    if (err instanceof NetsimError && !err.message.startsWith('line ')) throw new NetsimError(err.code, `line ${lineNo}: ${err.message.slice(0, -(err.strerror.length + 2))}`);
    throw err;
  }
  st.reindex();

  function tableRef(c: NftCursor, create: boolean): NftTable {
    const fam = c.next('a family');
    if (fam !== 'ip' && fam !== 'ip6') fail(`unsupported table family "${fam}" (ip and ip6 only)`);
    const name = c.next('a table name');
    if (!/^[A-Za-z_][A-Za-z0-9_.-]{0,255}$/.test(name)) fail(`invalid table name "${name}"`);
    const k = tableKey(fam, name);
    let t = st.tables.get(k);
    if (!t) {
      if (!create) fail(`Could not process rule: No such file or directory: table ${k}`);
      t = { family: fam, name, chains: new Map(), sets: new Map(), refs: new Map() };
      st.tables.set(k, t);
      undo.push(() => st.tables.delete(k));
    }
    return t;
  }

  function chainRef(t: NftTable, name: string): NftChain {
    const ch = t.chains.get(name);
    if (!ch) fail(`Could not process rule: No such file or directory: chain "${name}" in table ${tableKey(t.family, t.name)}`);
    return ch;
  }

  function setRef(t: NftTable, name: string): NftSet {
    const s = t.sets.get(name);
    if (!s) fail(`Could not process rule: No such file or directory: set "${name}" in table ${tableKey(t.family, t.name)}`);
    return s;
  }

  function addRule(t: NftTable, ch: NftChain, r: NftRule, at?: number): void {
    // As nft does, a jump or a set is resolved when the rule is added, not at commit.
    for (const x of targetsOf(r)) if (!t.chains.has(x)) fail(`Could not process rule: No such file or directory: chain "${x}" does not exist in table ${tableKey(t.family, t.name)}`);
    for (const x of setsOf(r)) if (!t.sets.has(x)) fail(`Could not process rule: No such file or directory: set "${x}" does not exist in table ${tableKey(t.family, t.name)}`);
    // Inline map elements name chains by the chain's own string, not a slice of the script.
    for (const e of r.exprs) if (e.kind === 'vmap' && e.elements) for (const el of e.elements.values()) if (el.verdict && 'chain' in el.verdict) el.verdict.chain = t.chains.get(el.verdict.chain)!.name;
    if (r.verdict && 'chain' in r.verdict) r.verdict.chain = t.chains.get(r.verdict.chain)!.name;
    if (at === undefined) ch.rules.push(r);
    else ch.rules.splice(at, 0, r);
    for (const x of targetsOf(r)) bump(t, x, 1);
    added.push({ t, rule: r });
    undo.push(() => {
      const i = ch.rules.indexOf(r);
      if (i >= 0) ch.rules.splice(i, 1);
      for (const x of targetsOf(r)) bump(t, x, -1);
    });
  }

  function flushChain(t: NftTable, ch: NftChain): void {
    const old = ch.rules;
    ch.rules = [];
    for (const r of old) for (const x of targetsOf(r)) bump(t, x, -1);
    undo.push(() => {
      for (const r of ch.rules) for (const x of targetsOf(r)) bump(t, x, -1);
      ch.rules = old;
      for (const r of old) for (const x of targetsOf(r)) bump(t, x, 1);
    });
  }

  function putElement(t: NftTable, s: NftSet, el: NftElement, create: boolean): void {
    if (el.verdict && 'chain' in el.verdict) el.verdict.chain = t.chains.get(el.verdict.chain)?.name ?? el.verdict.chain;
    if (el.comment !== undefined) el.comment = Buffer.from(el.comment).toString();
    const prev = s.elements.get(el.key);
    if (prev && create) fail(`Could not process rule: File exists: element ${el.key} in set ${s.name}`);
    if (prev?.verdict && 'chain' in prev.verdict) bump(t, prev.verdict.chain, -1);
    if (el.verdict && 'chain' in el.verdict) bump(t, el.verdict.chain, 1);
    s.elements.set(el.key, el);
    added.push({ t, el, set: s });
    undo.push(() => {
      if (el.verdict && 'chain' in el.verdict) bump(t, el.verdict.chain, -1);
      if (prev) {
        s.elements.set(el.key, prev);
        if (prev.verdict && 'chain' in prev.verdict) bump(t, prev.verdict.chain, 1);
      } else s.elements.delete(el.key);
    });
  }

  function removeElement(t: NftTable, s: NftSet, key: string): void {
    const prev = s.elements.get(key);
    if (!prev) fail(`Could not process rule: No such file or directory: element ${key} in set ${s.name}`);
    s.elements.delete(key);
    if (prev.verdict && 'chain' in prev.verdict) bump(t, prev.verdict.chain, -1);
    undo.push(() => {
      s.elements.set(key, prev);
      if (prev.verdict && 'chain' in prev.verdict) bump(t, prev.verdict.chain, 1);
    });
  }

  function flushSet(t: NftTable, s: NftSet): void {
    const old = s.elements;
    s.elements = new Map();
    for (const e of old.values()) if (e.verdict && 'chain' in e.verdict) bump(t, e.verdict.chain, -1);
    undo.push(() => {
      for (const e of s.elements.values()) if (e.verdict && 'chain' in e.verdict) bump(t, e.verdict.chain, -1);
      s.elements = old;
      for (const e of old.values()) if (e.verdict && 'chain' in e.verdict) bump(t, e.verdict.chain, 1);
    });
  }

  function declareChain(t: NftTable, c: NftCursor, name: string, create: boolean): NftChain {
    checkChainName(name);
    // A token is a slice of the script: kept as a chain's name it would keep the whole script alive.
    if (!t.chains.has(name)) name = Buffer.from(name, 'latin1').toString('latin1');
    let ch = t.chains.get(name);
    if (ch && create) fail(`Could not process rule: File exists: chain "${name}"`);
    if (!ch) {
      const fresh: NftChain = { name, seq: st.seq++, rules: [] };
      ch = fresh;
      t.chains.set(name, fresh);
      undo.push(() => {
        t.chains.delete(name);
        baseChains(t).delete(fresh);
      });
    }
    if (c.peek() === '{') {
      c.i++;
      chainBody(t, c, ch, false);
    }
    return ch;
  }

  /** The inside of `chain X { ... }`: type/hook/priority/policy, comment, and (in list form) rules. */
  function chainBody(t: NftTable, c: NftCursor, ch: NftChain, rules: boolean): void {
    for (;;) {
      const w = c.peek();
      if (w === undefined) fail('syntax error, unexpected end of input in a chain');
      if (w === '}') {
        c.i++;
        return;
      }
      if (w === ';') {
        c.i++;
        continue;
      }
      if (w === 'type') {
        c.i++;
        const type = c.next('a chain type');
        if (type !== 'filter' && type !== 'nat' && type !== 'route') fail(`unknown chain type "${type}"`);
        c.expect('hook');
        const hook = c.next('a hook');
        if (!HOOKS.has(hook)) fail(`unknown hook "${hook}"`);
        c.expect('priority');
        const priority = parsePriority(c);
        const base = { type: type as 'filter' | 'nat' | 'route', hook: hook as NftHook, priority, policy: ch.base?.policy ?? ('accept' as const) };
        if (ch.base && (ch.base.type !== base.type || ch.base.hook !== base.hook || ch.base.priority !== base.priority))
          fail(`Could not process rule: Operation not supported: chain "${ch.name}" exists with another type, hook or priority`);
        if (!ch.base && ch.rules.length) fail(`chain "${ch.name}" exists as a regular chain`);
        const before = ch.base;
        ch.base = base;
        baseChains(t).add(ch);
        undo.push(() => {
          ch.base = before;
          if (!before) baseChains(t).delete(ch);
        });
        continue;
      }
      if (w === 'policy') {
        c.i++;
        const p = c.next('a policy');
        if (p !== 'accept' && p !== 'drop') fail(`bad policy "${p}"`);
        if (!ch.base) fail(`chain "${ch.name}": only base chains have a policy`);
        const before = ch.base.policy;
        ch.base.policy = p;
        undo.push(() => (ch.base!.policy = before));
        continue;
      }
      if (w === 'comment') {
        c.i++;
        const before = ch.comment;
        ch.comment = c.quoted('comment');
        undo.push(() => (ch.comment = before));
        continue;
      }
      if (!rules) fail(`syntax error, unexpected "${w}" in a chain declaration`);
      addRule(t, ch, st.parseRule(c, familyOf(t.family)));
    }
  }

  function declareSet(t: NftTable, c: NftCursor, name: string, isMap: boolean, create: boolean): NftSet {
    if (!/^[A-Za-z_.][A-Za-z0-9_./-]{0,255}$/.test(name)) fail(`invalid set name "${name}"`);
    const prev = t.sets.get(name);
    if (prev && create) fail(`Could not process rule: File exists: set "${name}"`);
    const spec: Partial<NftSet> = {};
    let els: string | undefined;
    if (c.peek() === '{') {
      c.i++;
      for (;;) {
        const w = c.next('a set property');
        if (w === '}') break;
        if (w === ';') continue;
        if (w === 'type') {
          const type: string[] = [c.next('a type')];
          while (c.peek() === '.') {
            c.i++;
            type.push(c.next('a type'));
          }
          for (const x of type) if (!TYPE_FIELD[x]) fail(`unsupported set key type "${x}"`);
          spec.type = type;
          if (isMap) {
            c.expect(':');
            const v = c.next('a data type');
            if (v !== 'verdict') fail(`map ${name}: only verdict maps are supported, not "${v}"`);
          }
        } else if (w === 'flags') {
          spec.flags = [c.next('flags')];
          while (c.peek() === ',') {
            c.i++;
            spec.flags.push(c.next('a flag'));
          }
          for (const f of spec.flags) if (!['dynamic', 'timeout', 'interval', 'constant'].includes(f)) fail(`unknown set flag "${f}"`);
        } else if (w === 'timeout') spec.timeoutS = parseDuration(c.next('a timeout'));
        else if (w === 'size') spec.size = Number(c.next('a size'));
        else if (w === 'comment') spec.comment = c.quoted('comment');
        else if (w === 'elements') {
          c.expect('=');
          c.expect('{');
          els = 'pending';
          if (!spec.type) fail(`set ${name}: elements before type`);
          const s = ensure();
          for (const el of parseElements(c, s.fields, familyOf(t.family), isMap)) putElement(t, s, el, false);
        } else fail(`syntax error, unexpected "${w}" in set ${name}`);
      }
    }
    return els ? t.sets.get(name)! : ensure();

    function ensure(): NftSet {
      const have = t.sets.get(name);
      if (have) {
        if (have.isMap !== isMap) fail(`${name} exists as a ${have.isMap ? 'map' : 'set'}`);
        if (spec.type && spec.type.join(' . ') !== have.type.join(' . ')) fail(`Could not process rule: File exists: set "${name}" has another type`);
        return have;
      }
      if (!spec.type) fail(`set ${name} needs a type`);
      const s: NftSet = {
        name,
        seq: st.seq++,
        isMap,
        type: spec.type,
        fields: spec.type.map((x) => TYPE_FIELD[x]!),
        flags: spec.flags ?? [],
        timeoutS: spec.timeoutS,
        // The kernel gives a set that rules add to a default size, and lists it.
        size: spec.size ?? (spec.flags?.includes('dynamic') ? 65535 : undefined),
        comment: spec.comment,
        elements: new Map(),
      };
      t.sets.set(name, s);
      undo.push(() => t.sets.delete(name));
      return s;
    }
  }

  function command(c: NftCursor): void {
    const verb = c.next('a command');
    if (verb === 'table') {
      // The block form `nft list` prints.
      const t = tableRef(c, true);
      c.expect('{');
      // Chains may be named before they are listed (a base chain jumping to a later one): declare them all.
      for (let k = c.i, depth = 0; k < c.toks.length; k++) {
        const tok = c.toks[k]!;
        if (tok.quoted) continue;
        if (tok.t === '{') depth++;
        else if (tok.t === '}') {
          if (depth === 0) break;
          depth--;
        } else if (depth === 0 && tok.t === 'chain' && c.toks[k + 1]) declareChain(t, new NftCursor([]), c.toks[k + 1]!.t, false);
      }
      for (;;) {
        const w = c.next('a table item');
        if (w === '}') return;
        if (w === ';') continue;
        if (w === 'comment') t.comment = c.quoted('comment');
        else if (w === 'chain') {
          const ch = declareChain(t, new NftCursor([]), c.next('a chain name'), false);
          c.expect('{');
          chainBody(t, c, ch, true);
        } else if (w === 'set' || w === 'map') declareSet(t, c, c.next('a set name'), w === 'map', false);
        else fail(`syntax error, unexpected "${w}" in table`);
      }
    }
    const obj = c.next('an object');
    if (verb === 'add' || verb === 'create') {
      if (obj === 'table') {
        const fam = c.peek();
        const name = c.peek(1);
        const existed = st.tables.has(tableKey(fam as NftFamily, name ?? ''));
        if (existed && verb === 'create') fail(`Could not process rule: File exists: table ${fam} ${name}`);
        const t = tableRef(c, true);
        if (c.peek() === '{') {
          c.i++;
          for (;;) {
            const w = c.next('a table option');
            if (w === '}') break;
            if (w === ';') continue;
            if (w !== 'comment') fail(`syntax error, unexpected "${w}" in table`);
            const before = t.comment;
            t.comment = c.quoted('comment');
            undo.push(() => (t.comment = before));
          }
        }
        return;
      }
      const t = tableRef(c, false);
      if (obj === 'chain') return void declareChain(t, c, c.next('a chain name'), verb === 'create');
      if (obj === 'set' || obj === 'map') return void declareSet(t, c, c.next('a set name'), obj === 'map', verb === 'create');
      if (obj === 'rule') {
        const ch = chainRef(t, c.next('a chain name'));
        return addRule(t, ch, st.parseRule(c, familyOf(t.family)));
      }
      if (obj === 'element') {
        const s = setRef(t, c.next('a set name'));
        c.expect('{');
        for (const el of parseElements(c, s.fields, familyOf(t.family), s.isMap)) putElement(t, s, el, verb === 'create');
        return;
      }
      fail(`syntax error, unexpected "${obj}" after ${verb}`);
    }
    if (verb === 'insert' && obj === 'rule') {
      const t = tableRef(c, false);
      const ch = chainRef(t, c.next('a chain name'));
      return addRule(t, ch, st.parseRule(c, familyOf(t.family)), 0);
    }
    if (verb === 'flush') {
      if (obj === 'ruleset') {
        for (const [k, t] of [...st.tables]) {
          st.tables.delete(k);
          undo.push(() => st.tables.set(k, t));
        }
        return;
      }
      const t = tableRef(c, false);
      if (obj === 'table') {
        for (const ch of t.chains.values()) flushChain(t, ch);
        for (const s of t.sets.values()) flushSet(t, s);
        return;
      }
      if (obj === 'chain') return flushChain(t, chainRef(t, c.next('a chain name')));
      if (obj === 'set' || obj === 'map') return flushSet(t, setRef(t, c.next('a set name')));
      fail(`syntax error, unexpected "${obj}" after flush`);
    }
    if (verb === 'delete' || verb === 'destroy') {
      const soft = verb === 'destroy';
      if (obj === 'table') {
        const fam = c.next('a family') as NftFamily;
        const k = tableKey(fam, c.next('a table name'));
        const t = st.tables.get(k);
        if (!t) {
          if (soft) return;
          fail(`Could not process rule: No such file or directory: table ${k}`);
        }
        st.tables.delete(k);
        undo.push(() => st.tables.set(k, t));
        return;
      }
      const t = tableRef(c, false);
      if (obj === 'chain') {
        const name = c.next('a chain name');
        const ch = t.chains.get(name);
        if (!ch) {
          if (soft) return;
          fail(`Could not process rule: No such file or directory: chain "${name}"`);
        }
        if (ch.rules.length) fail(`Could not process rule: Device or resource busy: chain "${name}" is not empty`);
        t.chains.delete(name);
        const wasBase = baseChains(t).delete(ch);
        deletedChains.push({ t, name });
        undo.push(() => {
          t.chains.set(name, ch);
          if (wasBase) baseChains(t).add(ch);
        });
        return;
      }
      if (obj === 'set' || obj === 'map') {
        const name = c.next('a set name');
        const s = t.sets.get(name);
        if (!s) {
          if (soft) return;
          fail(`Could not process rule: No such file or directory: set "${name}"`);
        }
        flushSet(t, s);
        t.sets.delete(name);
        undo.push(() => t.sets.set(name, s));
        return;
      }
      if (obj === 'element') {
        const s = setRef(t, c.next('a set name'));
        c.expect('{');
        for (const el of parseElements(c, s.fields, familyOf(t.family), false)) removeElement(t, s, el.key);
        return;
      }
      fail(`syntax error, unexpected "${obj}" after delete`);
    }
    fail(`syntax error, unexpected "${verb}"`);
  }
}

function braces(s: string): number {
  let d = 0;
  let q = false;
  for (const ch of s) {
    if (ch === '"') q = !q;
    else if (!q && ch === '{') d++;
    else if (!q && ch === '}') d--;
  }
  return d;
}

function elementText(e: NftElement, now: number): string {
  const exp = e.expiresUs !== undefined ? ` expires ${formatDuration(Math.max(0, Math.ceil((e.expiresUs - now) / 1e6)))}` : '';
  return `${e.key}${exp}${e.comment !== undefined ? ` comment ${JSON.stringify(e.comment)}` : ''}${e.verdict ? ` : ${verdictText(e.verdict)}` : ''}`;
}

function priorityText(b: NonNullable<NftChain['base']>): string {
  if (b.type === 'nat' && b.priority === -100 && (b.hook === 'prerouting' || b.hook === 'output')) return 'dstnat';
  if (b.type === 'nat' && b.priority === 100 && (b.hook === 'postrouting' || b.hook === 'input')) return 'srcnat';
  if (b.type === 'filter' && b.priority === 0) return 'filter';
  return String(b.priority);
}

/** `nft list table FAMILY NAME`. Elements are printed in key order (the kernel's order is its hash's). */
export function nftList(st: NftState, family: NftFamily, name: string, now = 0): string {
  const t = st.tables.get(tableKey(family, name));
  if (!t) throw new NetsimError('ENOENT', `No such file or directory: table ${family} ${name}`);
  const out: string[] = [`table ${family} ${name} {`];
  if (t.comment !== undefined) out.push(`\tcomment ${JSON.stringify(t.comment)}`);
  const blocks: string[][] = [];
  for (const s of [...t.sets.values()].sort((a, b) => a.seq - b.seq)) {
    const b = [`\t${s.isMap ? 'map' : 'set'} ${s.name} {`, `\t\ttype ${s.type.join(' . ')}${s.isMap ? ' : verdict' : ''}`];
    if (s.size !== undefined) b.push(`\t\tsize ${s.size}`);
    if (s.flags.length) b.push(`\t\tflags ${s.flags.join(',')}`);
    if (s.timeoutS !== undefined) b.push(`\t\ttimeout ${formatDuration(s.timeoutS)}`);
    if (s.comment !== undefined) b.push(`\t\tcomment ${JSON.stringify(s.comment)}`);
    const live = [...s.elements.values()].filter((e) => e.expiresUs === undefined || e.expiresUs > now);
    if (live.length) {
      const sorted = live.map((e) => elementText(e, now)).sort(naturalCompare);
      b.push(`\t\telements = { ${sorted.join(',\n\t\t\t     ')} }`);
    }
    b.push('\t}');
    blocks.push(b);
  }
  for (const ch of [...t.chains.values()].sort((a, b) => a.seq - b.seq)) {
    const b = [`\tchain ${ch.name} {`];
    if (ch.base) b.push(`\t\ttype ${ch.base.type} hook ${ch.base.hook} priority ${priorityText(ch.base)}; policy ${ch.base.policy};`);
    if (ch.comment !== undefined) b.push(`\t\tcomment ${JSON.stringify(ch.comment)}`);
    for (const r of ch.rules) b.push(`\t\t${r.text}`);
    b.push('\t}');
    blocks.push(b);
  }
  blocks.forEach((b, i) => {
    out.push(...b);
    if (i < blocks.length - 1) out.push('');
  });
  out.push('}');
  return `${out.join('\n')}\n`;
}

/** Orders "10.96.0.9 . tcp . 80" before "10.96.0.10 . tcp . 80": digit runs compare as numbers. */
function naturalCompare(a: string, b: string): number {
  const ra = a.split(/(\d+)/);
  const rb = b.split(/(\d+)/);
  for (let i = 0; i < Math.min(ra.length, rb.length); i++) {
    if (ra[i] === rb[i]) continue;
    const na = Number(ra[i]);
    const nb = Number(rb[i]);
    if (i % 2 === 1 && !Number.isNaN(na) && !Number.isNaN(nb)) return na - nb;
    return ra[i]! < rb[i]! ? -1 : 1;
  }
  return ra.length - rb.length;
}

export type { NftVerdict, NftElement };
export { elementKey };
