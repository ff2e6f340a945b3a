// Schema of core.v1: ServiceAccount, ResourceQuota, LimitRange. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.core.v1',
  {
    ServiceAccount: type('An identity for processes in pods.', {
      metadata: f(1, `${META}ObjectMeta`),
      secrets: f(2, '[]ObjectReference', 'Secrets of the account (legacy token secrets).', { patchStrategy: 'merge', patchMergeKey: 'name' }),
      imagePullSecrets: f(3, '[]LocalObjectReference', 'Registry credentials added to pods using the account.'),
      automountServiceAccountToken: f(4, 'bool', 'Whether pods get a token mounted by default.', { pointer: true }),
    }),
    ResourceQuota: type('Limits on the total resources used in a namespace.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'ResourceQuotaSpec'),
      status: f(3, 'ResourceQuotaStatus'),
    }),
    ResourceQuotaSpec: type('Hard limits and the scopes they apply to.', {
      hard: f(1, 'map[string]quantity', 'Most of each resource the namespace may use.'),
      scopes: f(2, '[]string'),
      scopeSelector: f(3, 'ScopeSelector'),
    }),
    ScopeSelector: type('', {
      matchExpressions: f(1, '[]ScopedResourceSelectorRequirement'),
    }),
    ScopedResourceSelectorRequirement: type('', {
      scopeName: f(1, 'string', '', { required: true }),
      operator: f(2, 'string', '', { required: true }),
      values: f(3, '[]string'),
    }),
    ResourceQuotaStatus: type('Limits and current use.', {
      hard: f(1, 'map[string]quantity', 'Limits enforced.'),
      used: f(2, 'map[string]quantity', 'Current use.'),
    }),
    LimitRange: type('Default and bounding resource values for pods, containers and claims in a namespace.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'LimitRangeSpec'),
    }),
    LimitRangeSpec: type('The limits.', {
      limits: f(1, '[]LimitRangeItem', '', { required: true, listType: 'atomic' }),
    }),
    LimitRangeItem: type('Limits of one kind of object.', {
      type: f(1, 'string', 'Pod, Container or PersistentVolumeClaim.', { required: true }),
      max: f(2, 'map[string]quantity', 'Most of each resource.'),
      min: f(3, 'map[string]quantity', 'Least of each resource.'),
      default: f(4, 'map[string]quantity', 'Default limits.'),
      defaultRequest: f(5, 'map[string]quantity', 'Default requests.'),
      maxLimitRequestRatio: f(6, 'map[string]quantity'),
    }),
  },
  [
    { kind: 'ServiceAccount', apiVersion: 'v1', type: 'ServiceAccount' },
    { kind: 'ResourceQuota', apiVersion: 'v1', type: 'ResourceQuota' },
    { kind: 'LimitRange', apiVersion: 'v1', type: 'LimitRange' },
  ],
);
