// `tar` in a simulated container: what `kubectl cp` runs through exec (`tar cf - PATH` to copy out of the
// pod, `tar -xmf - -C DIR` to copy in) and what a user pipes through `kubectl exec`. Archives are read and
// written with tar-stream over the container's file view (sim-files.ts): its mounts and its writable layer.
// As GNU tar does, a leading `/` is removed from member names and a member whose name holds `..` is
// skipped; beyond that every path is checked against its root once links are followed, and a link placed by
// the archive is never followed out of the container's file system. Input is bounded.
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable, Writable } from 'node:stream';
import { mkdirWithin, resolveWithin } from '@kemu/safe-fs';
import tar from 'tar-stream';
import { locateSimPath, resolveSimLinks, type SimLocation, simFsError } from './sim-files.js';
import type { ContainerRecord } from './types.js';

/** Most bytes one `tar x` writes into a simulated container (its writable layer is host disk). */
export const SIM_TAR_MAX_BYTES = 256 * 1024 * 1024;
/** Most members one `tar x` creates (each is an inode on the host). */
export const SIM_TAR_MAX_ENTRIES = 65_536;

export interface SimTarContext {
  container: ContainerRecord;
  /** The container's writable layer (undefined: only its mounts can be written). */
  rootfs?: string;
  /** Files of the container's synthetic root (/etc/hostname ...), archived as regular files. */
  synthetic: Record<string, string>;
  /** Bytes `tar x` may write (default SIM_TAR_MAX_BYTES). */
  maxBytes?: number;
  /** Members `tar x` may create (default SIM_TAR_MAX_ENTRIES). */
  maxEntries?: number;
}

export interface SimTarIO {
  /** The archive `tar x`/`tar t` read (`-f -`); missing means empty. */
  stdin?: Readable;
  stdout: Writable;
  stderr: Writable;
}

interface TarCommand {
  mode: 'c' | 'x' | 't';
  dir: string;
  keepMtime: boolean;
  samePermissions: boolean;
  verbose: boolean;
  members: string[];
}

/** Long options that change nothing in the model (ownership is the container's anyway). */
const IGNORED_LONG = new Set(['--no-same-owner', '--same-owner', '--numeric-owner', '--overwrite', '--no-overwrite-dir']);

/** GNU tar's command line as kubectl and people use it: old-style bundle (`cf`), `-xmf -`, `-C DIR`. */
function parseArgs(args: string[]): TarCommand | string {
  const cmd: TarCommand = { mode: 'c', dir: '/', keepMtime: true, samePermissions: true, verbose: false, members: [] };
  let mode: TarCommand['mode'] | undefined;
  let file: string | undefined;
  const rest = [...args];
  // Old-style: the first word's letters are options even without a dash.
  if (rest[0] !== undefined && !rest[0].startsWith('-')) rest[0] = `-${rest[0]}`;
  while (rest.length) {
    const a = rest.shift()!;
    if (a === '--') {
      cmd.members.push(...rest.splice(0));
      break;
    }
    if (a.startsWith('--')) {
      const [name, value] = a.split('=', 2);
      if (name === '--directory') cmd.dir = value ?? rest.shift() ?? '';
      else if (name === '--file') file = value ?? rest.shift();
      else if (name === '--extract' || name === '--get') mode = 'x';
      else if (name === '--create') mode = 'c';
      else if (name === '--list') mode = 't';
      else if (name === '--touch') cmd.keepMtime = false;
      else if (name === '--no-same-permissions') cmd.samePermissions = false;
      else if (name === '--same-permissions' || name === '--preserve-permissions') cmd.samePermissions = true;
      else if (name === '--verbose') cmd.verbose = true;
      else if (!IGNORED_LONG.has(name)) return `unrecognized option '${a}'`;
      continue;
    }
    if (!a.startsWith('-') || a === '-') {
      cmd.members.push(a);
      continue;
    }
    for (let i = 1; i < a.length; i++) {
      const ch = a[i];
      const value = () => (i + 1 < a.length ? a.slice(i + 1) : rest.shift());
      if (ch === 'c' || ch === 'x' || ch === 't') {
        if (mode && mode !== ch) return 'You may not specify more than one \'-Acdtrux\', \'--delete\' or  \'--test-label\' option';
        mode = ch;
      } else if (ch === 'f') {
        file = value();
        break;
      } else if (ch === 'C') {
        cmd.dir = value() ?? '';
        break;
      } else if (ch === 'm') cmd.keepMtime = false;
      else if (ch === 'p') cmd.samePermissions = true;
      else if (ch === 'v') cmd.verbose = true;
      else if (ch === 'o') continue;
      else return `invalid option -- '${ch}'`;
    }
  }
  if (!mode) return "You must specify one of the '-Acdtrux', '--delete' or '--test-label' options";
  // Only the standard streams: the archive of a simulated container has nowhere else to live.
  if (file !== undefined && file !== '-') return `${file}: Cannot open: only '-f -' (standard input/output) is modelled`;
  if (!cmd.dir) return "option requires an argument -- 'C'";
  cmd.mode = mode;
  if (mode === 'c' && cmd.members.length === 0) return 'Cowardly refusing to create an empty archive';
  return cmd;
}

/** Runs `tar ARGS` in the container; resolves with its exit status (0, or 2 as GNU tar after errors). */
export async function runSimTar(args: string[], ctx: SimTarContext, io: SimTarIO): Promise<number> {
  const say = (line: string) => io.stderr.write(`tar: ${line}\n`);
  const cmd = parseArgs(args);
  if (typeof cmd === 'string') {
    say(cmd);
    say("Try 'tar --help' or 'tar --usage' for more information.");
    io.stdin?.resume();
    return 2;
  }
  const dir = path.posix.resolve('/', cmd.dir);
  let failed = false;
  const fail = (line: string) => {
    say(line);
    failed = true;
  };
  if (cmd.mode === 'c') await create(cmd, dir, ctx, io, fail, say);
  else await extract(cmd, dir, ctx, io, fail);
  if (failed) say('Exiting with failure status due to previous errors');
  return failed ? 2 : 0;
}

/** A member's name as GNU tar stores and extracts it: no leading `/`; undefined when it holds `..`. */
function memberName(name: string): string | undefined {
  const stripped = name.replace(/^\/+/, '');
  const parts = stripped.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) return undefined;
  return parts.join('/');
}

async function create(cmd: TarCommand, dir: string, ctx: SimTarContext, io: SimTarIO, fail: (l: string) => void, say: (l: string) => void) {
  const pack = tar.pack();
  const done = pipeline(pack, io.stdout, { end: false });
  let warned = false;
  for (const member of cmd.members) {
    if (member.startsWith('/') && !warned) {
      say("Removing leading `/' from member names");
      warned = true;
    }
    const name = memberName(member);
    if (name === undefined) {
      fail(`${member}: Member name contains '..'`);
      continue;
    }
    await addPath(pack, path.posix.resolve(dir, member), name, ctx, cmd, io, fail);
  }
  pack.finalize();
  await done;
}

async function addPath(pack: tar.Pack, asGiven: string, name: string, ctx: SimTarContext, cmd: TarCommand, io: SimTarIO, fail: (l: string) => void) {
  let containerPath = asGiven;
  let loc: SimLocation | undefined;
  let st: fs.Stats | undefined;
  let real = '';
  try {
    // The links above the member are followed as the container sees them; the member itself is not.
    if (asGiven !== '/') containerPath = path.posix.join(resolveSimLinks(ctx.container, path.posix.dirname(asGiven), ctx.rootfs), path.posix.basename(asGiven));
    loc = locateSimPath(ctx.container, containerPath, ctx.rootfs);
    if (loc) {
      // The member itself is archived as what it is (a link stays a link); the links above it are followed.
      real = loc.rel ? path.join(parentOf(loc), path.basename(loc.host)) : loc.host;
      st = fs.lstatSync(real, { throwIfNoEntry: false });
    }
  } catch (err) {
    fail(`${name}: Cannot stat: ${simFsError(err)}`);
    return;
  }
  if (!st) {
    const text = ctx.synthetic[containerPath];
    const overlaid = !loc || loc.layer ? overlaidChildren(ctx, containerPath) : [];
    if (text !== undefined && (!loc || loc.layer)) {
      if (cmd.verbose) io.stderr.write(`${name}\n`);
      pack.entry({ name, type: 'file', mode: 0o644, mtime: new Date() }, Buffer.from(text));
      return;
    }
    if (overlaid.length) {
      // A directory the container shows only because mounts or synthetic files lie below it.
      if (cmd.verbose) io.stderr.write(`${name}\n`);
      pack.entry({ name: name ? `${name}/` : './', type: 'directory', mode: 0o755, mtime: new Date() });
      for (const child of overlaid.sort()) await addPath(pack, path.posix.join(containerPath, child), name ? `${name}/${child}` : child, ctx, cmd, io, fail);
      return;
    }
    fail(`${name || '.'}: Cannot stat: No such file or directory`);
    return;
  }
  if (cmd.verbose) io.stderr.write(`${name}\n`);
  const base = { name, mode: st.mode & 0o7777, mtime: st.mtime, uid: st.uid, gid: st.gid };
  if (st.isSymbolicLink()) {
    pack.entry({ ...base, type: 'symlink', linkname: fs.readlinkSync(real) });
  } else if (st.isDirectory()) {
    pack.entry({ ...base, name: name ? `${name}/` : './', type: 'directory' });
    // What the directory holds, and the mount points and synthetic files the container shows in it.
    for (const child of [...new Set([...fs.readdirSync(real), ...overlaidChildren(ctx, containerPath)])].sort()) {
      await addPath(pack, path.posix.join(containerPath, child), name ? `${name}/${child}` : child, ctx, cmd, io, fail);
    }
  } else if (st.isFile()) {
    let fd: number;
    try {
      fd = fs.openSync(real, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    } catch (err) {
      fail(`${name}: Cannot open: ${simFsError(err)}`);
      return;
    }
    if (st.size === 0) {
      fs.closeSync(fd);
      pack.entry({ ...base, type: 'file', size: 0 }, Buffer.alloc(0));
      return;
    }
    const entry = pack.entry({ ...base, type: 'file', size: st.size });
    // Exactly the size the header announced, even if the file changes meanwhile.
    await pipeline(fs.createReadStream('', { fd, start: 0, end: st.size - 1 }), entry).catch((err: unknown) => {
      fail(`${name}: Read error: ${simFsError(err)}`);
    });
  } else {
    fail(`${name}: socket ignored`);
  }
}

/** Names directly below container directory `dir` that mounts or synthetic files put there. */
function overlaidChildren(ctx: SimTarContext, dir: string): string[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  const shown = [...(ctx.container.config.mounts ?? []).map((m) => path.posix.normalize(m.containerPath ?? '')), ...Object.keys(ctx.synthetic)];
  const out = new Set<string>();
  for (const p of shown) if (p.startsWith(prefix) && p.length > prefix.length) out.add(p.slice(prefix.length).split('/')[0]);
  return [...out];
}

/** The real directory holding `loc` (links above it followed, and refused when they leave its root). */
function parentOf(loc: SimLocation): string {
  const parent = path.dirname(loc.host);
  return parent === loc.root ? loc.root : resolveWithin(parent, [loc.root], { what: 'directory' }).real;
}

async function extract(cmd: TarCommand, dir: string, ctx: SimTarContext, io: SimTarIO, fail: (l: string) => void) {
  const ex = tar.extract();
  const input = io.stdin;
  if (!input) {
    ex.end(Buffer.alloc(0));
  } else {
    input.on('error', (err) => ex.destroy(err));
    input.pipe(ex);
  }
  const limit = ctx.maxBytes ?? SIM_TAR_MAX_BYTES;
  const maxEntries = ctx.maxEntries ?? SIM_TAR_MAX_ENTRIES;
  let written = 0;
  let entries = 0;
  try {
    for await (const entry of ex) {
      entries++;
      const h = entry.header;
      const name = memberName(h.name);
      if (name === undefined || name === '') {
        if (name === undefined) fail(`${h.name}: Member name contains '..'`);
        entry.resume();
        continue;
      }
      if (cmd.mode === 't') {
        io.stdout.write(`${h.name}\n`);
        entry.resume();
        continue;
      }
      if (cmd.verbose) io.stdout.write(`${h.name}\n`);
      if (entries > maxEntries) {
        fail(`${name}: Cannot create: more than ${maxEntries} members in one archive`);
        entry.resume();
        continue;
      }
      const containerPath = path.posix.join(dir, name);
      const loc = locateSimPath(ctx.container, containerPath, ctx.rootfs);
      if (!loc || loc.readOnly || !loc.rel) {
        fail(`${name}: Cannot open: ${loc && !loc.rel ? 'File exists' : 'Read-only file system'}`);
        entry.resume();
        continue;
      }
      try {
        if (h.type === 'directory') {
          const made = mkdirWithin(loc.root, loc.host, 0o755, 'directory');
          // Permission bits only: no set-id or sticky bits on host files made from request data.
          if (cmd.samePermissions && h.mode !== undefined) fs.chmodSync(made, h.mode & 0o777);
          entry.resume();
        } else if (h.type === 'symlink') {
          const target = replaceable(loc);
          fs.symlinkSync(h.linkname ?? '', target);
          entry.resume();
        } else if (h.type === 'file' || h.type === 'contiguous-file' || h.type == null) {
          const size = h.size ?? 0;
          if (written + size > limit) {
            fail(`${name}: Cannot write: No space left on device`);
            entry.resume();
            continue;
          }
          written += size;
          const target = replaceable(loc);
          const fd = fs.openSync(target, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o600);
          await pipeline(entry, fs.createWriteStream('', { fd }));
          const mode = (h.mode ?? 0o644) & (cmd.samePermissions ? 0o777 : 0o755);
          fs.chmodSync(target, mode);
          if (cmd.keepMtime && h.mtime) fs.utimesSync(target, h.mtime, h.mtime);
        } else {
          fail(`${name}: Cannot create: entry type ${h.type} is not supported here`);
          entry.resume();
        }
      } catch (err) {
        fail(`${name}: Cannot open: ${simFsError(err)}`);
        entry.resume();
      }
    }
  } catch (err) {
    fail(entries === 0 ? 'This does not look like a tar archive' : `Unexpected EOF in archive (${(err as Error).message})`);
    input?.unpipe(ex);
    input?.resume();
  }
}

/**
 * The host path an archive member is written to: its parent directory made inside the root (links met on
 * the way must stay inside it), and whatever non-directory stood at the name removed, as GNU tar replaces
 * it; a symbolic link there is removed, never followed.
 */
function replaceable(loc: SimLocation): string {
  const parent = mkdirWithin(loc.root, path.dirname(loc.host), 0o755, 'directory');
  const target = path.join(parent, path.basename(loc.host));
  const st = fs.lstatSync(target, { throwIfNoEntry: false });
  if (st?.isDirectory()) throw Object.assign(new Error('Is a directory'), { code: 'EISDIR' });
  if (st) fs.unlinkSync(target);
  return target;
}
