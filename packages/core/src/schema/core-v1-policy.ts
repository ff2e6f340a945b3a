// Schema of core.v1: ServiceAccount, ResourceQuota, LimitRange. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.core.v1',
  {
    ServiceAccount: type('', {
      metadata: f(1, `${META}ObjectMeta`),
      secrets: f(2, '[]ObjectReference', '', { patchStrategy: 'merge', patchMergeKey: 'name' }),
      imagePullSecrets: f(3, '[]LocalObjectReference'),
      automountServiceAccountToken: f(4, 'bool', '', { pointer: true }),
    }),
    ResourceQuota: type('', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'ResourceQuotaSpec'),
      status: f(3, 'ResourceQuotaStatus'),
    }),
    ResourceQuotaSpec: type('', {
      hard: f(1, 'map[string]quantity'),
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
    ResourceQuotaStatus: type('', {
      hard: f(1, 'map[string]quantity'),
      used: f(2, 'map[string]quantity'),
    }),
    LimitRange: type('', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'LimitRangeSpec'),
    }),
    LimitRangeSpec: type('', {
      limits: f(1, '[]LimitRangeItem', '', { required: true, listType: 'atomic' }),
    }),
    LimitRangeItem: type('', {
      type: f(1, 'string', '', { required: true }),
      max: f(2, 'map[string]quantity'),
      min: f(3, 'map[string]quantity'),
      default: f(4, 'map[string]quantity'),
      defaultRequest: f(5, 'map[string]quantity'),
      maxLimitRequestRatio: f(6, 'map[string]quantity'),
    }),
  },
  [
    { kind: 'ServiceAccount', apiVersion: 'v1', type: 'ServiceAccount' },
    { kind: 'ResourceQuota', apiVersion: 'v1', type: 'ResourceQuota' },
    { kind: 'LimitRange', apiVersion: 'v1', type: 'LimitRange' },
  ],
);
