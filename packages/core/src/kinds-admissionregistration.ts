// Registration of admissionregistration.k8s.io/v1 (ValidatingAdmissionPolicy, its Binding, and the
// validating and mutating webhook configurations): kind registry entries, KindMap types, defaults and the
// API server's validation of the fields admission relies on.
import type {
  MutatingWebhookConfiguration,
  ValidatingAdmissionPolicy,
  ValidatingAdmissionPolicyBinding,
  ValidatingWebhookConfiguration,
} from './api-admissionregistration.js';
import type { KubeObject } from './api-meta.js';
import type { FieldErrors } from './field-errors.js';
import { registerKindHooks } from './kind-hooks.js';
import { registerKind } from './kinds.js';

declare module './kinds.js' {
  interface KindMap {
    ValidatingAdmissionPolicy: ValidatingAdmissionPolicy;
    ValidatingAdmissionPolicyBinding: ValidatingAdmissionPolicyBinding;
    ValidatingWebhookConfiguration: ValidatingWebhookConfiguration;
    MutatingWebhookConfiguration: MutatingWebhookConfiguration;
  }
}

export const ADMISSIONREGISTRATION_KINDS = [
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'ValidatingWebhookConfiguration',
  'MutatingWebhookConfiguration',
] as const;

const V = 'admissionregistration.k8s.io/v1';
registerKind({ kind: 'ValidatingAdmissionPolicy', apiVersion: V, resource: 'validatingadmissionpolicies', namespaced: false, hasStatus: true });
registerKind({ kind: 'ValidatingAdmissionPolicyBinding', apiVersion: V, resource: 'validatingadmissionpolicybindings', namespaced: false, hasStatus: false });
registerKind({ kind: 'ValidatingWebhookConfiguration', apiVersion: V, resource: 'validatingwebhookconfigurations', namespaced: false, hasStatus: false });
registerKind({ kind: 'MutatingWebhookConfiguration', apiVersion: V, resource: 'mutatingwebhookconfigurations', namespaced: false, hasStatus: false });

const POLICIES = ['Fail', 'Ignore'];
const ACTIONS = ['Deny', 'Warn', 'Audit'];
const SIDE_EFFECTS = ['None', 'NoneOnDryRun'];

function validatePolicy(e: FieldErrors, o: KubeObject): void {
  const s = o.spec;
  if (!s || typeof s !== 'object') return e.required('spec');
  if (s.failurePolicy !== undefined && !POLICIES.includes(s.failurePolicy)) e.notSupported('spec.failurePolicy', s.failurePolicy, POLICIES);
  if (!s.validations?.length && !s.auditAnnotations?.length) e.required('spec.validations', 'validations or auditAnnotations must contain at least one item');
  (s.validations ?? []).forEach((v: { expression?: string }, i: number) => {
    if (!v?.expression?.trim()) e.required(`spec.validations[${i}].expression`, 'expression is not specified');
  });
  if (!s.matchConstraints) e.required('spec.matchConstraints');
  else if (!s.matchConstraints.resourceRules?.length) e.required('spec.matchConstraints.resourceRules');
}

function validateBinding(e: FieldErrors, o: KubeObject): void {
  const s = o.spec;
  if (!s || typeof s !== 'object') return e.required('spec');
  if (!s.policyName) e.required('spec.policyName');
  if (!s.validationActions?.length) e.required('spec.validationActions');
  (s.validationActions ?? []).forEach((a: string, i: number) => {
    if (!ACTIONS.includes(a)) e.notSupported(`spec.validationActions[${i}]`, a, ACTIONS);
  });
}

function validateWebhooks(e: FieldErrors, o: KubeObject): void {
  const names = new Set<string>();
  ((o.webhooks ?? []) as KubeObject[]).forEach((w: any, i: number) => {
    const p = `webhooks[${i}]`;
    if (!w?.name) e.required(`${p}.name`);
    else if (names.has(w.name)) e.duplicate(`${p}.name`, w.name);
    else names.add(w.name);
    const cc = w?.clientConfig;
    if (!cc || (!cc.url && !cc.service)) e.required(`${p}.clientConfig`, 'exactly one of url or service is required');
    else if (cc.url && cc.service) e.required(`${p}.clientConfig`, 'exactly one of url or service is required');
    else if (cc.url && !/^https:\/\//.test(cc.url)) e.invalid(`${p}.clientConfig.url`, cc.url, "'https' is the only allowed URL scheme");
    if (!SIDE_EFFECTS.includes(w?.sideEffects)) e.notSupported(`${p}.sideEffects`, w?.sideEffects ?? '', SIDE_EFFECTS);
    if (!w?.admissionReviewVersions?.length) e.required(`${p}.admissionReviewVersions`, 'must specify one of v1, v1beta1');
    if (w?.failurePolicy !== undefined && !POLICIES.includes(w.failurePolicy)) e.notSupported(`${p}.failurePolicy`, w.failurePolicy, POLICIES);
    if (w?.timeoutSeconds !== undefined && (w.timeoutSeconds < 1 || w.timeoutSeconds > 30)) e.invalid(`${p}.timeoutSeconds`, w.timeoutSeconds, 'the timeout value must be between 1 and 30 seconds');
  });
}

function defaultWebhooks(o: KubeObject): void {
  for (const w of (o.webhooks ?? []) as any[]) {
    w.failurePolicy ??= 'Fail';
    w.matchPolicy ??= 'Equivalent';
    w.timeoutSeconds ??= 10;
    w.namespaceSelector ??= {};
    w.objectSelector ??= {};
    if (o.kind === 'MutatingWebhookConfiguration') w.reinvocationPolicy ??= 'Never';
  }
}

registerKindHooks('ValidatingAdmissionPolicy', {
  defaults: (o) => {
    if (o.spec) o.spec.failurePolicy ??= 'Fail';
  },
  validate: validatePolicy,
});
registerKindHooks('ValidatingAdmissionPolicyBinding', { validate: validateBinding });
registerKindHooks('ValidatingWebhookConfiguration', { defaults: defaultWebhooks, validate: validateWebhooks });
registerKindHooks('MutatingWebhookConfiguration', { defaults: defaultWebhooks, validate: validateWebhooks });
