// The OCI runtime spec for one container, built from the CRI request and the image config the way
// containerd's CRI plugin does: command/args over entrypoint/cmd, image env then request env, the user
// resolved from the image's /etc/passwd and /etc/group, default capabilities with add/drop/ALL, masked and
// read-only paths, the sandbox's namespaces, mounts (sandbox /etc files, /dev/shm, request mounts with
// propagation), cgroup resources and the seccomp profile.
import fs from 'node:fs';
import path from 'node:path';
import { cri } from '@kemu/proto';
import { readFileBounded, resolveWithin, UnsafePathError } from '@kemu/safe-fs';
import { invalidArgument } from './errors.js';
import { defaultSeccompProfile, type SeccompProfile } from './seccomp-default.js';
import type { ContainerRecord, ImageRecord, SandboxRecord } from './types.js';

const DEFAULT_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** containerd's default capability set for unprivileged containers. */
export const DEFAULT_CAPABILITIES = [
  'CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_FSETID', 'CAP_FOWNER', 'CAP_MKNOD', 'CAP_NET_RAW', 'CAP_SETGID', 'CAP_SETUID',
  'CAP_SETFCAP', 'CAP_SETPCAP', 'CAP_NET_BIND_SERVICE', 'CAP_SYS_CHROOT', 'CAP_KILL', 'CAP_AUDIT_WRITE',
];

export const ALL_CAPABILITIES = [
  'CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_DAC_READ_SEARCH', 'CAP_FOWNER', 'CAP_FSETID', 'CAP_KILL', 'CAP_SETGID', 'CAP_SETUID',
  'CAP_SETPCAP', 'CAP_LINUX_IMMUTABLE', 'CAP_NET_BIND_SERVICE', 'CAP_NET_BROADCAST', 'CAP_NET_ADMIN', 'CAP_NET_RAW',
  'CAP_IPC_LOCK', 'CAP_IPC_OWNER', 'CAP_SYS_MODULE', 'CAP_SYS_RAWIO', 'CAP_SYS_CHROOT', 'CAP_SYS_PTRACE', 'CAP_SYS_PACCT',
  'CAP_SYS_ADMIN', 'CAP_SYS_BOOT', 'CAP_SYS_NICE', 'CAP_SYS_RESOURCE', 'CAP_SYS_TIME', 'CAP_SYS_TTY_CONFIG', 'CAP_MKNOD',
  'CAP_LEASE', 'CAP_AUDIT_WRITE', 'CAP_AUDIT_CONTROL', 'CAP_SETFCAP', 'CAP_MAC_OVERRIDE', 'CAP_MAC_ADMIN', 'CAP_SYSLOG',
  'CAP_WAKE_ALARM', 'CAP_BLOCK_SUSPEND', 'CAP_AUDIT_READ', 'CAP_PERFMON', 'CAP_BPF', 'CAP_CHECKPOINT_RESTORE',
];

/** containerd's defaults, used when the request names none (kubelet always sends its own list). */
export const DEFAULT_MASKED_PATHS = [
  '/proc/acpi', '/proc/asound', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list', '/proc/timer_stats',
  '/proc/sched_debug', '/proc/scsi', '/sys/firmware', '/sys/devices/virtual/powercap',
];
export const DEFAULT_READONLY_PATHS = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

export interface OciMount {
  destination: string;
  type?: string;
  source?: string;
  options?: string[];
}

export interface OciSpec {
  ociVersion: string;
  process: {
    terminal: boolean;
    user: { uid: number; gid: number; additionalGids?: number[]; umask?: number };
    args: string[];
    env: string[];
    cwd: string;
    capabilities: { bounding: string[]; effective: string[]; permitted: string[] };
    noNewPrivileges: boolean;
    oomScoreAdj?: number;
  };
  root: { path: string; readonly: boolean };
  hostname?: string;
  mounts: OciMount[];
  annotations: Record<string, string>;
  linux: {
    namespaces: { type: string; path?: string }[];
    cgroupsPath: string;
    resources: Record<string, unknown>;
    sysctl?: Record<string, string>;
    maskedPaths: string[];
    readonlyPaths: string[];
    seccomp?: SeccompProfile;
    rootfsPropagation?: string;
  };
}

export interface SpecInput {
  sb: SandboxRecord;
  c: ContainerRecord;
  image: ImageRecord;
  /** The container's root filesystem on the host. */
  rootfs: string;
  /** Sandbox-provided files bind-mounted at /etc/hosts, /etc/resolv.conf, /etc/hostname. */
  sandboxFiles: { hosts: string; resolv: string; hostname: string };
  /** /dev/shm of the sandbox, shared by its containers (when they share its IPC namespace). */
  shmDir?: string;
  /** A process in the sandbox's namespaces (the holder), for pod-shared namespaces. */
  holderPid?: number;
  /** Pid of a running container for NamespaceMode.TARGET. */
  targetPid?: (containerId: string) => number | undefined;
  cgroupsPath: string;
  /** The lowest oom_score_adj this process may give a child (it cannot lower its own). */
  minOomScoreAdj: number;
}

/** Reads a file of the image (e.g. /etc/passwd) without following a link out of its root filesystem. */
function imageFile(rootfs: string, file: string): string | undefined {
  try {
    const real = resolveWithin(path.join(rootfs, file), [rootfs], { what: `image ${file}` }).real;
    return readFileBounded(real, 4 * 1024 * 1024, `image ${file}`).toString('utf8');
  } catch (err) {
    if (err instanceof UnsafePathError || (err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function lookupUser(rootfs: string, name: string): { uid: number; gid: number; name: string } | undefined {
  for (const line of (imageFile(rootfs, '/etc/passwd') ?? '').split('\n')) {
    const f = line.split(':');
    if (f.length >= 4 && (f[0] === name || (/^\d+$/.test(name) && f[2] === name))) return { name: f[0], uid: Number(f[2]), gid: Number(f[3]) };
  }
  return undefined;
}

function lookupGroup(rootfs: string, name: string): number | undefined {
  for (const line of (imageFile(rootfs, '/etc/group') ?? '').split('\n')) {
    const f = line.split(':');
    if (f.length >= 3 && f[0] === name) return Number(f[2]);
  }
  return undefined;
}

/** Groups of /etc/group that list `user` as a member. */
function memberGroups(rootfs: string, user: string): number[] {
  const out: number[] = [];
  for (const line of (imageFile(rootfs, '/etc/group') ?? '').split('\n')) {
    const f = line.split(':');
    if (f.length >= 4 && f[3].split(',').includes(user)) out.push(Number(f[2]));
  }
  return out;
}

/** uid/gid/additional gids from the security context, else the image's `User` ("name|uid[:group|gid]"). */
export function resolveUser(input: Pick<SpecInput, 'c' | 'image' | 'rootfs'>): { uid: number; gid: number; additionalGids: number[] } {
  const sc = input.c.config.linux?.securityContext ?? {};
  const rootfs = input.rootfs;
  let uid: number;
  let gid: number | undefined;
  let name: string | undefined;
  if (sc.runAsUser?.value !== undefined && sc.runAsUser !== null) {
    uid = Number(sc.runAsUser.value);
    const u = lookupUser(rootfs, String(uid));
    gid = u?.gid;
    name = u?.name;
  } else if (sc.runAsUsername) {
    const u = lookupUser(rootfs, sc.runAsUsername);
    if (!u) throw invalidArgument(`user ${JSON.stringify(sc.runAsUsername)} is not in the image's /etc/passwd`);
    ({ uid, gid, name } = u);
  } else {
    const [userPart = '', groupPart] = (input.image.config.user ?? '').split(':');
    if (!userPart) {
      uid = 0;
      gid = 0;
      name = 'root';
    } else if (/^\d+$/.test(userPart)) {
      uid = Number(userPart);
      const u = lookupUser(rootfs, userPart);
      gid = u?.gid;
      name = u?.name;
    } else {
      const u = lookupUser(rootfs, userPart);
      if (!u) throw invalidArgument(`image user ${JSON.stringify(userPart)} is not in the image's /etc/passwd`);
      ({ uid, gid, name } = u);
    }
    if (groupPart) {
      const g = /^\d+$/.test(groupPart) ? Number(groupPart) : lookupGroup(rootfs, groupPart);
      if (g === undefined) throw invalidArgument(`image group ${JSON.stringify(groupPart)} is not in the image's /etc/group`);
      gid = g;
    }
  }
  if (sc.runAsGroup?.value !== undefined && sc.runAsGroup !== null) gid = Number(sc.runAsGroup.value);
  const strict = sc.supplementalGroupsPolicy === cri.SupplementalGroupsPolicy.Strict;
  const extra = [...(strict || !name ? [] : memberGroups(rootfs, name)), ...(sc.supplementalGroups ?? []).map(Number)];
  // Like containerd, the primary group is listed among the additional ones too.
  return { uid, gid: gid ?? 0, additionalGids: [...new Set([gid ?? 0, ...extra])] };
}

export function capabilitiesOf(c: ContainerRecord): string[] {
  const sc = c.config.linux?.securityContext ?? {};
  if (sc.privileged) return [...ALL_CAPABILITIES];
  const norm = (x: string) => {
    const up = x.toUpperCase();
    return up === 'ALL' ? 'ALL' : up.startsWith('CAP_') ? up : `CAP_${up}`;
  };
  const add = (sc.capabilities?.addCapabilities ?? []).map(norm);
  const drop = (sc.capabilities?.dropCapabilities ?? []).map(norm);
  for (const x of [...add, ...drop]) {
    if (x !== 'ALL' && !ALL_CAPABILITIES.includes(x)) throw invalidArgument(`unknown capability ${JSON.stringify(x)}`);
  }
  let caps = add.includes('ALL') ? [...ALL_CAPABILITIES] : [...DEFAULT_CAPABILITIES];
  if (drop.includes('ALL')) caps = [];
  caps = caps.filter((x) => !drop.includes(x));
  for (const x of add) if (x !== 'ALL' && !caps.includes(x)) caps.push(x);
  return caps;
}

function seccompOf(c: ContainerRecord, caps: string[]): SeccompProfile | undefined {
  const sc = c.config.linux?.securityContext ?? {};
  if (sc.privileged) return undefined;
  let type: 'default' | 'unconfined' | 'localhost' = 'unconfined';
  let ref = '';
  if (sc.seccomp) {
    const t = sc.seccomp.profileType ?? cri.SecurityProfile_ProfileType.RuntimeDefault;
    if (t === cri.SecurityProfile_ProfileType.RuntimeDefault) type = 'default';
    else if (t === cri.SecurityProfile_ProfileType.Localhost) {
      type = 'localhost';
      ref = sc.seccomp.localhostRef ?? '';
    }
  } else if (sc.seccompProfilePath) {
    const p = sc.seccompProfilePath;
    if (p === 'runtime/default' || p === 'docker/default') type = 'default';
    else if (p.startsWith('localhost/')) {
      type = 'localhost';
      ref = p.slice('localhost/'.length);
    } else if (p !== 'unconfined') throw invalidArgument(`unknown seccomp profile ${JSON.stringify(p)}`);
  }
  if (type === 'unconfined') return undefined;
  if (type === 'default') return defaultSeccompProfile(caps);
  if (!path.isAbsolute(ref)) throw invalidArgument(`seccomp localhost profile ${JSON.stringify(ref)} must be an absolute path`);
  let text: string;
  try {
    text = readFileBounded(ref, 1024 * 1024, 'seccomp profile').toString('utf8');
  } catch (err) {
    throw invalidArgument(`cannot read seccomp profile ${JSON.stringify(ref)}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as SeccompProfile;
  } catch {
    throw invalidArgument(`seccomp profile ${JSON.stringify(ref)} is not JSON`);
  }
}

/** Pod-level sysctls: only namespaced ones, and not those of a namespace shared with the host. */
export function checkSysctls(sb: SandboxRecord): Record<string, string> | undefined {
  const sysctls = sb.config.linux?.sysctls ?? {};
  const ns = sb.config.linux?.securityContext?.namespaceOptions ?? {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(sysctls)) {
    const key = k.replace(/\//g, '.');
    const ipc = /^kernel\.(shm(all|max|mni|_rmid_forced)|msg(max|mnb|mni)|sem)$/.test(key) || key.startsWith('fs.mqueue.');
    const netKey = key.startsWith('net.');
    const uts = key === 'kernel.hostname' || key === 'kernel.domainname';
    if (!ipc && !netKey && !uts) throw invalidArgument(`sysctl ${JSON.stringify(k)} is not namespaced: it would change the host`);
    if (ipc && ns.ipc === cri.NamespaceMode.NODE) throw invalidArgument(`sysctl ${JSON.stringify(k)} needs a private IPC namespace, and the pod uses the host's`);
    if (netKey && ns.network === cri.NamespaceMode.NODE) throw invalidArgument(`sysctl ${JSON.stringify(k)} needs a private network namespace, and the pod uses the host's`);
    if (uts && ns.network === cri.NamespaceMode.NODE) throw invalidArgument(`sysctl ${JSON.stringify(k)} needs a private UTS namespace`);
    out[key] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

function propagationOf(p: cri.MountPropagation | undefined): string {
  if (p === cri.MountPropagation.PROPAGATION_BIDIRECTIONAL) return 'rshared';
  if (p === cri.MountPropagation.PROPAGATION_HOST_TO_CONTAINER) return 'rslave';
  return 'rprivate';
}

/** The request's host path, links resolved once (the container gets what it names now), created if missing. */
function hostSource(hostPath: string): string {
  if (!fs.existsSync(hostPath)) fs.mkdirSync(hostPath, { recursive: true, mode: 0o755 });
  return fs.realpathSync(hostPath);
}

export function resourcesOf(r: cri.LinuxContainerResources | null | undefined): Record<string, unknown> {
  r ??= {};
  const out: Record<string, unknown> = {};
  const cpu: Record<string, unknown> = {};
  if (r.cpuShares) cpu.shares = Number(r.cpuShares);
  if (r.cpuQuota && r.cpuQuota > 0) cpu.quota = Number(r.cpuQuota);
  if (r.cpuPeriod) cpu.period = Number(r.cpuPeriod);
  if (r.cpusetCpus) cpu.cpus = r.cpusetCpus;
  if (r.cpusetMems) cpu.mems = r.cpusetMems;
  if (Object.keys(cpu).length) out.cpu = cpu;
  if (r.memoryLimitInBytes && r.memoryLimitInBytes > 0) {
    out.memory = { limit: Number(r.memoryLimitInBytes), ...(r.memorySwapLimitInBytes ? { swap: Number(r.memorySwapLimitInBytes) } : {}) };
  }
  if (r.hugepageLimits?.length) out.hugepageLimits = r.hugepageLimits.map((h) => ({ pageSize: h.pageSize, limit: Number(h.limit ?? 0) }));
  if (r.unified && Object.keys(r.unified).length) out.unified = r.unified;
  return out;
}

/** Command line as containerd builds it: command replaces the entrypoint, args replace cmd. */
export function argsOf(c: ContainerRecord, image: ImageRecord): string[] {
  const command = c.config.command ?? [];
  const args = c.config.args ?? [];
  let out: string[];
  if (command.length) out = [...command, ...args];
  else out = [...(image.config.entrypoint ?? []), ...(args.length ? args : (image.config.cmd ?? []))];
  if (out.length === 0) throw invalidArgument('no command specified: the request has no command or args and the image no entrypoint or cmd');
  return out;
}

export function buildSpec(input: SpecInput): OciSpec {
  const { sb, c, image } = input;
  const sc = c.config.linux?.securityContext ?? {};
  const privileged = !!sc.privileged;
  if (privileged && !sb.config.linux?.securityContext?.privileged) {
    throw invalidArgument('a privileged container needs a privileged sandbox (linux.security_context.privileged on the pod)');
  }
  const caps = capabilitiesOf(c);
  const user = resolveUser(input);
  const env = new Map<string, string>();
  for (const e of image.config.env ?? [DEFAULT_PATH]) {
    const i = e.indexOf('=');
    env.set(i < 0 ? e : e.slice(0, i), i < 0 ? '' : e.slice(i + 1));
  }
  if (!env.has('PATH')) env.set('PATH', DEFAULT_PATH.slice(5));
  if (sb.config.hostname) env.set('HOSTNAME', sb.config.hostname);
  for (const e of c.config.envs ?? []) env.set(e.key!, e.value ?? '');

  const podNs = sb.config.linux?.securityContext?.namespaceOptions ?? {};
  const ctrNs = sc.namespaceOptions ?? {};
  const holder = input.holderPid;
  const namespaces: OciSpec['linux']['namespaces'] = [{ type: 'mount' }];
  // network: the pod's netns (CNI set it up) unless the pod uses the node's.
  if (!sb.hostNetwork) namespaces.push({ type: 'network', path: sb.netnsPath });
  // ipc and uts: the holder's (shared by the pod) unless the host's.
  if (podNs.ipc !== cri.NamespaceMode.NODE) namespaces.push(holder ? { type: 'ipc', path: `/proc/${holder}/ns/ipc` } : { type: 'ipc' });
  if (!sb.hostNetwork) namespaces.push(holder ? { type: 'uts', path: `/proc/${holder}/ns/uts` } : { type: 'uts' });
  const pidMode = ctrNs.pid ?? cri.NamespaceMode.CONTAINER;
  if (pidMode === cri.NamespaceMode.POD && holder && sb.backend.pidShared) namespaces.push({ type: 'pid', path: `/proc/${holder}/ns/pid` });
  else if (pidMode === cri.NamespaceMode.TARGET) {
    const pid = ctrNs.targetId ? input.targetPid?.(ctrNs.targetId) : undefined;
    if (!pid) throw invalidArgument(`pid namespace target ${JSON.stringify(ctrNs.targetId ?? '')} is not a running container`);
    namespaces.push({ type: 'pid', path: `/proc/${pid}/ns/pid` });
  } else if (pidMode !== cri.NamespaceMode.NODE) namespaces.push({ type: 'pid' });

  const mounts: OciMount[] = [
    { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
    { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
    { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'] },
    { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
    { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', privileged ? 'rw' : 'ro'] },
    { destination: '/sys/fs/cgroup', type: 'cgroup', source: 'cgroup', options: ['nosuid', 'noexec', 'nodev', 'relatime', privileged ? 'rw' : 'ro'] },
  ];
  const requested = new Set((c.config.mounts ?? []).map((m) => path.posix.normalize(m.containerPath!)));
  if (!requested.has('/dev/shm')) {
    mounts.push(
      input.shmDir && podNs.ipc !== cri.NamespaceMode.NODE
        ? { destination: '/dev/shm', type: 'bind', source: input.shmDir, options: ['rbind', 'rprivate', 'rw'] }
        : { destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'] },
    );
  }
  const etc: [string, string][] = [
    ['/etc/hosts', input.sandboxFiles.hosts],
    ['/etc/resolv.conf', input.sandboxFiles.resolv],
    ['/etc/hostname', input.sandboxFiles.hostname],
  ];
  for (const [dest, src] of etc) {
    if (requested.has(dest)) continue;
    mounts.push({ destination: dest, type: 'bind', source: src, options: ['rbind', 'rprivate', sc.readonlyRootfs ? 'ro' : 'rw'] });
  }
  let rootPropagation: string | undefined;
  for (const m of c.config.mounts ?? []) {
    const prop = propagationOf(m.propagation);
    if (prop === 'rshared') rootPropagation = 'rshared';
    else if (prop === 'rslave' && rootPropagation !== 'rshared') rootPropagation = 'rslave';
    mounts.push({
      destination: path.posix.normalize(m.containerPath!),
      type: 'bind',
      source: hostSource(m.hostPath!),
      options: ['rbind', prop, m.readonly ? 'ro' : 'rw'],
    });
  }

  const oom = c.resources.oomScoreAdj;
  return {
    ociVersion: '1.0.2-dev',
    process: {
      terminal: false,
      user: { uid: user.uid, gid: user.gid, ...(user.additionalGids.length ? { additionalGids: user.additionalGids } : {}) },
      args: argsOf(c, image),
      env: [...env].map(([k, v]) => `${k}=${v}`),
      cwd: c.config.workingDir || image.config.workingDir || '/',
      capabilities: { bounding: caps, effective: caps, permitted: caps },
      noNewPrivileges: !!sc.noNewPrivs,
      // This process cannot lower oom_score_adj (no CAP_SYS_RESOURCE here): never ask runc to.
      ...(oom !== undefined && oom !== null ? { oomScoreAdj: Math.max(Number(oom), input.minOomScoreAdj) } : {}),
    },
    root: { path: input.rootfs, readonly: !!sc.readonlyRootfs },
    mounts,
    annotations: {
      'io.kubernetes.cri.container-type': 'container',
      'io.kubernetes.cri.sandbox-id': sb.id,
      'io.kubernetes.cri.container-name': c.config.metadata?.name ?? '',
      'io.kubernetes.cri.image-name': image.repoTags[0] ?? image.id,
    },
    linux: {
      namespaces,
      cgroupsPath: input.cgroupsPath,
      resources: { ...resourcesOf(c.resources), devices: [{ allow: privileged, access: 'rwm' }] },
      sysctl: checkSysctls(sb),
      maskedPaths: privileged ? [] : sc.maskedPaths?.length ? sc.maskedPaths : DEFAULT_MASKED_PATHS,
      readonlyPaths: privileged ? [] : sc.readonlyPaths?.length ? sc.readonlyPaths : DEFAULT_READONLY_PATHS,
      seccomp: seccompOf(c, caps),
      ...(rootPropagation ? { rootfsPropagation: rootPropagation } : {}),
    },
  };
}
