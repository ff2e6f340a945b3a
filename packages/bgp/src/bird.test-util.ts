/** Test helper: runs a BIRD 2 daemon as a child process and reads its view through birdc. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export class Bird {
  private proc?: ChildProcess;
  readonly dir: string;
  readonly sock: string;
  output = '';

  constructor(readonly config: string) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-bgp-bird-'));
    this.sock = path.join(this.dir, 'ctl.sock');
  }

  async start(): Promise<void> {
    const conf = path.join(this.dir, 'bird.conf');
    fs.writeFileSync(conf, this.config);
    this.proc = spawn('bird', ['-c', conf, '-s', this.sock, '-P', path.join(this.dir, 'pid'), '-f'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc.stdout!.on('data', (d) => {
      this.output += d;
    });
    this.proc.stderr!.on('data', (d) => {
      this.output += d;
    });
    const end = Date.now() + 10_000;
    // Ready when the control socket answers.
    while (spawnSync('birdc', ['-s', this.sock, 'show', 'status'], { timeout: 5000 }).status !== 0) {
      if (this.proc.exitCode !== null) throw new Error(`bird exited: ${this.output}`);
      if (Date.now() > end) throw new Error(`bird did not answer on its control socket: ${this.output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  cmd(...args: string[]): string {
    const r = spawnSync('birdc', ['-s', this.sock, ...args], { encoding: 'utf8', timeout: 10_000 });
    if (r.status !== 0) throw new Error(`birdc ${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  }

  /** `show route all` as prefix → attribute lines of the first (best) route. */
  routes(table = 'master4'): Map<string, Record<string, string>> {
    const out = this.cmd('show', 'route', 'all', 'table', table);
    const map = new Map<string, Record<string, string>>();
    let cur: Record<string, string> | undefined;
    for (const line of out.split('\n')) {
      const m = /^(\S+\/\d+)\s+(\S+)\s+\[(\S+)/.exec(line);
      if (m) {
        cur = { type: m[2]!, protocol: m[3]! };
        if (!map.has(m[1]!)) map.set(m[1]!, cur);
        else cur = undefined;
        continue;
      }
      if (/^\s+unicast\s+\[/.test(line)) {
        cur = undefined; // a non-best alternative of the same prefix
        continue;
      }
      const a = /^\s+([A-Za-z.]+[a-z_0-9]*):\s*(.*)$/.exec(line);
      if (a && cur) cur[a[1]!] = a[2]!.trim();
      const via = /^\s+via\s+(\S+)/.exec(line);
      if (via && cur) cur.via = via[1]!;
    }
    return map;
  }

  protocol(name: string): string {
    return this.cmd('show', 'protocols', 'all', name);
  }

  stop(): void {
    this.proc?.kill('SIGTERM');
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

export async function until(
  cond: () => boolean,
  what: string,
  ms = 15_000,
  debug?: () => string,
): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${debug ? `\n${debug()}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function randomPort(): number {
  return 20000 + Math.floor(Math.random() * 30000);
}
