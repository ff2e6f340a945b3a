// A namespace's netfilter rule set: the four tables with their built-in chains and policies, user
// chains, nftables-style sets and verdict maps, and the iptables-restore / iptables-save text forms.
// Loading is all-or-nothing per call, as iptables-restore commits a table or nothing.
import type { Family } from '@kemu/ip';
import { NetsimError } from './errors.js';
import { NftState } from './nf-nft-table.js';
import { BUILTIN_TARGETS, type NfRule, type NfTableName, parseRule, splitWords } from './nf-rule.js';

export interface NfChain {
  name: string;
  /** Built-in chains have a policy; user chains return to their caller at the end. */
  policy?: 'ACCEPT' | 'DROP';
  rules: NfRule[];
}

export type NfTable = Map<string, NfChain>;

/** A verdict map (nft `vmap`) or a plain set: element key (parts joined by " . ") to verdict. */
export interface NfMap {
  name: string;
  /** Verdicts are "accept", "drop", "jump CHAIN" or "goto CHAIN"; a plain set holds "member". */
  elements: Map<string, string>;
}

/** Chains each table has from the start, in hook order (as the kernel registers them). */
export const BUILTIN_CHAINS: Record<NfTableName, string[]> = {
  raw: ['PREROUTING', 'OUTPUT'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
};

export const TABLE_NAMES: NfTableName[] = ['raw', 'mangle', 'nat', 'filter'];

/** One family's rule sets (iptables and ip6tables keep separate ones), plus the maps both share. */
export class Netfilter {
  readonly v4 = new Map<NfTableName, NfTable>();
  readonly v6 = new Map<NfTableName, NfTable>();
  readonly maps = new Map<string, NfMap>();
  /** The nftables tables (`nft -f`), which run at the same hooks by priority (shared: see World.nftShare). */
  nft = new NftState();
  /** The `recent` match's lists: name -> source key -> last seen (virtual us). */
  readonly recent = new Map<string, Map<string, number>>();
  /** Number of rules in all tables: 0 lets the datapath skip netfilter entirely. */
  ruleCount = 0;
  /** Bumped by every change to the rules or maps (each one ends in recount; a restore that leaves every rule as it was is none), so a writer can tell whether anyone changed them since it last wrote. */
  generation = 0;

  tables(family: Family): Map<NfTableName, NfTable> {
    return family === 4 ? this.v4 : this.v6;
  }

  table(family: Family, name: NfTableName): NfTable {
    const ts = this.tables(family);
    let t = ts.get(name);
    if (!t) {
      t = emptyTable(name);
      ts.set(name, t);
    }
    return t;
  }

  recount(): void {
    this.generation++;
    let n = 0;
    for (const ts of [this.v4, this.v6]) for (const t of ts.values()) for (const c of t.values()) n += c.rules.length + (c.policy === 'DROP' ? 1 : 0);
    this.ruleCount = n + this.maps.size;
  }
}

function emptyTable(name: NfTableName): NfTable {
  const t: NfTable = new Map();
  for (const c of BUILTIN_CHAINS[name]) t.set(c, { name: c, policy: 'ACCEPT', rules: [] });
  return t;
}

function isTableName(s: string): s is NfTableName {
  return (TABLE_NAMES as string[]).includes(s);
}

export interface RestoreOptions {
  /** `--noflush`: keep what a table holds and apply the input on top (kube-proxy's partial syncs). */
  noflush?: boolean;
}

/**
 * Applies iptables-restore input. Each `*table ... COMMIT` block is checked completely (every jump names
 * an existing chain, no chain deleted while referenced) before it replaces the live table, so an error
 * leaves the table as it was. Errors name the input line, like iptables-restore's.
 */
export function restore(nf: Netfilter, family: Family, text: string, o: RestoreOptions = {}): void {
  const lines = text.split('\n');
  let cur: { name: NfTableName; t: NfTable; start: number } | null = null;
  const staged: { name: NfTableName; t: NfTable }[] = [];
  function fail(n: number, msg: string): never {
    throw new NetsimError('EINVAL', `line ${n}: ${msg}`);
  }
  for (let i = 0; i < lines.length; i++) {
    const n = i + 1;
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('*')) {
      if (cur) fail(n, `table "${cur.name}" is missing COMMIT`);
      const name = line.slice(1);
      if (!isTableName(name)) fail(n, `table "${name}" does not exist`);
      const t = o.noflush ? cloneTable(nf.table(family, name)) : emptyTable(name);
      cur = { name, t, start: n };
      continue;
    }
    if (!cur) fail(n, 'no table specified');
    if (line === 'COMMIT') {
      check(cur.t, cur.name, (m) => fail(n, m));
      staged.push({ name: cur.name, t: cur.t });
      cur = null;
      continue;
    }
    if (line.startsWith(':')) {
      const m = /^:(\S+)\s+(\S+)(?:\s+\[\d+:\d+\])?$/.exec(line);
      if (!m) fail(n, `bad chain line "${line}"`);
      const [, chain, policy] = m;
      if (!/^[A-Za-z0-9_.-]{1,28}$/.test(chain!) || BUILTIN_TARGETS.has(chain!)) fail(n, `invalid chain name "${chain}"`);
      const builtin = BUILTIN_CHAINS[cur.name].includes(chain!);
      if (builtin) {
        // A built-in chain's line sets its policy (the table was emptied already unless --noflush).
        if (policy !== 'ACCEPT' && policy !== 'DROP') fail(n, `bad built-in chain policy "${policy}"`);
        cur.t.get(chain!)!.policy = policy as 'ACCEPT' | 'DROP';
      } else {
        // Declaring a user chain creates it, or flushes it under --noflush, as iptables-restore does.
        if (policy !== '-') fail(n, `user chain "${chain}" cannot have a policy`);
        cur.t.set(chain!, { name: chain!, rules: [] });
      }
      continue;
    }
    let words: string[];
    try {
      words = splitWords(line);
    } catch (err) {
      return fail(n, (err as Error).message);
    }
    const op = words[0];
    const chain = words[1];
    if (op === '-X' || op === '--delete-chain') {
      if (!chain || !cur.t.has(chain)) fail(n, `chain "${String(chain)}" does not exist`);
      if (BUILTIN_CHAINS[cur.name].includes(chain)) fail(n, `cannot delete built-in chain "${chain}"`);
      cur.t.delete(chain);
      continue;
    }
    if (op === '-F' || op === '--flush') {
      if (!chain) for (const c of cur.t.values()) c.rules = [];
      else if (!cur.t.has(chain)) fail(n, `chain "${chain}" does not exist`);
      else cur.t.get(chain)!.rules = [];
      continue;
    }
    if (op === '-A' || op === '--append' || op === '-I' || op === '--insert') {
      const c = chain ? cur.t.get(chain) : undefined;
      if (!c) fail(n, `chain "${String(chain)}" does not exist`);
      let rest = words.slice(2);
      let pos = op.startsWith('-A') || op === '--append' ? c.rules.length : 0;
      if ((op === '-I' || op === '--insert') && /^\d+$/.test(rest[0] ?? '')) {
        pos = Number(rest[0]) - 1;
        rest = rest.slice(1);
        if (pos < 0 || pos > c.rules.length) fail(n, `index of insertion too big`);
      }
      let r: NfRule;
      try {
        r = parseRule(rest, family);
      } catch (err) {
        return fail(n, (err as Error).message);
      }
      if (cur.name !== 'nat' && (r.target?.kind === 'DNAT' || r.target?.kind === 'SNAT' || r.target?.kind === 'MASQUERADE'))
        fail(n, `target ${r.target.kind} is only valid in the nat table`);
      c.rules.splice(pos, 0, r);
      continue;
    }
    fail(n, `unknown command "${String(op)}"`);
  }
  if (cur) fail(lines.length, `table "${cur.name}" is missing COMMIT`);
  const unchanged = staged.every((s) => sameRules(nf.tables(family).get(s.name), s.t));
  // The new tables go in even when they hold the same rules: the chains they declared start from zero
  // counters, as with iptables-restore. Only a change of rules is a new generation (see Netfilter.generation).
  for (const s of staged) nf.tables(family).set(s.name, s.t);
  if (!unchanged) nf.recount();
}

/** Whether two versions of a table have the same chains, policies and rules (counters aside). */
function sameRules(before: NfTable | undefined, after: NfTable): boolean {
  if (!before || before.size !== after.size) return false;
  for (const [name, c] of after) {
    const b = before.get(name);
    if (!b || b.policy !== c.policy || b.rules.length !== c.rules.length) return false;
    for (let i = 0; i < c.rules.length; i++) if (b.rules[i] !== c.rules[i] && b.rules[i]!.spec !== c.rules[i]!.spec) return false;
  }
  return true;
}

function cloneTable(t: NfTable): NfTable {
  const out: NfTable = new Map();
  for (const [k, c] of t) out.set(k, { name: c.name, policy: c.policy, rules: [...c.rules] });
  return out;
}

/** Every jump and goto names a chain of the table; built-in chains are never jump targets. */
function check(t: NfTable, name: NfTableName, fail: (m: string) => never): void {
  for (const c of t.values()) {
    for (const r of c.rules) {
      const tg = r.target;
      if (tg?.kind !== 'jump' && tg?.kind !== 'goto') continue;
      if (!t.has(tg.chain)) fail(`chain "${c.name}" jumps to "${tg.chain}", which does not exist in table ${name}`);
      if (BUILTIN_CHAINS[name].includes(tg.chain)) fail(`chain "${c.name}" jumps to built-in chain "${tg.chain}"`);
    }
  }
}

/** The family's tables as iptables-save prints them (tables that were never touched are left out). */
export function save(nf: Netfilter, family: Family, only?: NfTableName): string {
  const out: string[] = [];
  for (const name of TABLE_NAMES) {
    if (only && name !== only) continue;
    const t = nf.tables(family).get(name);
    if (!t) continue;
    out.push(`*${name}`);
    const builtin = BUILTIN_CHAINS[name];
    const chains = [...builtin.map((b) => t.get(b)!), ...[...t.values()].filter((c) => !builtin.includes(c.name)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))];
    for (const c of chains) out.push(`:${c.name} ${c.policy ?? '-'} [0:0]`);
    for (const c of chains) for (const r of c.rules) out.push(`-A ${c.name}${r.spec ? ` ${r.spec}` : ''}`);
    out.push('COMMIT');
  }
  return out.length ? `${out.join('\n')}\n` : '';
}

/** Creates or replaces a verdict map / set. Verdicts: accept, drop, "jump CHAIN", "goto CHAIN", member. */
export function setMap(nf: Netfilter, name: string, elements: Record<string, string>): void {
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) throw new NetsimError('EINVAL', `invalid map name "${name}"`);
  const m = new Map<string, string>();
  for (const [k, v] of Object.entries(elements)) {
    if (!/^(accept|drop|member|(jump|goto) [A-Za-z0-9_.-]{1,28})$/.test(v))
      throw new NetsimError('EINVAL', `map ${name}: bad verdict "${v}" for element "${k}"`);
    m.set(k, v);
  }
  nf.maps.set(name, { name, elements: m });
  nf.recount();
}

export function deleteMap(nf: Netfilter, name: string): void {
  if (!nf.maps.delete(name)) throw new NetsimError('ENOENT', `map "${name}" does not exist`);
  nf.recount();
}
