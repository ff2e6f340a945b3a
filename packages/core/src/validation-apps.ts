// Validation of the workload kinds with the API server's field paths and wording: apps/v1 Deployment,
// ReplicaSet, StatefulSet, DaemonSet, ControllerRevision and core/v1 ReplicationController, PodTemplate.
import type { DaemonSet, Deployment, IntOrString, PodTemplateSpec, ReplicaSet, ReplicationController, StatefulSet } from './api-apps.js';
import type { KubeObject, LabelSelector } from './api-meta.js';
import { FieldErrors } from './field-errors.js';
import { selectorFromLabelSelector, selectorFromSet } from './labels.js';
import { dns1123Label } from './names.js';
import { validateLabels, validateLabelSelector, validatePodSpec } from './validation.js';

const oneOf = (v: unknown, set: readonly string[]) => typeof v === 'string' && set.includes(v);
const PERCENT = /^[0-9]+%$/;
const show = (v: unknown) => JSON.stringify(v);

export function nonNegative(e: FieldErrors, path: string, v: unknown): void {
  if (v !== undefined && !(Number.isInteger(v) && (v as number) >= 0)) e.invalid(path, v, 'must be greater than or equal to 0');
}

export function positive(e: FieldErrors, path: string, v: unknown): void {
  if (v !== undefined && !(Number.isInteger(v) && (v as number) > 0)) e.invalid(path, v, 'must be greater than 0');
}

/** maxSurge/maxUnavailable: a non-negative integer or a percentage of at most 100%. */
export function intOrPercent(e: FieldErrors, path: string, v: IntOrString | undefined): void {
  if (v === undefined) return;
  if (typeof v === 'string') {
    if (!PERCENT.test(v)) {
      e.invalid(path, v, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')");
    } else if (Number(v.slice(0, -1)) > 100) e.invalid(path, v, 'must not be greater than 100%');
  } else nonNegative(e, path, v);
}

/** Zero in both its forms (0 and '0%'). */
export function isZero(v: IntOrString | undefined): boolean {
  return v === 0 || v === '0%' || v === undefined;
}

/** Validate a pod template at `path`, its spec with the pod spec's rules and field paths. */
export function validateTemplate(e: FieldErrors, path: string, t: PodTemplateSpec | undefined, restartPolicies: readonly string[] = ['Always']): void {
  if (!t || typeof t !== 'object') {
    e.required(path);
    return;
  }
  validateLabels(e, `${path}.metadata.labels`, t.metadata?.labels);
  const inner = new FieldErrors();
  validatePodSpec(inner, t.spec);
  for (const c of inner.list) e.list.push({ ...c, field: c.field.replace(/^spec/, `${path}.spec`) });
  const rp = t.spec?.restartPolicy;
  if (rp !== undefined && !restartPolicies.includes(rp)) e.notSupported(`${path}.spec.restartPolicy`, rp, restartPolicies);
  if (t.spec?.activeDeadlineSeconds !== undefined && restartPolicies.length === 1 && restartPolicies[0] === 'Always') {
    e.invalid(`${path}.spec.activeDeadlineSeconds`, t.spec.activeDeadlineSeconds, 'activeDeadlineSeconds in ReplicaSet is not Supported');
  }
}

/** Selector present, non-empty and matching the template's labels (apps/v1 rules). */
export function validateSelectorAndTemplate(e: FieldErrors, kind: string, sel: LabelSelector | undefined, t: PodTemplateSpec | undefined): void {
  if (!sel) {
    e.required('spec.selector');
    return;
  }
  validateLabelSelector(e, 'spec.selector', sel);
  let compiled;
  try {
    compiled = selectorFromLabelSelector(sel);
  } catch {
    return;
  }
  if (compiled.empty()) {
    e.invalid('spec.selector', sel, `empty selector is invalid for ${kind}`);
    return;
  }
  const labels = t?.metadata?.labels ?? {};
  if (t && !compiled.matches(labels)) e.invalid('spec.template.metadata.labels', labels, '`selector` does not match template `labels`');
}

function replicas(e: FieldErrors, v: unknown): void {
  nonNegative(e, 'spec.replicas', v);
}

export function validateDeployment(e: FieldErrors, obj: KubeObject): void {
  const s = (obj as Deployment).spec;
  if (!s || typeof s !== 'object') return e.required('spec');
  replicas(e, s.replicas);
  validateSelectorAndTemplate(e, 'deployment', s.selector, s.template);
  validateTemplate(e, 'spec.template', s.template);
  const st = s.strategy;
  if (st) {
    if (!oneOf(st.type, ['Recreate', 'RollingUpdate'])) e.notSupported('spec.strategy.type', st.type ?? '', ['Recreate', 'RollingUpdate']);
    if (st.type === 'Recreate' && st.rollingUpdate) {
      e.forbidden('spec.strategy.rollingUpdate', "may not be specified when strategy `type` is 'Recreate'");
    }
    if (st.type === 'RollingUpdate' && st.rollingUpdate) {
      const ru = st.rollingUpdate;
      intOrPercent(e, 'spec.strategy.rollingUpdate.maxUnavailable', ru.maxUnavailable);
      intOrPercent(e, 'spec.strategy.rollingUpdate.maxSurge', ru.maxSurge);
      if (isZero(ru.maxUnavailable) && isZero(ru.maxSurge)) {
        e.invalid('spec.strategy.rollingUpdate.maxUnavailable', ru.maxUnavailable ?? 0, 'may not be 0 when `maxSurge` is 0');
      }
    }
  }
  nonNegative(e, 'spec.minReadySeconds', s.minReadySeconds);
  nonNegative(e, 'spec.revisionHistoryLimit', s.revisionHistoryLimit);
  if (s.progressDeadlineSeconds !== undefined) {
    nonNegative(e, 'spec.progressDeadlineSeconds', s.progressDeadlineSeconds);
    if (Number.isInteger(s.progressDeadlineSeconds) && s.progressDeadlineSeconds <= (s.minReadySeconds ?? 0)) {
      e.invalid('spec.progressDeadlineSeconds', s.progressDeadlineSeconds, 'must be greater than minReadySeconds');
    }
  }
}

export function validateReplicaSet(e: FieldErrors, obj: KubeObject): void {
  const s = (obj as ReplicaSet).spec;
  if (!s || typeof s !== 'object') return e.required('spec');
  replicas(e, s.replicas);
  nonNegative(e, 'spec.minReadySeconds', s.minReadySeconds);
  validateSelectorAndTemplate(e, 'deployment', s.selector, s.template);
  if (s.template) validateTemplate(e, 'spec.template', s.template);
}

export function validateReplicationController(e: FieldErrors, obj: KubeObject): void {
  const s = (obj as ReplicationController).spec;
  if (!s || typeof s !== 'object') return e.required('spec');
  replicas(e, s.replicas);
  nonNegative(e, 'spec.minReadySeconds', s.minReadySeconds);
  if (!s.selector || Object.keys(s.selector).length === 0) e.required('spec.selector');
  else {
    validateLabels(e, 'spec.selector', s.selector);
    const labels = s.template?.metadata?.labels ?? {};
    if (s.template && !selectorFromSet(s.selector).matches(labels)) {
      e.invalid('spec.template.metadata.labels', labels, '`selector` does not match template `labels`');
    }
  }
  if (s.template) validateTemplate(e, 'spec.template', s.template);
  else if ((s.replicas ?? 1) > 0) e.required('spec.template');
}

export function validatePodTemplate(e: FieldErrors, obj: KubeObject): void {
  validateTemplate(e, 'template', obj.template, ['Always', 'OnFailure', 'Never']);
}

export function validateStatefulSet(e: FieldErrors, obj: KubeObject): void {
  const s = (obj as StatefulSet).spec;
  if (!s || typeof s !== 'object') return e.required('spec');
  replicas(e, s.replicas);
  validateSelectorAndTemplate(e, 'statefulset', s.selector, s.template);
  // Containers mount the claim templates by name: they count as volumes of the template.
  const claimVolumes = (s.volumeClaimTemplates ?? []).filter((c) => c?.metadata?.name).map((c) => ({ name: c.metadata.name!, persistentVolumeClaim: { claimName: c.metadata.name! } }));
  const template = s.template?.spec && claimVolumes.length ? { ...s.template, spec: { ...s.template.spec, volumes: [...(s.template.spec.volumes ?? []), ...claimVolumes] } } : s.template;
  validateTemplate(e, 'spec.template', template);
  if (!oneOf(s.podManagementPolicy, ['OrderedReady', 'Parallel'])) {
    e.notSupported('spec.podManagementPolicy', s.podManagementPolicy ?? '', ['OrderedReady', 'Parallel']);
  }
  const us = s.updateStrategy;
  if (us) {
    if (!oneOf(us.type, ['OnDelete', 'RollingUpdate'])) e.notSupported('spec.updateStrategy.type', us.type ?? '', ['OnDelete', 'RollingUpdate']);
    if (us.type === 'OnDelete' && us.rollingUpdate) {
      e.invalid('spec.updateStrategy.rollingUpdate', us.rollingUpdate, `only allowed for updateStrategy 'RollingUpdate'`);
    }
    if (us.rollingUpdate) {
      nonNegative(e, 'spec.updateStrategy.rollingUpdate.partition', us.rollingUpdate.partition);
      if (us.rollingUpdate.maxUnavailable !== undefined) {
        intOrPercent(e, 'spec.updateStrategy.rollingUpdate.maxUnavailable', us.rollingUpdate.maxUnavailable);
        if (isZero(us.rollingUpdate.maxUnavailable)) e.invalid('spec.updateStrategy.rollingUpdate.maxUnavailable', us.rollingUpdate.maxUnavailable, 'must be greater than 0');
      }
    }
  }
  nonNegative(e, 'spec.minReadySeconds', s.minReadySeconds);
  nonNegative(e, 'spec.revisionHistoryLimit', s.revisionHistoryLimit);
  if (s.serviceName) e.check('spec.serviceName', s.serviceName, dns1123Label(s.serviceName));
  const rp = s.persistentVolumeClaimRetentionPolicy;
  for (const k of ['whenDeleted', 'whenScaled'] as const) {
    if (rp?.[k] !== undefined && !oneOf(rp[k], ['Delete', 'Retain'])) {
      e.notSupported(`spec.persistentVolumeClaimRetentionPolicy.${k}`, rp[k], ['Delete', 'Retain']);
    }
  }
  const names = new Set<string>();
  (s.volumeClaimTemplates ?? []).forEach((t, i) => {
    const p = `spec.volumeClaimTemplates[${i}]`;
    const name = t?.metadata?.name;
    if (!name) e.required(`${p}.metadata.name`);
    else {
      e.check(`${p}.metadata.name`, name, dns1123Label(name));
      if (names.has(name)) e.duplicate(`${p}.metadata.name`, name);
      names.add(name);
    }
    if (!t?.spec?.accessModes?.length) e.required(`${p}.spec.accessModes`, 'at least 1 access mode is required');
    if (!t?.spec?.resources?.requests?.storage) e.required(`${p}.spec.resources[storage]`);
  });
  if (s.ordinals?.start !== undefined) nonNegative(e, 'spec.ordinals.start', s.ordinals.start);
}

export function validateDaemonSet(e: FieldErrors, obj: KubeObject): void {
  const s = (obj as DaemonSet).spec;
  if (!s || typeof s !== 'object') return e.required('spec');
  validateSelectorAndTemplate(e, 'daemonset', s.selector, s.template);
  validateTemplate(e, 'spec.template', s.template);
  const us = s.updateStrategy;
  if (us) {
    if (!oneOf(us.type, ['OnDelete', 'RollingUpdate'])) e.notSupported('spec.updateStrategy.type', us.type ?? '', ['OnDelete', 'RollingUpdate']);
    const ru = us.rollingUpdate;
    if (us.type === 'RollingUpdate' && ru) {
      intOrPercent(e, 'spec.updateStrategy.rollingUpdate.maxUnavailable', ru.maxUnavailable);
      intOrPercent(e, 'spec.updateStrategy.rollingUpdate.maxSurge', ru.maxSurge);
      // Exactly one of the two is non-zero: a rollout either surges a second pod onto a node or takes one down.
      if (isZero(ru.maxUnavailable) && isZero(ru.maxSurge)) e.required('spec.updateStrategy.rollingUpdate.maxUnavailable', 'cannot be 0 when maxSurge is 0');
      if (!isZero(ru.maxUnavailable) && !isZero(ru.maxSurge)) {
        e.invalid('spec.updateStrategy.rollingUpdate.maxSurge', ru.maxSurge, 'may not be set when maxUnavailable is non-zero');
      }
    }
  }
  nonNegative(e, 'spec.minReadySeconds', s.minReadySeconds);
  nonNegative(e, 'spec.revisionHistoryLimit', s.revisionHistoryLimit);
}

export function validateControllerRevision(e: FieldErrors, obj: KubeObject): void {
  nonNegative(e, 'revision', obj.revision);
  if (obj.revision === undefined) e.required('revision');
}

function immutable(e: FieldErrors, path: string, a: unknown, b: unknown): void {
  if (show(a ?? null) !== show(b ?? null)) e.invalid(path, b, 'field is immutable');
}

export function validateSelectorUpdate(e: FieldErrors, next: KubeObject, prev: KubeObject): void {
  immutable(e, 'spec.selector', prev.spec?.selector, next.spec?.selector);
}

export function validateStatefulSetUpdate(e: FieldErrors, next: KubeObject, prev: KubeObject): void {
  const a = (prev as StatefulSet).spec;
  const b = (next as StatefulSet).spec;
  // Only these may change; everything else is forbidden, as upstream words it.
  const strip = (s: StatefulSet['spec']) => ({
    ...s,
    replicas: undefined,
    ordinals: undefined,
    template: undefined,
    updateStrategy: undefined,
    persistentVolumeClaimRetentionPolicy: undefined,
    minReadySeconds: undefined,
    revisionHistoryLimit: undefined,
  });
  if (show(strip(a)) !== show(strip(b))) {
    e.forbidden(
      'spec',
      "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    );
  }
}

export function validateControllerRevisionUpdate(e: FieldErrors, next: KubeObject, prev: KubeObject): void {
  immutable(e, 'data', prev.data, next.data);
}
