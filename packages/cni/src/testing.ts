/**
 * Test support shared by the CNI packages: network namespaces, plugin executables built from source,
 * and a runner for the reference plugins. Used by tests and benchmarks; not needed at runtime.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execPlugin } from './invoke-exec.js';

export const REFERENCE_BIN_DIR = '/usr/lib/cni';

export const canNetns: boolean =
  process.getuid?.() === 0 && spawnSync('ip', ['netns', 'list']).status === 0;
export const haveReference: boolean = spawnSync(join(REFERENCE_BIN_DIR, 'bridge'), [], { env: { CNI_COMMAND: 'VERSION' } }).status === 0;

let nsCounter = 0;
const created = new Set<string>();

/** Creates `kemu-test-<pid>-<n>` and returns its path under /var/run/netns. */
export function addNetns(tag = 'ns'): { name: string; path: string } {
  const name = `kemu-test-${process.pid}-${tag}-${nsCounter++}`;
  const r = spawnSync('ip', ['netns', 'add', name], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip netns add ${name}: ${r.stderr}`);
  created.add(name);
  return { name, path: `/var/run/netns/${name}` };
}

export function delNetns(name: string): void {
  spawnSync('ip', ['netns', 'del', name]);
  created.delete(name);
}

export function delAllNetns(): void {
  for (const n of [...created]) delNetns(n);
}

/** Runs a command inside a named netns (argument array, no shell). */
export function inNetns(name: string, cmd: string, args: string[], timeoutMs = 10_000) {
  return spawnSync('ip', ['netns', 'exec', name, cmd, ...args], { encoding: 'utf8', timeout: timeoutMs });
}

export function ipJson(name: string, args: string[]): any {
  const r = spawnSync('ip', ['-n', name, '-j', ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip -n ${name} ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout || '[]');
}

const here = dirname(fileURLToPath(import.meta.url));
const packagesDir = resolve(here, '..', '..');

/**
 * Bundles each plugin's `src/main.ts` (resolving @kemu/* from source) into one executable per plugin in
 * `dir`, named `kemu-<plugin>`: tests exec exactly the code in the tree without a prior package build.
 */
export async function buildPluginBins(dir: string, plugins = ['bridge', 'host-local', 'portmap', 'loopback']): Promise<string> {
  const require = createRequire(import.meta.url);
  const esbuild = require('esbuild') as typeof import('esbuild');
  mkdirSync(dir, { recursive: true });
  // Output under the repo so `koffi` and `netlink` (left external: native) resolve from node_modules.
  const outDir = join(packagesDir, '..', 'node_modules', '.cache', 'kemu-cni-bins', String(process.pid));
  mkdirSync(outDir, { recursive: true });
  await Promise.all(
    plugins.map(async (p) => {
      const outfile = join(outDir, `kemu-${p}.mjs`);
      await esbuild.build({
        entryPoints: [join(packagesDir, `cni-${p}`, 'src', 'main.ts')],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        conditions: ['@kemu/source'],
        external: ['koffi', 'netlink'],
        outfile,
        logLevel: 'silent',
      });
      chmodSync(outfile, 0o755);
      const link = join(dir, `kemu-${p}`);
      rmSync(link, { force: true });
      symlinkSync(outfile, link);
    }),
  );
  return dir;
}

/**
 * Builds plugin executables laid out as their packages ship them: a launcher (`kemu-<plugin>`, the
 * package's bin.ts, which hands calls to `kemu-cni daemon` when one runs) next to the CommonJS plugin
 * bundle it starts (`main.cjs`), all compiled from the sources in the tree. Returns the bin directory.
 */
export async function buildPluginLaunchers(dir: string, plugins = ['bridge', 'host-local', 'portmap', 'loopback']): Promise<string> {
  const require = createRequire(import.meta.url);
  const esbuild = require('esbuild') as typeof import('esbuild');
  mkdirSync(dir, { recursive: true });
  const outRoot = join(packagesDir, '..', 'node_modules', '.cache', 'kemu-cni-launchers', String(process.pid));
  await Promise.all(
    plugins.map(async (p) => {
      const outDir = join(outRoot, p);
      mkdirSync(outDir, { recursive: true });
      const common = {
        bundle: true,
        platform: 'node' as const,
        target: 'node20',
        conditions: ['@kemu/source'],
        external: ['koffi', 'netlink'],
        logLevel: 'silent' as const,
      };
      await esbuild.build({ ...common, entryPoints: [join(packagesDir, `cni-${p}`, 'src', 'bin.ts')], format: 'esm', outfile: join(outDir, 'bin.mjs') });
      await esbuild.build({
        ...common,
        entryPoints: [join(packagesDir, `cni-${p}`, 'src', 'main.ts')],
        format: 'cjs',
        outfile: join(outDir, 'main.cjs'),
        define: { 'import.meta.url': '__kemuImportMetaUrl' },
        banner: { js: "const __kemuImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
      });
      chmodSync(join(outDir, 'bin.mjs'), 0o755);
      const link = join(dir, `kemu-${p}`);
      rmSync(link, { force: true });
      symlinkSync(join(outDir, 'bin.mjs'), link);
    }),
  );
  return dir;
}

export interface CaptureOptions {
  /** Network namespace (name under /run/netns) and interface to capture on. */
  netns: string;
  iface: string;
  /** Capture filter (BPF), e.g. `icmp or udp port 8472`. */
  filter: string;
  /** Fields to print per packet (`tshark -e`), and `-d` decode-as rules and a `-Y` display filter if any. */
  fields: string[];
  decodeAs?: string[];
  displayFilter?: string;
  /** Where the pcap file goes. */
  dir: string;
}

/**
 * Runs tshark on an interface inside a namespace while `fn` runs, then reads the capture back: one row of
 * `fields` per packet (tshark itself decodes what crossed the wire, independently of the code under test).
 */
export async function tsharkCapture(o: CaptureOptions, fn: () => void): Promise<string[][]> {
  const pcap = join(o.dir, `${o.iface}-${Date.now()}.pcap`);
  const cap = spawn('ip', ['netns', 'exec', o.netns, 'tshark', '-q', '-i', o.iface, '-w', pcap, '-f', o.filter]);
  await new Promise<void>((resolvePromise, reject) => {
    let err = '';
    const t = setTimeout(() => reject(new Error(`tshark did not start: ${err}`)), 20_000);
    cap.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('Capturing on')) {
        clearTimeout(t);
        resolvePromise();
      }
    });
  });
  try {
    fn();
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    cap.kill('SIGINT');
    await new Promise((r) => cap.once('exit', r));
  }
  const args = ['-r', pcap, ...(o.decodeAs ?? []).flatMap((d) => ['-d', d])];
  if (o.displayFilter) args.push('-Y', o.displayFilter);
  args.push('-T', 'fields', ...o.fields.flatMap((f) => ['-e', f]));
  const ts = spawnSync('tshark', args, { encoding: 'utf8' });
  if (ts.status !== 0) throw new Error(`tshark -r: ${ts.stderr}`);
  return ts.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t'));
}

/** The files of a host-local network directory (`<dataDir>/<network>`) by name, without the lock file. */
export function hostLocalFiles(dir: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(dir)
      .filter((f) => f !== 'lock')
      .sort()
      .map((f) => [f, readFileSync(join(dir, f), 'utf8')]),
  );
}

export interface PluginRun {
  exitCode: number;
  stdout: string;
  json: any;
}

/**
 * Execs a plugin binary the way a runtime does. With `hostNetns` the plugin runs under
 * `ip netns exec`, so the test's "host" is a throwaway namespace and the real node stays untouched.
 */
export async function runPlugin(
  file: string,
  command: string,
  conf: unknown,
  env: {
    containerId?: string;
    netns?: string;
    ifname?: string;
    path?: string;
    args?: string;
    hostNetns?: string;
    /** More variables, e.g. KEMU_CNI_DAEMON. */
    extra?: Record<string, string>;
  } = {},
): Promise<PluginRun> {
  const e: Record<string, string | undefined> = {
    ...env.extra,
    PATH: process.env.PATH,
    CNI_COMMAND: command,
    CNI_CONTAINERID: env.containerId,
    CNI_NETNS: env.netns,
    CNI_IFNAME: env.ifname,
    CNI_PATH: env.path,
    CNI_ARGS: env.args,
  };
  for (const k of Object.keys(e)) if (e[k] === undefined) delete e[k];
  const stdin = typeof conf === 'string' ? conf : JSON.stringify(conf);
  const o = env.hostNetns ? await execIn(env.hostNetns, file, e, stdin) : await execPlugin(file, e, stdin);
  let json: any;
  try {
    json = o.stdout ? JSON.parse(o.stdout) : undefined;
  } catch {
    json = undefined;
  }
  return { exitCode: o.exitCode, stdout: o.stdout, json };
}

async function execIn(ns: string, file: string, env: Record<string, string | undefined>, stdin: string) {
  const { spawn } = await import('node:child_process');
  return new Promise<{ exitCode: number; stdout: string; stderr: string }>((resolvePromise) => {
    const child = spawn('ip', ['netns', 'exec', ns, file], { env: env as NodeJS.ProcessEnv });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.stdin.on('error', () => {});
    child.on('close', (code) =>
      resolvePromise({ exitCode: code ?? 1, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }),
    );
    child.stdin.end(stdin);
  });
}

/** Calls a plugin object through the skeleton with exec-style env and stdin (no process start). */
export async function callPlugin(
  plugin: import('./skeleton.js').CniPlugin,
  command: string,
  conf: unknown,
  env: { containerId?: string; netns?: string; ifname?: string; args?: string; path?: string } = {},
  datapath?: import('./datapath.js').Datapath,
): Promise<PluginRun> {
  const { invokePlugin } = await import('./skeleton.js');
  const { execDelegate } = await import('./invoke-exec.js');
  const e: Record<string, string | undefined> = {
    CNI_COMMAND: command,
    CNI_CONTAINERID: env.containerId,
    CNI_NETNS: env.netns,
    CNI_IFNAME: env.ifname,
    CNI_PATH: env.path ?? '/nonexistent',
    CNI_ARGS: env.args,
  };
  const o = await invokePlugin(plugin, {
    env: e,
    stdin: typeof conf === 'string' ? conf : JSON.stringify(conf),
    datapath: async () => {
      if (!datapath) throw new Error('no datapath given');
      return datapath;
    },
    delegate: execDelegate,
  });
  return { exitCode: o.exitCode, stdout: o.stdout, json: o.stdout ? JSON.parse(o.stdout) : undefined };
}

export { contractProblem, type FuzzCall, fuzzCni, leftoverFiles, type FuzzOptions, type FuzzReport, type FuzzTarget, type FuzzWorld } from './testing-fuzz.js';
