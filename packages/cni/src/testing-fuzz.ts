/**
 * A seeded, time-bounded fuzz harness for CNI plugins (test support, used by each plugin's fuzz test).
 *
 * Each case starts from a valid config and environment, changes a few of their fields (deleted, the wrong
 * type, huge, odd names, paths with `..`, symlinks to devices, FIFOs) or replaces stdin with something that
 * is not a config at all, runs one verb, and holds the plugin to the contract:
 * - the call ends (a per-call time limit: a hang fails the case);
 * - stdout is a well-formed result (ADD), nothing (DEL, CHECK, ...), or a CNI error object whose code is
 *   one of the spec's or ours, never 999 (a JavaScript exception that no check caught), and with no stack trace;
 * - an ADD that succeeded is undone by a DEL of the same input, and nothing is left behind (the target
 *   says what "left behind" means: IPAM files, links in a namespace, ...).
 * fast-check supplies the seeded generation and shrinks a failing case to a small one.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { CniErrorCode } from './errors.js';
import { parseCidr, parseIP } from '@kemu/ip';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export interface FuzzCall {
  env: Record<string, string | undefined>;
  stdin: string;
}

/** One case's fresh world: a valid config to start from, how to call the plugin, what must be gone after. */
export interface FuzzWorld {
  config: Record<string, unknown>;
  invoke(call: FuzzCall): Promise<{ exitCode: number; stdout: string }>;
  /** Whatever the case left behind that it should not have (empty when clean). */
  leftovers(): Promise<string[]>;
}

export interface FuzzTarget {
  /** A fresh world per case (own dataDir, own namespaces), so cases cannot disturb one another. */
  world(): Promise<FuzzWorld>;
  /** A valid environment without CNI_COMMAND (CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_PATH, ...). */
  env: Record<string, string>;
  /** Verbs to try. Default ADD, DEL, CHECK. */
  commands?: readonly string[];
  /** Paths to put where a path is expected: fixtures the test made (symlinks to /dev/zero, a FIFO, ...). */
  paths?: readonly string[];
}

export interface FuzzOptions {
  /** KEMU_FUZZ_SEED overrides it, to replay a failure. */
  seed?: number;
  /** How long generation may go on (KEMU_FUZZ_MS overrides it). */
  timeLimitMs?: number;
  /** A call taking longer than this is a hang. */
  callTimeoutMs?: number;
  /** Fail unless at least this many cases ran (the time limit must not turn the harness into a no-op). */
  minRuns?: number;
  maxRuns?: number;
}

export interface FuzzReport {
  seed: number;
  runs: number;
  /** How the cases ended: `ADD ok`, `DEL error 7`, ... with counts. */
  outcomes: Record<string, number>;
}

/** Codes a plugin may answer with: the spec's and kemu's own (errors.ts), not 999. */
const ALLOWED_CODES = new Set<number>(Object.values(CniErrorCode).filter((c) => c !== CniErrorCode.Internal));

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Why `out` breaks the contract for `command`, or undefined. */
export function contractProblem(command: string, out: { exitCode: number; stdout: string }): string | undefined {
  if (/\n\s+at\s.+:\d+:\d+/.test(out.stdout)) return 'stack trace on stdout';
  if (out.exitCode === 0) {
    if (command !== 'ADD' && command !== 'VERSION') return out.stdout === '' ? undefined : `${command} printed ${out.stdout.slice(0, 200)}`;
    let r: unknown;
    try {
      r = JSON.parse(out.stdout);
    } catch {
      return `${command} succeeded with non-JSON stdout ${out.stdout.slice(0, 200)}`;
    }
    if (!isObj(r) || typeof r.cniVersion !== 'string') return 'result without cniVersion';
    if (command === 'VERSION') return undefined;
    if (r.interfaces !== undefined && (!Array.isArray(r.interfaces) || !r.interfaces.every((i) => isObj(i) && typeof i.name === 'string'))) {
      return `malformed interfaces ${JSON.stringify(r.interfaces)}`;
    }
    if (r.ips !== undefined) {
      if (!Array.isArray(r.ips)) return 'ips is not a list';
      for (const ip of r.ips) {
        if (!isObj(ip) || typeof ip.address !== 'string' || !parseCidr(ip.address)) return `malformed ip ${JSON.stringify(ip)}`;
      }
    }
    if (r.routes !== undefined && (!Array.isArray(r.routes) || !r.routes.every((x) => isObj(x) && typeof x.dst === 'string' && parseCidr(x.dst)))) {
      return `malformed routes ${JSON.stringify(r.routes)}`;
    }
    if (r.dns !== undefined && !isObj(r.dns)) return `malformed dns ${JSON.stringify(r.dns)}`;
    return undefined;
  }
  let e: unknown;
  try {
    e = JSON.parse(out.stdout);
  } catch {
    return `exit ${out.exitCode} with non-JSON stdout ${JSON.stringify(out.stdout.slice(0, 200))}`;
  }
  if (!isObj(e) || typeof e.code !== 'number' || typeof e.msg !== 'string' || e.msg === '') return `malformed error ${out.stdout.slice(0, 200)}`;
  if (typeof e.cniVersion !== 'string') return 'error without cniVersion';
  if (!ALLOWED_CODES.has(e.code)) return `error code ${e.code} (${e.msg.slice(0, 300)})`;
  return undefined;
}

/** Strings that have broken parsers before: names, paths, numbers in string form, control characters. */
const ODD_STRINGS = [
  '',
  ' ',
  '.',
  '..',
  '../..',
  '../../../../etc/passwd',
  'a/../../b',
  'relative/dir',
  'eth0/x',
  'eth 0',
  'a;b=c',
  '=',
  'x\u0000y',
  '\n',
  'ümlaut',
  '💥',
  '-1',
  '1e309',
  '10.0.0.1/33',
  '10.0.0.1',
  '::ffff:10.0.0.0/120',
  '0.0.0.0/0',
  '999.1.1.1',
  'fe80::1%eth0',
  'x'.repeat(300),
  'TRUE',
  'null',
] as const;

/** A string that, placed in a path field, never reaches outside the test's own fixtures or /dev. */
const oddString = (paths: readonly string[]): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...ODD_STRINGS, ...paths) },
    { weight: 1, arbitrary: fc.string({ maxLength: 12 }).map((s) => s.replace(/^\/+/, '')) },
    { weight: 1, arbitrary: fc.constant('y'.repeat(200_000)) },
  );

const oddValue = (paths: readonly string[]): fc.Arbitrary<Json | undefined> =>
  fc.oneof<fc.Arbitrary<Json | undefined>[]>(
    fc.constant(undefined),
    fc.constant(null),
    fc.boolean(),
    fc.constantFrom(0, -1, 1, 65536, 2 ** 31, 2 ** 53 + 1, 1e308, -1e308, 0.5),
    fc.integer(),
    oddString(paths),
    fc.constantFrom<Json>([], {}, [[]], [{}]),
    fc.array(fc.oneof(fc.integer(), oddString(paths)), { maxLength: 3 }),
    fc.constant(Array.from({ length: 2000 }, (_, i) => i)),
    fc.constant(JSON.parse('{"a":'.repeat(60) + '1' + '}'.repeat(60)) as Json),
  );

/** Every path (list of keys / indexes) into a JSON value, depth first, up to `depth`. */
function pathsOf(v: unknown, depth = 4, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [];
  if (depth === 0) return out;
  if (Array.isArray(v)) {
    v.forEach((x, i) => {
      out.push([...prefix, i], ...pathsOf(x, depth - 1, [...prefix, i]));
    });
  } else if (isObj(v)) {
    for (const [k, x] of Object.entries(v)) out.push([...prefix, k], ...pathsOf(x, depth - 1, [...prefix, k]));
  }
  return out;
}

function setPath(root: unknown, path: (string | number)[], value: Json | undefined): void {
  let cur = root as Record<string | number, unknown>;
  for (const k of path.slice(0, -1)) {
    const next = cur[k];
    if (typeof next !== 'object' || next === null) return;
    cur = next as Record<string | number, unknown>;
  }
  const last = path[path.length - 1]!;
  if (value === undefined) {
    if (Array.isArray(cur)) cur.splice(Number(last), 1);
    else delete cur[last];
  } else cur[last] = value;
}

/** A key spelled in another case (the reference's decoder reads `IPAM` as `ipam`). */
function recase(root: unknown, path: (string | number)[]): void {
  let cur = root as Record<string | number, unknown>;
  for (const k of path.slice(0, -1)) {
    const next = cur[k];
    if (typeof next !== 'object' || next === null) return;
    cur = next as Record<string | number, unknown>;
  }
  const last = path[path.length - 1]!;
  if (typeof last !== 'string' || Array.isArray(cur) || !(last in cur)) return;
  const v = cur[last];
  delete cur[last];
  cur[last.toUpperCase()] = v;
}

type Mutation = { path: (string | number)[]; op: 'set'; value: Json | undefined } | { path: (string | number)[]; op: 'recase' };

const RAW_STDIN = [
  '',
  '{',
  '[]',
  '"x"',
  'null',
  '{"cniVersion":"1.0.0"',
  '\u0000\u0001\u0002',
  '{"cniVersion":"1.0.0","name":"n","type":"t","ipam":' + '['.repeat(5000) + ']'.repeat(5000) + '}',
];

const ENV_KEYS = ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH', 'CNI_ARGS'] as const;
const ENV_VALUES = [
  undefined,
  '',
  '..',
  '../x',
  'a/b',
  'eth0.',
  'way-too-long-interface-name',
  'IP=10.0.0.1;IgnoreUnknown=1',
  'IP=bogus',
  'IP=10.66.0.300',
  '=x',
  'a=b;;c',
  'K8S_POD_NAME=web-0;IgnoreUnknown=true',
  '/nonexistent/kemu-fuzz',
  '/dev/zero',
  'relative/netns',
  'x'.repeat(5000),
];

interface FuzzInput {
  command: string;
  mutations: Mutation[];
  raw?: string;
  envChanges: [string, string | undefined][];
}

function inputArb(target: FuzzTarget, base: Record<string, unknown>): fc.Arbitrary<FuzzInput> {
  const paths = target.paths?.length ? target.paths : ['/nonexistent/kemu-fuzz'];
  const configPaths = pathsOf(base);
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    { weight: 5, arbitrary: fc.record({ path: fc.constantFrom(...configPaths), op: fc.constant('set' as const), value: oddValue(paths) }) },
    { weight: 1, arbitrary: fc.record({ path: fc.constantFrom(...configPaths), op: fc.constant('recase' as const) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        path: fc.constantFrom(...configPaths).map((p) => [...p.slice(0, -1), 'kemuFuzzExtra']),
        op: fc.constant('set' as const),
        value: oddValue(paths),
      }),
    },
  );
  const envValue = fc.oneof(fc.constantFrom(...ENV_VALUES), fc.constantFrom(...paths));
  return fc.record({
    command: fc.constantFrom(...(target.commands ?? ['ADD', 'DEL', 'CHECK'])),
    mutations: fc.array(mutation, { minLength: 0, maxLength: 3 }),
    // Mostly a mutated config; now and then stdin that is no config at all.
    raw: fc.oneof({ weight: 12, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom(...RAW_STDIN) }),
    // Mostly the valid environment; now and then one variable changed or removed.
    envChanges: fc.oneof(
      { weight: 3, arbitrary: fc.constant<[string, string | undefined][]>([]) },
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom<string>(...ENV_KEYS), envValue).map((c) => [c]) },
    ),
  });
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not end within ${ms} ms`)), ms);
    }),
  ]);
}


/**
 * The files below `dir` that a fuzz case may have left behind: IPAM allocations (files named by the address
 * they hold) and whatever else `also(dir, name)` claims. A missing or unreadable directory has none.
 */
export function leftoverFiles(dir: string, also?: (dir: string, name: string) => boolean): string[] {
  const out: string[] = [];
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    if (e.isDirectory()) out.push(...leftoverFiles(join(dir, e.name), also));
    else if (parseIP(e.name) || also?.(dir, e.name)) out.push(join(dir, e.name));
  }
  return out;
}

/**
 * Runs the harness on `target`; throws (with fast-check's seed, path and shrunk case) when any case breaks
 * the contract. Returns how many cases ran and how they ended.
 */
export async function fuzzCni(target: FuzzTarget, o: FuzzOptions = {}): Promise<FuzzReport> {
  const seed = Number(process.env.KEMU_FUZZ_SEED ?? o.seed ?? 20261126);
  const timeLimitMs = Number(process.env.KEMU_FUZZ_MS ?? o.timeLimitMs ?? 4000);
  const callTimeoutMs = o.callTimeoutMs ?? 10_000;
  const sample = await target.world();
  const outcomes: Record<string, number> = {};
  let runs = 0;
  const property = fc.asyncProperty(inputArb(target, sample.config), async (input) => {
    const world = await target.world();
    const conf = structuredClone(world.config);
    for (const m of input.mutations) {
      if (m.op === 'set') setPath(conf, m.path, m.value === undefined ? undefined : structuredClone(m.value));
      else recase(conf, m.path);
    }
    const stdin = input.raw ?? JSON.stringify(conf);
    const env: Record<string, string | undefined> = { ...target.env, CNI_COMMAND: input.command };
    for (const [k, v] of input.envChanges) env[k] = v;
    for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
    const out = await withTimeout(world.invoke({ env, stdin }), callTimeoutMs, `${input.command}`);
    const problem = contractProblem(input.command, out);
    if (problem) throw new Error(`${input.command}: ${problem}`);
    let code = 'ok';
    if (out.exitCode !== 0) code = `error ${(JSON.parse(out.stdout) as { code: number }).code}`;
    const key = `${input.command} ${code}`;
    outcomes[key] = (outcomes[key] ?? 0) + 1;
    runs++;
    if (input.command === 'ADD' && out.exitCode === 0) {
      const del = await withTimeout(world.invoke({ env: { ...env, CNI_COMMAND: 'DEL' }, stdin }), callTimeoutMs, 'DEL after ADD');
      if (del.exitCode !== 0) throw new Error(`DEL after a successful ADD failed: ${del.stdout.slice(0, 300)}`);
    }
    const left = await world.leftovers();
    if (left.length > 0) throw new Error(`${input.command} left behind: ${left.join(', ')}`);
  });
  await fc.assert(property, {
    seed,
    numRuns: o.maxRuns ?? 100_000,
    interruptAfterTimeLimit: timeLimitMs,
    markInterruptAsFailure: false,
    includeErrorInReport: true,
  });
  const minRuns = o.minRuns ?? 30;
  if (runs < minRuns) throw new Error(`only ${runs} fuzz cases ran in ${timeLimitMs} ms (at least ${minRuns} expected)`);
  return { seed, runs, outcomes };
}
