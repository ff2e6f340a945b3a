// The RuntimeDefault seccomp profile. containerd's default profile is an allow-list; this one states the
// same outcome as the set of system calls that list leaves out (or allows only with a capability), each
// refused with EPERM, so a container sees what it would see under containerd: kernel modules, kexec,
// reboot, keyrings, BPF, perf, clock setting, swap, accounting, and — without CAP_SYS_ADMIN — mount,
// namespaces and host names; ptrace-like calls without CAP_SYS_PTRACE; and so on.

/** Syscalls the default profile refuses whatever the capabilities. */
const ALWAYS_BLOCKED = [
  'acct', 'add_key', 'afs_syscall', 'clock_adjtime', 'clock_adjtime64', 'clock_settime', 'clock_settime64',
  'create_module', 'delete_module', 'finit_module', 'get_kernel_syms', 'get_mempolicy', 'init_module', 'ioperm',
  'iopl', 'kexec_file_load', 'kexec_load', 'keyctl', 'lookup_dcookie', 'mbind', 'move_pages', 'nfsservctl',
  'open_by_handle_at', 'perf_event_open', 'putpmsg', 'getpmsg', 'query_module', 'quotactl', 'reboot', 'request_key',
  'set_mempolicy', 'settimeofday', 'stime', 'swapoff', 'swapon', 'sysfs', '_sysctl', 'uselib', 'userfaultfd',
  'ustat', 'vm86', 'vm86old', 'vserver', 'tuxcall', 'security', 'fsconfig', 'fsmount', 'fsopen', 'fspick',
  'move_mount', 'open_tree', 'kcmp', 'pidfd_getfd', 'process_madvise',
];

/** Syscalls allowed only when the container holds the named capability. */
const NEEDS_CAPABILITY: Record<string, string[]> = {
  CAP_SYS_ADMIN: ['bpf', 'fanotify_init', 'lookup_dcookie', 'mount', 'name_to_handle_at', 'quotactl', 'setdomainname', 'sethostname', 'setns', 'syslog', 'umount', 'umount2', 'unshare', 'pivot_root'],
  CAP_SYS_BOOT: ['reboot'],
  CAP_SYS_CHROOT: ['chroot'],
  CAP_SYS_MODULE: ['delete_module', 'init_module', 'finit_module'],
  CAP_SYS_PACCT: ['acct'],
  CAP_SYS_PTRACE: ['kcmp', 'pidfd_getfd', 'process_madvise', 'process_vm_readv', 'process_vm_writev', 'ptrace'],
  CAP_SYS_RAWIO: ['iopl', 'ioperm'],
  CAP_SYS_TIME: ['settimeofday', 'stime', 'clock_settime', 'clock_settime64', 'adjtimex'],
  CAP_SYS_TTY_CONFIG: ['vhangup'],
  CAP_SYS_NICE: ['get_mempolicy', 'mbind', 'set_mempolicy'],
  CAP_SYSLOG: ['syslog'],
  CAP_BPF: ['bpf'],
  CAP_PERFMON: ['perf_event_open'],
};

/** CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET. */
const NAMESPACE_FLAGS = [0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000];

export interface SeccompProfile {
  defaultAction: string;
  architectures: string[];
  syscalls: { names: string[]; action: string; errnoRet?: number; args?: { index: number; value: number; valueTwo?: number; op: string }[] }[];
}

/** The RuntimeDefault profile for a container holding `capabilities` (names with the CAP_ prefix). */
export function defaultSeccompProfile(capabilities: string[]): SeccompProfile {
  const caps = new Set(capabilities);
  const allowedByCap = new Set<string>();
  const blocked = new Set<string>();
  for (const [cap, calls] of Object.entries(NEEDS_CAPABILITY)) for (const c of calls) (caps.has(cap) ? allowedByCap : blocked).add(c);
  for (const c of ALWAYS_BLOCKED) if (!allowedByCap.has(c)) blocked.add(c);
  for (const c of allowedByCap) blocked.delete(c);
  const syscalls: SeccompProfile['syscalls'] = [{ names: [...blocked].sort(), action: 'SCMP_ACT_ERRNO', errnoRet: 1 }];
  if (!caps.has('CAP_SYS_ADMIN')) {
    // clone with a namespace flag is refused, as upstream does; plain clone/fork stays allowed. One rule per
    // flag (value is the mask, valueTwo what the masked flags must equal).
    for (const flag of NAMESPACE_FLAGS) {
      syscalls.push({ names: ['clone'], action: 'SCMP_ACT_ERRNO', errnoRet: 1, args: [{ index: 0, value: flag, valueTwo: flag, op: 'SCMP_CMP_MASKED_EQ' }] });
    }
    // clone3 passes its flags in memory seccomp cannot read: ENOSYS makes libc fall back to clone.
    syscalls.push({ names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: 38 });
  }
  return { defaultAction: 'SCMP_ACT_ALLOW', architectures: ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32', 'SCMP_ARCH_AARCH64', 'SCMP_ARCH_ARM'], syscalls };
}
