// The ValidatingAdmissionPolicy plugin: each ValidatingAdmissionPolicyBinding applies its policy's CEL
// validations to the requests both the policy's matchConstraints and the binding's matchResources select,
// with `object`, `oldObject`, `request`, `params`, `namespaceObject` and `variables` bound as upstream.
// A failed validation is denied, warned or audited as the binding's validationActions say, worded as
// kube-apiserver words it; an expression error follows the policy's failurePolicy.
import {
  type KubeObject,
  lookupKind,
  SharedInformer,
  StatusError,
  type Store,
  type ValidatingAdmissionPolicy,
  type ValidatingAdmissionPolicyBinding,
} from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain } from '../auth-seams.js';
import { forbiddenError } from '../authz/forbidden.js';
import { evaluate, toCel } from './cel.js';
import { rulesMatch, selectorsMatch } from './match-rules.js';

const REASON_CODES: Record<string, number> = { Unauthorized: 401, Forbidden: 403, Invalid: 422, RequestEntityTooLarge: 413 };
export const VALIDATION_FAILURE_ANNOTATION = 'validation.policy.admission.k8s.io/validation_failure';

/** The `request` variable: upstream's AdmissionRequest fields a policy may read. */
export function requestVariable(attrs: AdmissionAttributes): Record<string, unknown> {
  const u = attrs.userInfo;
  return {
    kind: attrs.kind,
    resource: attrs.resource,
    subResource: attrs.subresource,
    requestKind: attrs.kind,
    requestResource: attrs.resource,
    requestSubResource: attrs.subresource,
    name: attrs.name,
    namespace: attrs.namespace,
    operation: attrs.operation,
    userInfo: { username: u.name, uid: u.uid ?? '', groups: u.groups, extra: u.extra ?? {} },
    dryRun: attrs.dryRun,
    options: attrs.options ?? null,
  };
}

interface Failure {
  message: string;
  reason?: string;
}

export class ValidatingAdmissionPolicyAdmission implements AdmissionChain {
  readonly policies: SharedInformer<'ValidatingAdmissionPolicy', ValidatingAdmissionPolicy>;
  readonly bindings: SharedInformer<'ValidatingAdmissionPolicyBinding', ValidatingAdmissionPolicyBinding>;

  constructor(private readonly store: Store) {
    this.policies = new SharedInformer(store, 'ValidatingAdmissionPolicy');
    this.bindings = new SharedInformer(store, 'ValidatingAdmissionPolicyBinding');
  }

  async start(): Promise<void> {
    this.policies.start();
    this.bindings.start();
    await Promise.all([this.policies.waitForSync(), this.bindings.waitForSync()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.policies.stop(), this.bindings.stop()]);
  }

  async admit(): Promise<void> {}

  async validate(attrs: AdmissionAttributes): Promise<void> {
    const bindings = this.bindings.indexer.list();
    if (!bindings.length) return;
    let shared: Record<string, unknown> | undefined;
    for (const binding of bindings) {
      const policy = this.policies.indexer.get(undefined, binding.spec?.policyName);
      if (!policy?.spec) continue;
      const mc = policy.spec.matchConstraints;
      if (!rulesMatch(mc?.resourceRules, attrs) || rulesMatch(mc?.excludeResourceRules, attrs)) continue;
      if (!(await selectorsMatch(this.store, attrs, mc?.namespaceSelector, mc?.objectSelector))) continue;
      const mr = binding.spec.matchResources;
      if (mr) {
        if (mr.resourceRules?.length && !rulesMatch(mr.resourceRules, attrs)) continue;
        if (rulesMatch(mr.excludeResourceRules, attrs)) continue;
        if (!(await selectorsMatch(this.store, attrs, mr.namespaceSelector, mr.objectSelector))) continue;
      }
      shared ??= await this.bindingsFor(attrs);
      const failures = await this.evaluate(policy, binding, shared);
      if (!failures.length) continue;
      this.act(attrs, policy, binding, failures);
    }
  }

  private async bindingsFor(attrs: AdmissionAttributes): Promise<Record<string, unknown>> {
    let namespaceObject: KubeObject | null = null;
    if (attrs.namespace) namespaceObject = await this.store.get('Namespace', '', attrs.namespace).catch(() => null);
    return {
      object: toCel(attrs.operation === 'DELETE' ? null : (attrs.object ?? null)),
      oldObject: toCel(attrs.operation === 'CREATE' ? null : (attrs.oldObject ?? null)),
      request: toCel(requestVariable(attrs)),
      namespaceObject: toCel(namespaceObject),
    };
  }

  private async params(policy: ValidatingAdmissionPolicy, binding: ValidatingAdmissionPolicyBinding, ns: string): Promise<unknown | Failure> {
    const kind = policy.spec.paramKind;
    const ref = binding.spec.paramRef;
    if (!kind?.kind || !ref?.name) return null;
    const info = lookupKind(kind.kind);
    if (!info) return { message: `failed to configure binding: paramKind kind \`${kind.kind}\` not known` };
    try {
      return toCel(await this.store.get(kind.kind, info.namespaced ? (ref.namespace ?? ns) : '', ref.name));
    } catch {
      if (ref.parameterNotFoundAction === 'Allow') return null;
      return { message: `failed to configure binding: no params found for policy binding with \`Deny\` parameterNotFoundAction` };
    }
  }

  private async evaluate(policy: ValidatingAdmissionPolicy, binding: ValidatingAdmissionPolicyBinding, shared: Record<string, unknown>): Promise<Failure[]> {
    const fail = policy.spec.failurePolicy ?? 'Fail';
    const errorOut = (message: string): Failure[] => (fail === 'Fail' ? [{ message }] : []);
    const params = await this.params(policy, binding, (shared.request as Map<string, unknown>).get('namespace') as string);
    if (params && typeof params === 'object' && 'message' in (params as object)) return errorOut((params as Failure).message);
    const vars = new Map<string, unknown>();
    const bindings: Record<string, unknown> = { ...shared, params, variables: vars };
    for (const v of policy.spec.variables ?? []) {
      const r = evaluate(v.expression, bindings);
      vars.set(v.name, 'error' in r ? null : r.value);
    }
    for (const c of policy.spec.matchConditions ?? []) {
      const r = evaluate(c.expression, bindings);
      if ('error' in r) return errorOut(`failed to evaluate matchCondition '${c.name}': ${r.error}`);
      if (r.value === false) return [];
    }
    const out: Failure[] = [];
    for (const v of policy.spec.validations ?? []) {
      const r = evaluate(v.expression, bindings);
      if ('error' in r) {
        if (fail === 'Fail') out.push({ message: `expression '${v.expression}' resulted in error: ${r.error}` });
        continue;
      }
      if (r.value === true) continue;
      if (r.value !== false) {
        if (fail === 'Fail') out.push({ message: `expression '${v.expression}' resulted in error: must evaluate to bool` });
        continue;
      }
      let message = v.message || `failed expression: ${v.expression.trim()}`;
      if (v.messageExpression) {
        const m = evaluate(v.messageExpression, bindings);
        if ('value' in m && typeof m.value === 'string' && m.value.trim() && !m.value.includes('\n')) message = m.value;
      }
      out.push({ message, reason: v.reason });
    }
    return out;
  }

  private act(attrs: AdmissionAttributes, policy: ValidatingAdmissionPolicy, binding: ValidatingAdmissionPolicyBinding, failures: Failure[]): void {
    const actions = binding.spec.validationActions ?? [];
    const who = `ValidatingAdmissionPolicy '${policy.metadata.name}' with binding '${binding.metadata.name}'`;
    if (actions.includes('Warn')) for (const f of failures) attrs.warnings?.push(`Validation failed for ${who}: ${f.message}`);
    if (actions.includes('Audit') && attrs.auditAnnotations) {
      const prev = JSON.parse(attrs.auditAnnotations[VALIDATION_FAILURE_ANNOTATION] ?? '[]');
      for (const f of failures) prev.push({ message: f.message, policy: policy.metadata.name, binding: binding.metadata.name, validationActions: actions });
      attrs.auditAnnotations[VALIDATION_FAILURE_ANNOTATION] = JSON.stringify(prev);
    }
    if (actions.includes('Deny')) {
      const f = failures[0];
      const message = `${who} denied request: ${f.message}`;
      const base = forbiddenError(attrs.resource.group, attrs.resource.resource, attrs.name, message);
      const reason = f.reason ?? 'Invalid';
      throw new StatusError(reason as never, REASON_CODES[reason] ?? 422, base.message, { ...base.details, causes: [{ message, field: '' } as never] });
    }
  }
}

