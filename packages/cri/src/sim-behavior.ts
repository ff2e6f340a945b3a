// The simulated container's behaviour model: what a container's command (command + args) does when no
// `kemu.io/sim-*` annotation scripts it. A few common commands behave as they would in a shell:
//   echo [-n] ARGS, printf FORMAT ARGS   write to stdout (the container log)
//   sleep N | sleep infinity            wait (N in seconds, fractions allowed)
//   exit N, true, false                 end with that status
//   cat FILE..., env                    print mounted files / the environment
//   sh|bash|ash -c 'a; b && c'          a sequence of the above (`;`, `&&`, `||`, newlines; `exec` is ignored)
// The container exits with the last status once the sequence ends. Anything else (another program, a loop,
// a pipe, a redirection) makes the whole command run forever, as every simulated container did before.

export type SimStep =
  | { op: 'write'; text: string }
  | { op: 'sleep'; seconds: number }
  | { op: 'exit'; code: number }
  | { op: 'status'; code: number }
  | { op: 'cat'; files: string[] }
  | { op: 'env' };

/** One statement and how it joins the previous one (`;`/newline: always, `&&`: on success, `||`: on failure). */
export interface SimStatement {
  join: ';' | '&&' | '||';
  steps: SimStep[];
}

const SHELLS = new Set(['sh', 'bash', 'ash', 'dash']);
const base = (bin: string) => bin.split('/').pop() ?? bin;

/** Shell words of one script, with single/double quotes and backslashes; undefined for syntax not modelled. */
function tokenize(script: string): { words: string[]; ops: string[] }[] | undefined {
  const out: { words: string[]; ops: string[] }[] = [];
  let words: string[] = [];
  let cur = '';
  let inWord = false;
  let join = ';';
  const endWord = () => {
    if (inWord) words.push(cur);
    cur = '';
    inWord = false;
  };
  const endStatement = (next: string) => {
    endWord();
    if (words.length) out.push({ words, ops: [join] });
    else if (next !== ';') return false; // `&&`/`||` with nothing before them
    words = [];
    join = next;
    return true;
  };
  for (let i = 0; i < script.length; i++) {
    const ch = script[i];
    if (ch === "'") {
      const end = script.indexOf("'", i + 1);
      if (end < 0) return undefined;
      cur += script.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (ch === '"') {
      let j = i + 1;
      for (; j < script.length && script[j] !== '"'; j++) {
        if (script[j] === '\\' && j + 1 < script.length && '"\\$`'.includes(script[j + 1])) j++;
        else if (script[j] === '$' || script[j] === '`') return undefined; // expansions are not modelled
        cur += script[j];
      }
      if (j >= script.length) return undefined;
      inWord = true;
      i = j;
    } else if (ch === '\\') {
      if (i + 1 < script.length && script[i + 1] !== '\n') cur += script[++i];
      else i++;
      inWord = true;
    } else if (ch === ' ' || ch === '\t') {
      endWord();
    } else if (ch === ';' || ch === '\n') {
      if (!endStatement(';')) return undefined;
    } else if (ch === '&' && script[i + 1] === '&') {
      if (!endStatement('&&')) return undefined;
      i++;
    } else if (ch === '|' && script[i + 1] === '|') {
      if (!endStatement('||')) return undefined;
      i++;
    } else if ('|&<>()`$*?[]{}#~'.includes(ch)) {
      return undefined; // pipes, redirections, subshells, expansions, globs: not modelled
    } else {
      cur += ch;
      inWord = true;
    }
  }
  endStatement(';');
  return out;
}

/** printf's FORMAT with %s/%d/%% and backslash escapes, arguments reused as printf does. */
function printf(format: string, args: string[]): string {
  const esc = (s: string) => s.replace(/\\(n|t|\\|r)/g, (_m, c: string) => ({ n: '\n', t: '\t', '\\': '\\', r: '\r' })[c]!);
  let out = '';
  let i = 0;
  do {
    let used = false;
    out += esc(format).replace(/%([sd%])/g, (_m, c: string) => {
      if (c === '%') return '%';
      used = true;
      const a = args[i++] ?? '';
      return c === 'd' ? String(Number.parseInt(a, 10) || 0) : a;
    });
    if (!used) break;
  } while (i < args.length);
  return out;
}

/** The steps of one simple command, or undefined when it is not modelled. */
function commandSteps(argv: string[]): SimStep[] | undefined {
  const [bin, ...args] = argv;
  if (bin === undefined) return [];
  switch (base(bin)) {
    case 'exec':
      return commandSteps(args);
    case 'echo': {
      const noNewline = args[0] === '-n';
      const rest = noNewline ? args.slice(1) : args;
      return [{ op: 'write', text: rest.join(' ') + (noNewline ? '' : '\n') }];
    }
    case 'printf':
      return args.length ? [{ op: 'write', text: printf(args[0], args.slice(1)) }] : undefined;
    case 'sleep': {
      if (args.length !== 1) return undefined;
      if (args[0] === 'infinity') return [{ op: 'sleep', seconds: Number.POSITIVE_INFINITY }];
      const n = Number(args[0].replace(/s$/, ''));
      return Number.isFinite(n) && n >= 0 ? [{ op: 'sleep', seconds: n }] : undefined;
    }
    case 'exit': {
      const code = args.length ? Number(args[0]) : 0;
      return Number.isInteger(code) ? [{ op: 'exit', code: ((code % 256) + 256) % 256 }] : undefined;
    }
    case 'true':
    case ':':
      return [{ op: 'status', code: 0 }];
    case 'false':
      return [{ op: 'status', code: 1 }];
    case 'cat':
      return args.length && !args.some((a) => a.startsWith('-')) ? [{ op: 'cat', files: args }] : undefined;
    case 'env':
    case 'printenv':
      return args.length ? undefined : [{ op: 'env' }];
    default:
      return undefined;
  }
}

/**
 * The model of a container's command, or undefined when the command is not modelled (the container then
 * runs until stopped). An empty command (the image's own entrypoint) is not modelled either.
 */
export function simProgram(command: string[], args: string[]): SimStatement[] | undefined {
  const argv = [...command, ...args];
  if (argv.length === 0) return undefined;
  if (SHELLS.has(base(argv[0])) && argv[1] === '-c') {
    if (argv.length < 3) return undefined;
    const parsed = tokenize(argv[2]);
    if (!parsed) return undefined;
    const out: SimStatement[] = [];
    for (const st of parsed) {
      const steps = commandSteps(st.words);
      if (!steps) return undefined;
      out.push({ join: st.ops[0] as SimStatement['join'], steps });
    }
    return out;
  }
  const steps = commandSteps(argv);
  return steps ? [{ join: ';', steps }] : undefined;
}

/** What a running program can do to the container around it. */
export interface SimIO {
  write(stream: 'stdout' | 'stderr', data: string | Buffer): void;
  cat(file: string): { ok: true; data: Buffer } | { ok: false; error: string };
  env(): string;
  /** Resolves after `ms`; never resolves once the container is stopped. */
  sleep(ms: number): Promise<void>;
}

/** Runs the program; resolves with the exit status it ends with. */
export async function runSimProgram(program: SimStatement[], io: SimIO): Promise<number> {
  let status = 0;
  for (const st of program) {
    if (st.join === '&&' && status !== 0) continue;
    if (st.join === '||' && status === 0) continue;
    for (const step of st.steps) {
      switch (step.op) {
        case 'write':
          io.write('stdout', step.text);
          status = 0;
          break;
        case 'sleep':
          await io.sleep(step.seconds === Number.POSITIVE_INFINITY ? Number.POSITIVE_INFINITY : step.seconds * 1000);
          status = 0;
          break;
        case 'exit':
          return step.code;
        case 'status':
          status = step.code;
          break;
        case 'cat':
          status = 0;
          for (const f of step.files) {
            const r = io.cat(f);
            if (r.ok) io.write('stdout', r.data); // bytes as they are: binary files stay binary
            else {
              io.write('stderr', `cat: ${f}: ${r.error}\n`);
              status = 1;
            }
          }
          break;
        case 'env': {
          const env = io.env();
          io.write('stdout', env ? `${env}\n` : '');
          status = 0;
          break;
        }
      }
    }
  }
  return status;
}
