// The PodSecurity admission plugin: a namespace's `pod-security.kubernetes.io/<mode>` labels choose a level
// (privileged, baseline, restricted) per mode. `enforce` refuses a violating pod with 403; `warn` lets it in
// with a warning; `audit` annotates the audit event. Workload objects with a pod template get warn and audit
// only, as upstream. Namespace label values are validated, and a tightened enforce level warns about the
// pods already there.
import { type FieldErrors as FieldErrorsType, FieldErrors, InvalidError, type KubeObject, type Store } from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain } from '../auth-seams.js';
import { forbiddenError } from '../authz/forbidden.js';
import { type AdmissionLookups, storeLookups } from './admission-lookups.js';
import { evaluatePodSecurity, formatViolations, LEVELS, type Level } from './pod-security-checks.js';

export const LABEL_PREFIX = 'pod-security.kubernetes.io/';
const MODES = ['enforce', 'audit', 'warn'] as const;
type Mode = (typeof MODES)[number];
const VERSION_RE = /^(latest|v1\.(0|[1-9]\d*))$/;

export interface PodSecurityPolicy {
  level: Level;
  version: string;
}
export type NamespacePolicy = Record<Mode, PodSecurityPolicy>;

export interface PodSecurityOptions {
  /** Levels for namespaces without labels (upstream's AdmissionConfiguration defaults: privileged). */
  defaults?: Partial<Record<Mode, Level>>;
  /** Namespaces, users and RuntimeClasses that are never checked. */
  exemptions?: { namespaces?: string[]; usernames?: string[]; runtimeClasses?: string[] };
}

/** Templates of the workload kinds upstream checks in warn and audit mode. */
const TEMPLATE_PATHS: Record<string, (o: KubeObject) => KubeObject | undefined> = {
  deployments: (o) => o.spec?.template,
  replicasets: (o) => o.spec?.template,
  statefulsets: (o) => o.spec?.template,
  daemonsets: (o) => o.spec?.template,
  jobs: (o) => o.spec?.template,
  replicationcontrollers: (o) => o.spec?.template,
  cronjobs: (o) => o.spec?.jobTemplate?.spec?.template,
  podtemplates: (o) => o.template,
};

/** The policy a namespace's labels set, and the field errors of bad label values. */
export function namespacePolicy(labels: Record<string, string> | undefined, defaults: Partial<Record<Mode, Level>> = {}, e?: FieldErrorsType): NamespacePolicy {
  const out = {} as NamespacePolicy;
  for (const mode of MODES) {
    const key = `${LABEL_PREFIX}${mode}`;
    const vkey = `${key}-version`;
    let level: Level = defaults[mode] ?? 'privileged';
    const l = labels?.[key];
    if (l !== undefined) {
      if ((LEVELS as readonly string[]).includes(l)) level = l as Level;
      else {
        e?.invalid(`metadata.labels[${key}]`, l, `must be one of ${LEVELS.join(', ')}`);
        level = 'restricted'; // an unreadable level is treated as the strictest, as upstream does
      }
    }
    let version = labels?.[vkey] ?? 'latest';
    if (!VERSION_RE.test(version)) {
      e?.invalid(`metadata.labels[${vkey}]`, version, 'must be "latest" or of the form "v1.x"');
      version = 'latest';
    }
    out[mode] = { level, version };
  }
  return out;
}

const policyName = (p: PodSecurityPolicy) => `${p.level}:${p.version}`;

export class PodSecurityAdmission implements AdmissionChain {
  constructor(
    private readonly store: Store,
    private readonly opts: PodSecurityOptions = {},
    private readonly lookups: AdmissionLookups = storeLookups(store),
  ) {}

  async admit(): Promise<void> {}

  async validate(attrs: AdmissionAttributes): Promise<void> {
    if (attrs.resource.group === '' && attrs.resource.resource === 'namespaces' && !attrs.subresource) return this.validateNamespace(attrs);
    if (attrs.operation !== 'CREATE' && attrs.operation !== 'UPDATE') return;
    if (!attrs.object || !attrs.namespace) return;
    const ex = this.opts.exemptions ?? {};
    if (ex.namespaces?.includes(attrs.namespace) || ex.usernames?.includes(attrs.userInfo.name)) return;
    const isPod = attrs.resource.group === '' && attrs.resource.resource === 'pods';
    if (isPod) {
      if (attrs.subresource && attrs.subresource !== 'ephemeralcontainers') return;
      if (attrs.operation === 'UPDATE' && attrs.oldObject && !securityRelevantChange(attrs.object, attrs.oldObject)) return;
      if (attrs.object.spec?.runtimeClassName && ex.runtimeClasses?.includes(attrs.object.spec.runtimeClassName)) return;
      return this.check(attrs, attrs.object, true);
    }
    const template = attrs.subresource ? undefined : TEMPLATE_PATHS[attrs.resource.resource]?.(attrs.object);
    if (template) return this.check(attrs, template, false);
  }

  /** Policies by the label set they were read from (cached namespaces keep their label objects until changed). */
  private readonly policies = new WeakMap<Record<string, string>, NamespacePolicy>();
  private unlabelled: NamespacePolicy | undefined;

  private async policyOf(namespace: string): Promise<NamespacePolicy> {
    let labels: Record<string, string> | undefined;
    try {
      labels = (await this.lookups.namespace(namespace))?.metadata.labels;
    } catch {
      labels = undefined; // NamespaceLifecycle answers for a missing namespace
    }
    if (!labels) return (this.unlabelled ??= namespacePolicy(undefined, this.opts.defaults));
    let policy = this.policies.get(labels);
    if (!policy) {
      policy = namespacePolicy(labels, this.opts.defaults);
      this.policies.set(labels, policy);
    }
    return policy;
  }

  private async check(attrs: AdmissionAttributes, pod: KubeObject, enforce: boolean): Promise<void> {
    const policy = await this.policyOf(attrs.namespace);
    const meta = pod.metadata ?? {};
    const spec = pod.spec ?? {};
    const cache = new Map<Level, string>();
    const violations = (level: Level) => {
      if (!cache.has(level)) cache.set(level, formatViolations(evaluatePodSecurity(level, meta, spec)));
      return cache.get(level)!;
    };
    if (enforce) {
      const v = violations(policy.enforce.level);
      if (v) throw forbiddenError('', attrs.resource.resource, attrs.name, `violates PodSecurity "${policyName(policy.enforce)}": ${v}`);
    }
    const audit = violations(policy.audit.level);
    if (audit && attrs.auditAnnotations) {
      attrs.auditAnnotations[`${LABEL_PREFIX}audit-violations`] = `would violate PodSecurity "${policyName(policy.audit)}": ${audit}`;
    }
    const warn = violations(policy.warn.level);
    if (warn && attrs.warnings) attrs.warnings.push(`would violate PodSecurity "${policyName(policy.warn)}": ${warn}`);
  }

  private async validateNamespace(attrs: AdmissionAttributes): Promise<void> {
    if ((attrs.operation !== 'CREATE' && attrs.operation !== 'UPDATE') || !attrs.object) return;
    const e = new FieldErrors();
    const next = namespacePolicy(attrs.object.metadata?.labels, this.opts.defaults, e);
    if (!e.ok) throw new InvalidError('Namespace', attrs.name, '', e.list);
    if (attrs.operation !== 'UPDATE' || !attrs.warnings) return;
    const prev = namespacePolicy(attrs.oldObject?.metadata?.labels, this.opts.defaults);
    if (LEVELS.indexOf(next.enforce.level) <= LEVELS.indexOf(prev.enforce.level) && next.enforce.version === prev.enforce.version) return;
    if ((this.opts.exemptions?.namespaces ?? []).includes(attrs.name)) return;
    const pods = await this.store.list('Pod', { namespace: attrs.name });
    const bad: string[] = [];
    for (const p of pods.items) {
      const v = evaluatePodSecurity(next.enforce.level, p.metadata, p.spec ?? {});
      if (v.length) bad.push(`${p.metadata.name}: ${v.map((r) => r.reason).join(', ')}`);
    }
    if (!bad.length) return;
    attrs.warnings.push(`existing pods in namespace "${attrs.name}" violate the new PodSecurity enforce level "${policyName(next.enforce)}"`);
    attrs.warnings.push(...bad.slice(0, 10));
  }
}

/** Whether a pod update touches anything a Pod Security check reads (upstream skips the rest). */
function securityRelevantChange(next: KubeObject, prev: KubeObject): boolean {
  const strip = (o: KubeObject) => {
    const spec = { ...(o.spec ?? {}) };
    const img = (cs: any[] | undefined) => cs?.map((c) => ({ ...c, image: undefined }));
    spec.containers = img(spec.containers);
    spec.initContainers = img(spec.initContainers);
    delete spec.activeDeadlineSeconds;
    delete spec.tolerations;
    delete spec.terminationGracePeriodSeconds;
    return JSON.stringify({ spec, annotations: o.metadata?.annotations ?? {} });
  };
  return strip(next) !== strip(prev);
}
