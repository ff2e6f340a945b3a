// One iptables rule: its parsed form (the matches and the target kube-proxy and Calico use) and its text
// as iptables-save prints it, so a rule set loaded from iptables-restore text reads back the same way.
import { type Family, formatIpBytes, parseAddrWithLen, type Prefix, toPrefix } from '@kemu/ip';
import { NetsimError } from './errors.js';

export type NfTableName = 'raw' | 'mangle' | 'nat' | 'filter';

export interface PortRange {
  lo: number;
  hi: number;
}

export type NfMatch =
  | { kind: 'comment'; text: string }
  | { kind: 'l4'; proto: 'tcp' | 'udp' | 'sctp'; sport?: PortRange; sportNeg?: boolean; dport?: PortRange; dportNeg?: boolean }
  | { kind: 'multiport'; dports?: PortRange[]; sports?: PortRange[]; neg: boolean }
  | { kind: 'mark'; value: number; mask: number; neg: boolean }
  | { kind: 'statistic-random'; probability: number }
  | { kind: 'statistic-nth'; every: number; packet: number; count: number }
  | { kind: 'addrtype'; dstType?: string; dstNeg?: boolean; srcType?: string; srcNeg?: boolean }
  | { kind: 'ctstate'; states: string[]; neg: boolean; via: 'conntrack' | 'state' }
  | { kind: 'recent'; op: 'set' | 'rcheck' | 'update' | 'remove'; name: string; seconds?: number; reap: boolean; mask: string; side: 'rsource' | 'rdest' }
  | { kind: 'set'; name: string; dirs: ('src' | 'dst')[]; neg: boolean };

export type NfTarget =
  | { kind: 'ACCEPT' | 'DROP' | 'RETURN' | 'NOTRACK' }
  | { kind: 'REJECT'; with: string }
  | { kind: 'jump' | 'goto'; chain: string }
  | { kind: 'DNAT' | 'SNAT'; addr: Uint8Array; family: Family; port?: PortRange }
  | { kind: 'MASQUERADE'; randomFully: boolean; random: boolean }
  | { kind: 'MARK'; value: number; mask: number }
  | { kind: 'LOG'; prefix: string }
  /** nftables-style verdict map: the verdict is looked up by a key built from the packet. */
  | { kind: 'VMAP'; map: string; key: VmapKeyPart[] };

export type VmapKeyPart = 'saddr' | 'daddr' | 'l4proto' | 'sport' | 'dport';

export interface NfRule {
  src?: Prefix;
  srcNeg?: boolean;
  dst?: Prefix;
  dstNeg?: boolean;
  /** IP protocol number; 0 = any. */
  proto?: number;
  protoNeg?: boolean;
  inIf?: string;
  inIfNeg?: boolean;
  outIf?: string;
  outIfNeg?: boolean;
  matches: NfMatch[];
  target?: NfTarget;
  /** The rule as iptables-save prints it, without `-A CHAIN`. */
  spec: string;
  /** Packets and bytes that matched (the counters iptables -v shows). */
  packets: number;
  bytes: number;
}

const PROTOS: Record<string, number> = { tcp: 6, udp: 17, icmp: 1, sctp: 132, icmpv6: 58, 'ipv6-icmp': 58, all: 0 };
const PROTO_NAMES: Record<number, string> = { 6: 'tcp', 17: 'udp', 1: 'icmp', 132: 'sctp', 58: 'ipv6-icmp' };
const STATES = new Set(['NEW', 'ESTABLISHED', 'RELATED', 'INVALID', 'UNTRACKED', 'SNAT', 'DNAT']);
const ADDR_TYPES = new Set(['UNSPEC', 'UNICAST', 'LOCAL', 'BROADCAST', 'ANYCAST', 'MULTICAST', 'BLACKHOLE', 'UNREACHABLE', 'PROHIBIT']);
const REJECT_WITH = new Set([
  'icmp-net-unreachable', 'icmp-host-unreachable', 'icmp-port-unreachable', 'icmp-proto-unreachable',
  'icmp-net-prohibited', 'icmp-host-prohibited', 'icmp-admin-prohibited', 'tcp-reset',
  'icmp6-no-route', 'icmp6-adm-prohibited', 'icmp6-addr-unreachable', 'icmp6-port-unreachable',
]);

export const BUILTIN_TARGETS = new Set(['ACCEPT', 'DROP', 'RETURN', 'REJECT', 'DNAT', 'SNAT', 'MASQUERADE', 'MARK', 'LOG', 'NOTRACK', 'CT', 'VMAP']);

/** Splits one line of iptables-restore input into words, honouring double quotes as the shell would. */
export function splitWords(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  let quote = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quote) {
      if (ch === '\\' && (line[i + 1] === '"' || line[i + 1] === '\\')) cur += line[++i];
      else if (ch === '"') quote = false;
      else cur += ch;
    } else if (ch === '"') {
      quote = true;
      inWord = true;
    } else if (ch === ' ' || ch === '\t') {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += ch;
      inWord = true;
    }
  }
  if (quote) throw new NetsimError('EINVAL', `unterminated quote in "${line}"`);
  if (inWord) out.push(cur);
  return out;
}

function bad(msg: string): never {
  throw new NetsimError('EINVAL', msg);
}

function parsePorts(s: string | undefined, opt: string): PortRange {
  const m = s === undefined ? null : /^(\d{1,5})(?::(\d{1,5}))?$/.exec(s);
  if (!m) bad(`${opt}: invalid port/service "${String(s)}" specified`);
  const lo = Number(m[1]);
  const hi = m[2] === undefined ? lo : Number(m[2]);
  if (lo > 65535 || hi > 65535 || hi < lo) bad(`${opt}: invalid port range "${s}"`);
  return { lo, hi };
}

function parseNum(s: string | undefined, what: string): number {
  if (s === undefined || !/^(0x[0-9a-fA-F]{1,8}|\d{1,10})$/.test(s)) bad(`${what}: bad value "${String(s)}"`);
  const n = Number(s);
  if (n > 0xffffffff) bad(`${what}: value "${s}" out of range`);
  return n >>> 0;
}

function parseValueMask(s: string | undefined, what: string, defMask = 0xffffffff): { value: number; mask: number } {
  if (s === undefined) bad(`${what}: value missing`);
  const [v, m] = s.split('/');
  return { value: parseNum(v, what), mask: m === undefined ? defMask : parseNum(m, what) };
}

function parseAddr(s: string | undefined, opt: string): Prefix {
  const a = s === undefined ? null : parseAddrWithLen(s);
  if (!a) bad(`host/network \`${String(s)}' not found (${opt})`);
  return toPrefix(a.ip, a.len);
}

const hex = (n: number) => `0x${(n >>> 0).toString(16)}`;
const fmtPorts = (r: PortRange) => (r.lo === r.hi ? `${r.lo}` : `${r.lo}:${r.hi}`);
const fmtPrefix = (p: Prefix) => `${formatIpBytes(p.bytes, 0, p.family)}/${p.len}`;

/** iptables-save quotes a comment when the shell would need it to. */
function quoteComment(t: string): string {
  return /^[A-Za-z0-9_./:=,+@%-]+$/.test(t) ? t : `"${t.replace(/(["\\])/g, '\\$1')}"`;
}

/**
 * Parses the words after `-A CHAIN` of one rule. Addresses of the other family than `family` are an
 * error, as iptables (IPv4) and ip6tables each refuse the other's.
 */
export function parseRule(words: string[], family: Family): NfRule {
  const r: NfRule = { matches: [], spec: '', packets: 0, bytes: 0 };
  let neg = false;
  let i = 0;
  let l4: Extract<NfMatch, { kind: 'l4' }> | undefined;
  let current: NfMatch | undefined;
  const take = (opt: string) => {
    const v = words[++i];
    if (v === undefined) bad(`option "${opt}" requires an argument`);
    return v;
  };
  const takeNeg = () => {
    const n = neg;
    neg = false;
    return n;
  };
  const famCheck = (p: Prefix, opt: string) => {
    if (p.family !== family) bad(`${opt}: ${fmtPrefix(p)} is not an IPv${family} address`);
    return p;
  };
  for (; i < words.length; i++) {
    const w = words[i]!;
    if (w === '!') {
      neg = true;
      continue;
    }
    switch (w) {
      case '-s':
      case '--source':
        r.src = famCheck(parseAddr(take(w), w), w);
        r.srcNeg = takeNeg();
        continue;
      case '-d':
      case '--destination':
        r.dst = famCheck(parseAddr(take(w), w), w);
        r.dstNeg = takeNeg();
        continue;
      case '-p':
      case '--protocol': {
        const v = take(w).toLowerCase();
        const n = PROTOS[v] ?? (/^\d{1,3}$/.test(v) && Number(v) < 256 ? Number(v) : undefined);
        if (n === undefined) bad(`unknown protocol "${v}" specified`);
        r.proto = n;
        r.protoNeg = takeNeg();
        continue;
      }
      case '-i':
      case '--in-interface':
        r.inIf = take(w);
        r.inIfNeg = takeNeg();
        continue;
      case '-o':
      case '--out-interface':
        r.outIf = take(w);
        r.outIfNeg = takeNeg();
        continue;
      case '-m':
      case '--match': {
        const name = take(w);
        current = undefined;
        if (name === 'tcp' || name === 'udp' || name === 'sctp') {
          if (PROTO_NAMES[r.proto ?? -1] !== name) bad(`match "${name}" needs "-p ${name}" first`);
          l4 = { kind: 'l4', proto: name };
          r.matches.push(l4);
          current = l4;
        } else if (name === 'comment') current = { kind: 'comment', text: '' };
        else if (name === 'multiport') current = { kind: 'multiport', neg: false };
        else if (name === 'mark') current = { kind: 'mark', value: 0, mask: 0xffffffff, neg: false };
        else if (name === 'statistic') current = { kind: 'statistic-random', probability: -1 };
        else if (name === 'addrtype') current = { kind: 'addrtype' };
        else if (name === 'conntrack' || name === 'state') current = { kind: 'ctstate', states: [], neg: false, via: name };
        else if (name === 'recent') current = { kind: 'recent', op: 'rcheck', name: 'DEFAULT', reap: false, mask: '255.255.255.255', side: 'rsource' };
        else if (name === 'set') current = { kind: 'set', name: '', dirs: [], neg: false };
        else bad(`Couldn't load match \`${name}'`);
        if (current.kind !== 'l4') r.matches.push(current);
        continue;
      }
      case '-j':
      case '--jump':
      case '-g':
      case '--goto': {
        const t = take(w);
        if (w === '-g' || w === '--goto') {
          if (BUILTIN_TARGETS.has(t)) bad(`goto needs a chain, not target ${t}`);
          r.target = { kind: 'goto', chain: t };
        } else if (t === 'ACCEPT' || t === 'DROP' || t === 'RETURN' || t === 'NOTRACK') r.target = { kind: t };
        else if (t === 'CT') r.target = { kind: 'NOTRACK' };
        else if (t === 'REJECT') r.target = { kind: 'REJECT', with: family === 4 ? 'icmp-port-unreachable' : 'icmp6-port-unreachable' };
        else if (t === 'MASQUERADE') r.target = { kind: 'MASQUERADE', randomFully: false, random: false };
        else if (t === 'DNAT' || t === 'SNAT') r.target = { kind: t, addr: new Uint8Array(0), family };
        else if (t === 'MARK') r.target = { kind: 'MARK', value: 0, mask: 0 };
        else if (t === 'LOG') r.target = { kind: 'LOG', prefix: '' };
        else if (t === 'VMAP') r.target = { kind: 'VMAP', map: '', key: [] };
        else if (/^[A-Za-z0-9_.-]{1,28}$/.test(t) && !t.startsWith('-')) r.target = { kind: 'jump', chain: t };
        else bad(`invalid target name "${t}"`);
        current = undefined;
        continue;
      }
    }
    // Options of the match or target just named.
    const t = r.target;
    if (t) {
      if ((t.kind === 'DNAT' || t.kind === 'SNAT') && (w === '--to-destination' || w === '--to-source')) {
        const v = take(w);
        const m = /^\[([^\]]+)\](?::(\d+(?:-\d+)?))?$/.exec(v) ?? /^([^:]+)(?::(\d+(?:-\d+)?))?$/.exec(v);
        const a = m ? parseAddrWithLen(m[1]!) : null;
        if (!m || !a || a.len !== (family === 4 ? 32 : 128) || a.ip.family !== family) bad(`bad IP address "${v}" for ${w}`);
        t.addr = a.ip.bytes;
        if (m[2] !== undefined) t.port = parsePorts(m[2].replace('-', ':'), w);
        continue;
      }
      if (t.kind === 'MASQUERADE' && (w === '--random-fully' || w === '--random')) {
        if (w === '--random-fully') t.randomFully = true;
        else t.random = true;
        continue;
      }
      if (t.kind === 'MARK') {
        if (w === '--set-xmark' || w === '--set-mark') {
          const { value, mask } = parseValueMask(take(w), w);
          t.value = value;
          t.mask = mask;
          continue;
        }
        if (w === '--or-mark') {
          const v = parseNum(take(w), w);
          t.value = v;
          t.mask = v;
          continue;
        }
        if (w === '--xor-mark') {
          t.value = parseNum(take(w), w);
          t.mask = 0;
          continue;
        }
        if (w === '--and-mark') {
          t.value = 0;
          t.mask = ~parseNum(take(w), w) >>> 0;
          continue;
        }
      }
      if (t.kind === 'REJECT' && w === '--reject-with') {
        const v = take(w);
        if (!REJECT_WITH.has(v)) bad(`unknown reject type "${v}"`);
        t.with = v;
        continue;
      }
      if (t.kind === 'LOG' && (w === '--log-prefix' || w === '--log-level')) {
        const v = take(w);
        if (w === '--log-prefix') t.prefix = v;
        continue;
      }
      if (t.kind === 'NOTRACK' && w === '--notrack') continue;
      if (t.kind === 'VMAP' && (w === '--map' || w === '--key')) {
        const v = take(w);
        if (w === '--map') t.map = v;
        else {
          const parts = v.split('.') as VmapKeyPart[];
          if (!parts.every((p) => ['saddr', 'daddr', 'l4proto', 'sport', 'dport'].includes(p))) bad(`bad vmap key "${v}"`);
          t.key = parts;
        }
        continue;
      }
      bad(`unknown option "${w}" for target ${t.kind === 'jump' || t.kind === 'goto' ? t.chain : t.kind}`);
    }
    const c = current;
    const n = takeNeg();
    if (c?.kind === 'l4' && (w === '--dport' || w === '--destination-port' || w === '--sport' || w === '--source-port')) {
      const pr = parsePorts(take(w), w);
      if (w.includes('d')) [c.dport, c.dportNeg] = [pr, n];
      else [c.sport, c.sportNeg] = [pr, n];
      continue;
    }
    if (c?.kind === 'comment' && w === '--comment') {
      c.text = take(w);
      if (c.text.length > 256) bad('comment may not exceed 256 characters');
      continue;
    }
    if (c?.kind === 'multiport' && (w === '--dports' || w === '--destination-ports' || w === '--sports' || w === '--source-ports')) {
      const list = take(w).split(',').map((s) => parsePorts(s, w));
      if (list.length > 15) bad('multiport: too many ports specified');
      if (w.startsWith('--d')) c.dports = list;
      else c.sports = list;
      c.neg = n;
      continue;
    }
    if (c?.kind === 'mark' && w === '--mark') {
      Object.assign(c, parseValueMask(take(w), w), { neg: n });
      continue;
    }
    if ((c?.kind === 'statistic-random' || c?.kind === 'statistic-nth') && w === '--mode') {
      const v = take(w);
      if (v === 'nth') Object.assign(c, { kind: 'statistic-nth', every: 0, packet: 0, count: 0 });
      else if (v !== 'random') bad(`statistic: bad mode "${v}"`);
      continue;
    }
    if (c?.kind === 'statistic-random' && w === '--probability') {
      const v = take(w);
      const p = Number(v);
      if (!/^\d*\.?\d+$/.test(v) || !(p >= 0 && p <= 1)) bad(`statistic: invalid probability "${v}"`);
      // The kernel keeps the probability as a 31-bit fraction; iptables-save prints that value back.
      c.probability = Math.round(p * 0x80000000) / 0x80000000;
      continue;
    }
    if (c?.kind === 'statistic-nth' && (w === '--every' || w === '--packet')) {
      const v = parseNum(take(w), w);
      if (w === '--every') c.every = v;
      else c.packet = v;
      continue;
    }
    if (c?.kind === 'addrtype' && (w === '--dst-type' || w === '--src-type')) {
      const v = take(w);
      if (!ADDR_TYPES.has(v)) bad(`addrtype: unknown type "${v}"`);
      if (w === '--dst-type') [c.dstType, c.dstNeg] = [v, n];
      else [c.srcType, c.srcNeg] = [v, n];
      continue;
    }
    if (c?.kind === 'ctstate' && (w === '--ctstate' || w === '--state')) {
      const v = take(w).split(',');
      if (!v.every((s) => STATES.has(s))) bad(`${c.via}: bad state "${v.join(',')}"`);
      c.states = v;
      c.neg = n;
      continue;
    }
    if (c?.kind === 'recent') {
      if (w === '--set' || w === '--rcheck' || w === '--update' || w === '--remove') {
        c.op = w.slice(2) as typeof c.op;
        continue;
      }
      if (w === '--name') {
        c.name = take(w);
        continue;
      }
      if (w === '--seconds') {
        c.seconds = parseNum(take(w), w);
        continue;
      }
      if (w === '--reap') {
        c.reap = true;
        continue;
      }
      if (w === '--mask') {
        c.mask = take(w);
        continue;
      }
      if (w === '--rsource' || w === '--rdest') {
        c.side = w.slice(2) as typeof c.side;
        continue;
      }
    }
    if (c?.kind === 'set' && w === '--match-set') {
      c.name = take(w);
      c.dirs = take(w).split(',') as ('src' | 'dst')[];
      if (!c.dirs.every((d) => d === 'src' || d === 'dst')) bad(`set: bad direction "${c.dirs.join(',')}"`);
      c.neg = n;
      continue;
    }
    bad(`unknown option "${w}"`);
  }
  if (neg) bad('"!" at the end of the rule');
  for (const m of r.matches) {
    if (m.kind === 'statistic-random' && m.probability < 0) bad('statistic: --probability is required with --mode random');
    if (m.kind === 'multiport' && !m.dports && !m.sports) bad('multiport needs --dports or --sports');
    if (m.kind === 'statistic-nth' && (m.every < 1 || m.packet >= m.every)) bad('statistic: --every must be at least 1 and --packet below it');
  }
  const t = r.target;
  if ((t?.kind === 'DNAT' || t?.kind === 'SNAT') && t.addr.length === 0)
    bad(`${t.kind}: ${t.kind === 'DNAT' ? '--to-destination' : '--to-source'} is required`);
  if (t?.kind === 'VMAP' && (!t.map || t.key.length === 0)) bad('VMAP needs --map and --key');
  r.spec = formatRule(r);
  return r;
}

/** The rule's text as iptables-save prints it (after `-A CHAIN `). */
export function formatRule(r: NfRule): string {
  const o: string[] = [];
  const n = (b?: boolean) => (b ? '! ' : '');
  if (r.src) o.push(`${n(r.srcNeg)}-s ${fmtPrefix(r.src)}`);
  if (r.dst) o.push(`${n(r.dstNeg)}-d ${fmtPrefix(r.dst)}`);
  if (r.inIf !== undefined) o.push(`${n(r.inIfNeg)}-i ${r.inIf}`);
  if (r.outIf !== undefined) o.push(`${n(r.outIfNeg)}-o ${r.outIf}`);
  if (r.proto !== undefined && r.proto !== 0) o.push(`${n(r.protoNeg)}-p ${PROTO_NAMES[r.proto] ?? r.proto}`);
  for (const m of r.matches) {
    switch (m.kind) {
      case 'l4': {
        let s = `-m ${m.proto}`;
        if (m.sport) s += ` ${n(m.sportNeg)}--sport ${fmtPorts(m.sport)}`;
        if (m.dport) s += ` ${n(m.dportNeg)}--dport ${fmtPorts(m.dport)}`;
        o.push(s);
        break;
      }
      case 'comment':
        o.push(`-m comment --comment ${quoteComment(m.text)}`);
        break;
      case 'multiport':
        o.push(
          `-m multiport ${n(m.neg)}${m.dports ? `--dports ${m.dports.map(fmtPorts).join(',')}` : `--sports ${m.sports!.map(fmtPorts).join(',')}`}`,
        );
        break;
      case 'mark':
        o.push(`-m mark ${n(m.neg)}--mark ${hex(m.value)}${m.mask === 0xffffffff ? '' : `/${hex(m.mask)}`}`);
        break;
      case 'statistic-random':
        o.push(`-m statistic --mode random --probability ${m.probability.toFixed(11)}`);
        break;
      case 'statistic-nth':
        o.push(`-m statistic --mode nth --every ${m.every} --packet ${m.packet}`);
        break;
      case 'addrtype':
        o.push(
          `-m addrtype${m.srcType ? ` ${n(m.srcNeg)}--src-type ${m.srcType}` : ''}${m.dstType ? ` ${n(m.dstNeg)}--dst-type ${m.dstType}` : ''}`,
        );
        break;
      case 'ctstate':
        o.push(m.via === 'state' ? `-m state ${n(m.neg)}--state ${m.states.join(',')}` : `-m conntrack ${n(m.neg)}--ctstate ${m.states.join(',')}`);
        break;
      case 'recent':
        o.push(
          `-m recent --${m.op}${m.seconds !== undefined ? ` --seconds ${m.seconds}` : ''}${m.reap ? ' --reap' : ''} --name ${m.name} --mask ${m.mask} --${m.side}`,
        );
        break;
      case 'set':
        o.push(`-m set ${n(m.neg)}--match-set ${m.name} ${m.dirs.join(',')}`);
        break;
    }
  }
  const t = r.target;
  if (t) {
    switch (t.kind) {
      case 'jump':
        o.push(`-j ${t.chain}`);
        break;
      case 'goto':
        o.push(`-g ${t.chain}`);
        break;
      case 'REJECT':
        o.push(`-j REJECT --reject-with ${t.with}`);
        break;
      case 'DNAT':
      case 'SNAT': {
        const a = formatIpBytes(t.addr, 0, t.family);
        const host = t.family === 6 && t.port ? `[${a}]` : a;
        const port = t.port ? `:${t.port.lo === t.port.hi ? t.port.lo : `${t.port.lo}-${t.port.hi}`}` : '';
        o.push(`-j ${t.kind} --to-${t.kind === 'DNAT' ? 'destination' : 'source'} ${host}${port}`);
        break;
      }
      case 'MASQUERADE':
        o.push(`-j MASQUERADE${t.random ? ' --random' : ''}${t.randomFully ? ' --random-fully' : ''}`);
        break;
      case 'MARK':
        o.push(`-j MARK --set-xmark ${hex(t.value)}/${hex(t.mask)}`);
        break;
      case 'LOG':
        o.push(`-j LOG${t.prefix ? ` --log-prefix ${quoteComment(t.prefix)}` : ''}`);
        break;
      case 'VMAP':
        o.push(`-j VMAP --map ${t.map} --key ${t.key.join('.')}`);
        break;
      default:
        o.push(`-j ${t.kind}`);
    }
  }
  return o.join(' ');
}

/** The comment of a rule, if it has one (for traces). */
export function ruleComment(r: NfRule): string | undefined {
  for (const m of r.matches) if (m.kind === 'comment') return m.text;
  return undefined;
}
