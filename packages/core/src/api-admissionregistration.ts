// admissionregistration.k8s.io/v1: ValidatingAdmissionPolicy (+Binding) and the admission webhook
// configurations, as the API server's admission plugins read them.
import type { KubeObject, LabelSelector, ObjectMeta } from './api-meta.js';

export const ADMISSIONREGISTRATION_API_VERSION = 'admissionregistration.k8s.io/v1';

export type FailurePolicy = 'Fail' | 'Ignore';
export type AdmissionOperationName = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT' | '*';

export interface RuleWithOperations {
  operations?: AdmissionOperationName[];
  apiGroups?: string[];
  apiVersions?: string[];
  /** Plural resources, `resource/subresource`, `*`, `*\/*` or `*\/subresource`. */
  resources?: string[];
  scope?: 'Cluster' | 'Namespaced' | '*';
}

export interface NamedRuleWithOperations extends RuleWithOperations {
  resourceNames?: string[];
}

export interface MatchResources {
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  resourceRules?: NamedRuleWithOperations[];
  excludeResourceRules?: NamedRuleWithOperations[];
  matchPolicy?: 'Exact' | 'Equivalent';
}

export interface MatchCondition {
  name: string;
  expression: string;
}

export interface Validation {
  expression: string;
  message?: string;
  reason?: 'Unauthorized' | 'Forbidden' | 'Invalid' | 'RequestEntityTooLarge';
  messageExpression?: string;
}

export interface ValidatingAdmissionPolicy extends KubeObject {
  apiVersion: typeof ADMISSIONREGISTRATION_API_VERSION;
  kind: 'ValidatingAdmissionPolicy';
  metadata: ObjectMeta;
  spec: {
    paramKind?: { apiVersion?: string; kind?: string };
    matchConstraints?: MatchResources;
    validations?: Validation[];
    failurePolicy?: FailurePolicy;
    auditAnnotations?: { key: string; valueExpression: string }[];
    matchConditions?: MatchCondition[];
    variables?: { name: string; expression: string }[];
  };
  status?: { observedGeneration?: number; typeChecking?: unknown; conditions?: unknown[] };
}

export interface ValidatingAdmissionPolicyBinding extends KubeObject {
  apiVersion: typeof ADMISSIONREGISTRATION_API_VERSION;
  kind: 'ValidatingAdmissionPolicyBinding';
  metadata: ObjectMeta;
  spec: {
    policyName: string;
    paramRef?: { name?: string; namespace?: string; selector?: LabelSelector; parameterNotFoundAction?: 'Allow' | 'Deny' };
    matchResources?: MatchResources;
    validationActions: ('Deny' | 'Warn' | 'Audit')[];
  };
}

export interface WebhookClientConfig {
  url?: string;
  service?: { namespace: string; name: string; path?: string; port?: number };
  /** PEM CA bundle, base64-encoded as in the API. */
  caBundle?: string;
}

export interface ValidatingWebhook {
  name: string;
  clientConfig: WebhookClientConfig;
  rules?: RuleWithOperations[];
  failurePolicy?: FailurePolicy;
  matchPolicy?: 'Exact' | 'Equivalent';
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  sideEffects: 'None' | 'NoneOnDryRun' | 'Some' | 'Unknown';
  timeoutSeconds?: number;
  admissionReviewVersions: string[];
  matchConditions?: MatchCondition[];
}

export interface MutatingWebhook extends ValidatingWebhook {
  reinvocationPolicy?: 'Never' | 'IfNeeded';
}

export interface ValidatingWebhookConfiguration extends KubeObject {
  apiVersion: typeof ADMISSIONREGISTRATION_API_VERSION;
  kind: 'ValidatingWebhookConfiguration';
  metadata: ObjectMeta;
  webhooks?: ValidatingWebhook[];
}

export interface MutatingWebhookConfiguration extends KubeObject {
  apiVersion: typeof ADMISSIONREGISTRATION_API_VERSION;
  kind: 'MutatingWebhookConfiguration';
  metadata: ObjectMeta;
  webhooks?: MutatingWebhook[];
}
