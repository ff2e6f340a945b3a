// The Pod Security Standards (baseline and restricted), checked as the upstream pod-security-admission
// library checks them: one check per control, baseline checks first then restricted, each in ID order; a
// restricted check replaces the baseline check it tightens. Results carry upstream's reason and detail text,
// which the admission plugin joins into `violates PodSecurity "restricted:latest": reason (detail), ...`.

export type Level = 'privileged' | 'baseline' | 'restricted';
export const LEVELS: readonly Level[] = ['privileged', 'baseline', 'restricted'];

export interface CheckResult {
  reason: string;
  detail: string;
}

type PodMeta = { annotations?: Record<string, string> };
type PodSpec = Record<string, any>;
interface Check {
  id: string;
  level: 'baseline' | 'restricted';
  /** Baseline checks this one replaces at the restricted level. */
  overrides?: string[];
  run(meta: PodMeta, spec: PodSpec): CheckResult | undefined;
}

interface NamedContainer {
  name: string;
  securityContext?: Record<string, any>;
  ports?: { hostPort?: number }[];
}

function containers(spec: PodSpec): NamedContainer[] {
  return [...(spec.initContainers ?? []), ...(spec.containers ?? []), ...(spec.ephemeralContainers ?? [])];
}

const quote = (names: readonly string[]) => names.map((n) => `"${n}"`).join(', ');
const plural = (one: string, many: string, n: number) => (n === 1 ? one : many);
const containerList = (names: readonly string[]) => `${plural('container', 'containers', names.length)} ${quote(names)}`;

const DEFAULT_CAPS = new Set(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT']);
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);
const RESTRICTED_VOLUME_OK = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret']);
const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);

function volumeType(v: Record<string, unknown>): string {
  return Object.keys(v).find((k) => k !== 'name' && v[k] !== undefined && v[k] !== null) ?? '';
}

const CHECKS: Check[] = [
  {
    id: 'appArmorProfile',
    level: 'baseline',
    run(meta, spec) {
      const bad: string[] = [];
      const badProfile = (p: any) => p?.type === 'Unconfined';
      if (badProfile(spec.securityContext?.appArmorProfile)) bad.push('pod must not set securityContext.appArmorProfile.type to "Unconfined"');
      const cs = containers(spec).filter((c) => badProfile(c.securityContext?.appArmorProfile)).map((c) => c.name);
      if (cs.length) bad.push(`${containerList(cs)} must not set securityContext.appArmorProfile.type to "Unconfined"`);
      const anns = Object.entries(meta.annotations ?? {})
        .filter(([k, v]) => k.startsWith('container.apparmor.security.beta.kubernetes.io/') && v !== 'runtime/default' && !v.startsWith('localhost/'))
        .map(([k, v]) => `${k}="${v}"`)
        .sort();
      if (anns.length) bad.push(`${plural('annotation', 'annotations', anns.length)} ${anns.join(', ')}`);
      return bad.length ? { reason: 'forbidden AppArmor profile', detail: bad.join('; ') } : undefined;
    },
  },
  {
    id: 'capabilities_baseline',
    level: 'baseline',
    run(_m, spec) {
      const details: string[] = [];
      for (const c of containers(spec)) {
        const added = (c.securityContext?.capabilities?.add ?? []).filter((cap: string) => !DEFAULT_CAPS.has(cap));
        if (added.length) details.push(`container "${c.name}" must not include ${quote(added)} in securityContext.capabilities.add`);
      }
      return details.length ? { reason: 'non-default capabilities', detail: details.join('; ') } : undefined;
    },
  },
  {
    id: 'hostNamespaces',
    level: 'baseline',
    run(_m, spec) {
      const set = ['hostNetwork', 'hostPID', 'hostIPC'].filter((k) => spec[k] === true);
      return set.length ? { reason: 'host namespaces', detail: set.map((k) => `${k}=true`).join(', ') } : undefined;
    },
  },
  {
    id: 'hostPathVolumes',
    level: 'baseline',
    run(_m, spec) {
      const names = (spec.volumes ?? []).filter((v: any) => v.hostPath).map((v: any) => v.name);
      return names.length ? { reason: 'hostPath volumes', detail: `${plural('volume', 'volumes', names.length)} ${quote(names)}` } : undefined;
    },
  },
  {
    id: 'hostPorts',
    level: 'baseline',
    run(_m, spec) {
      const names: string[] = [];
      const ports: number[] = [];
      for (const c of containers(spec)) {
        const hp = (c.ports ?? []).map((p) => p.hostPort ?? 0).filter((p) => p !== 0);
        if (hp.length) {
          names.push(c.name);
          for (const p of hp) if (!ports.includes(p)) ports.push(p);
        }
      }
      if (!names.length) return undefined;
      const verb = plural('uses', 'use', names.length);
      return { reason: 'hostPort', detail: `${containerList(names)} ${verb} ${plural('hostPort', 'hostPorts', ports.length)} ${ports.join(', ')}` };
    },
  },
  {
    id: 'privileged',
    level: 'baseline',
    run(_m, spec) {
      const names = containers(spec).filter((c) => c.securityContext?.privileged === true).map((c) => c.name);
      return names.length ? { reason: 'privileged', detail: `${containerList(names)} must not set securityContext.privileged=true` } : undefined;
    },
  },
  {
    id: 'procMount',
    level: 'baseline',
    run(_m, spec) {
      const bad = containers(spec).filter((c) => c.securityContext?.procMount !== undefined && c.securityContext.procMount !== 'Default');
      if (!bad.length) return undefined;
      const kinds = [...new Set(bad.map((c) => c.securityContext!.procMount as string))];
      return { reason: 'procMount', detail: `${containerList(bad.map((c) => c.name))} must not set securityContext.procMount to ${quote(kinds)}` };
    },
  },
  {
    id: 'seLinuxOptions',
    level: 'baseline',
    run(_m, spec) {
      const problems: string[] = [];
      const checkOpts = (where: string, o: any) => {
        if (!o) return;
        const bad: string[] = [];
        if (!SELINUX_TYPES.has(o.type ?? '')) bad.push(`type "${o.type}"`);
        if (o.user) bad.push(`user "${o.user}"`);
        if (o.role) bad.push(`role "${o.role}"`);
        if (bad.length) problems.push(`${where} set forbidden securityContext.seLinuxOptions: ${bad.join('; ')}`);
      };
      checkOpts('pod', spec.securityContext?.seLinuxOptions);
      for (const c of containers(spec)) checkOpts(`container "${c.name}"`, c.securityContext?.seLinuxOptions);
      return problems.length ? { reason: 'seLinuxOptions', detail: problems.join('; ') } : undefined;
    },
  },
  {
    id: 'seccompProfile_baseline',
    level: 'baseline',
    run(_m, spec) {
      const bad: string[] = [];
      if (spec.securityContext?.seccompProfile?.type === 'Unconfined') bad.push('pod must not set securityContext.seccompProfile.type to "Unconfined"');
      const names = containers(spec).filter((c) => c.securityContext?.seccompProfile?.type === 'Unconfined').map((c) => c.name);
      if (names.length) bad.push(`${containerList(names)} must not set securityContext.seccompProfile.type to "Unconfined"`);
      return bad.length ? { reason: 'seccompProfile', detail: bad.join('; ') } : undefined;
    },
  },
  {
    id: 'sysctls',
    level: 'baseline',
    run(_m, spec) {
      const bad = (spec.securityContext?.sysctls ?? []).map((s: any) => s.name).filter((n: string) => !SAFE_SYSCTLS.has(n));
      return bad.length ? { reason: 'forbidden sysctls', detail: bad.join(', ') } : undefined;
    },
  },
  {
    id: 'windowsHostProcess',
    level: 'baseline',
    run(_m, spec) {
      const pod = spec.securityContext?.windowsOptions?.hostProcess === true;
      const names = containers(spec).filter((c) => c.securityContext?.windowsOptions?.hostProcess === true).map((c) => c.name);
      if (!pod && !names.length) return undefined;
      const who = pod ? (names.length ? `pod and ${containerList(names)}` : 'pod') : containerList(names);
      return { reason: 'hostProcess', detail: `${who} must not set securityContext.windowsOptions.hostProcess=true` };
    },
  },
  {
    id: 'allowPrivilegeEscalation',
    level: 'restricted',
    run(_m, spec) {
      const names = containers(spec).filter((c) => c.securityContext?.allowPrivilegeEscalation !== false).map((c) => c.name);
      return names.length ? { reason: 'allowPrivilegeEscalation != false', detail: `${containerList(names)} must set securityContext.allowPrivilegeEscalation=false` } : undefined;
    },
  },
  {
    id: 'capabilities_restricted',
    level: 'restricted',
    overrides: ['capabilities_baseline'],
    run(_m, spec) {
      const noDrop: string[] = [];
      const adds: string[] = [];
      for (const c of containers(spec)) {
        const caps = c.securityContext?.capabilities ?? {};
        if (!(caps.drop ?? []).includes('ALL')) noDrop.push(c.name);
        const added = (caps.add ?? []).filter((cap: string) => cap !== 'NET_BIND_SERVICE');
        if (added.length) adds.push(`container "${c.name}" must not include ${quote(added)} in securityContext.capabilities.add`);
      }
      const details = [...(noDrop.length ? [`${containerList(noDrop)} must set securityContext.capabilities.drop=["ALL"]`] : []), ...adds];
      return details.length ? { reason: 'unrestricted capabilities', detail: details.join('; ') } : undefined;
    },
  },
  {
    id: 'restrictedVolumes',
    level: 'restricted',
    overrides: ['hostPathVolumes'],
    run(_m, spec) {
      const names: string[] = [];
      const types: string[] = [];
      for (const v of spec.volumes ?? []) {
        const t = volumeType(v);
        if (RESTRICTED_VOLUME_OK.has(t)) continue;
        names.push(v.name);
        if (!types.includes(t)) types.push(t);
      }
      if (!names.length) return undefined;
      return {
        reason: 'restricted volume types',
        detail: `${plural('volume', 'volumes', names.length)} ${quote(names)} ${plural('uses', 'use', names.length)} ${plural('restricted volume type', 'restricted volume types', types.length)} ${quote(types)}`,
      };
    },
  },
  {
    id: 'runAsNonRoot',
    level: 'restricted',
    run(_m, spec) {
      const details: string[] = [];
      const pod = spec.securityContext?.runAsNonRoot;
      if (pod === false) details.push('pod must not set securityContext.runAsNonRoot=false');
      const explicitFalse = containers(spec).filter((c) => c.securityContext?.runAsNonRoot === false).map((c) => c.name);
      if (explicitFalse.length) details.push(`${containerList(explicitFalse)} must not set securityContext.runAsNonRoot=false`);
      if (pod !== true) {
        const unset = containers(spec).filter((c) => c.securityContext?.runAsNonRoot === undefined || c.securityContext?.runAsNonRoot === null).map((c) => c.name);
        if (unset.length && pod !== false) details.push(`pod or ${containerList(unset)} must set securityContext.runAsNonRoot=true`);
      }
      return details.length ? { reason: 'runAsNonRoot != true', detail: details.join('; ') } : undefined;
    },
  },
  {
    id: 'runAsUser',
    level: 'restricted',
    run(_m, spec) {
      const details: string[] = [];
      if (spec.securityContext?.runAsUser === 0) details.push('pod must not set runAsUser=0');
      const names = containers(spec).filter((c) => c.securityContext?.runAsUser === 0).map((c) => c.name);
      if (names.length) details.push(`${containerList(names)} must not set runAsUser=0`);
      return details.length ? { reason: 'runAsUser=0', detail: details.join('; ') } : undefined;
    },
  },
  {
    id: 'seccompProfile_restricted',
    level: 'restricted',
    overrides: ['seccompProfile_baseline'],
    run(_m, spec) {
      const ok = (t: unknown) => t === 'RuntimeDefault' || t === 'Localhost';
      const details: string[] = [];
      const podType = spec.securityContext?.seccompProfile?.type;
      if (podType !== undefined && !ok(podType)) details.push(`pod must not set securityContext.seccompProfile.type to "${podType}"`);
      const badSet = containers(spec).filter((c) => c.securityContext?.seccompProfile?.type !== undefined && !ok(c.securityContext.seccompProfile.type));
      if (badSet.length) {
        const types = [...new Set(badSet.map((c) => c.securityContext!.seccompProfile.type as string))];
        details.push(`${containerList(badSet.map((c) => c.name))} must not set securityContext.seccompProfile.type to ${quote(types)}`);
      }
      if (podType === undefined) {
        const unset = containers(spec).filter((c) => c.securityContext?.seccompProfile?.type === undefined).map((c) => c.name);
        if (unset.length) details.push(`pod or ${containerList(unset)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`);
      }
      return details.length ? { reason: 'seccompProfile', detail: details.join('; ') } : undefined;
    },
  },
];

const byOrder = (a: Check, b: Check) => (a.level !== b.level ? (a.level === 'baseline' ? -1 : 1) : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const ORDERED = [...CHECKS].sort(byOrder);

/** The checks that apply at a level, in evaluation order. */
/** The checks each level runs, worked out once: restricted's replace the baseline checks they override. */
const CHECKS_BY_LEVEL: Record<Level, readonly Check[]> = (() => {
  const overridden = new Set(ORDERED.flatMap((c) => c.overrides ?? []));
  return { privileged: [], baseline: ORDERED.filter((c) => c.level === 'baseline'), restricted: ORDERED.filter((c) => !overridden.has(c.id)) };
})();

function checksFor(level: Level): readonly Check[] {
  return CHECKS_BY_LEVEL[level];
}

/** Every violation of a level by a pod's metadata and spec (empty when the pod is allowed). */
export function evaluatePodSecurity(level: Level, meta: PodMeta, spec: PodSpec): CheckResult[] {
  const out: CheckResult[] = [];
  for (const c of checksFor(level)) {
    const r = c.run(meta ?? {}, spec ?? {});
    if (r) out.push(r);
  }
  return out;
}

/** `reason (detail), reason (detail)`, as upstream joins the failed checks. */
export function formatViolations(results: readonly CheckResult[]): string {
  return results.map((r) => (r.detail ? `${r.reason} (${r.detail})` : r.reason)).join(', ');
}
