// core/v1 ServiceAccount, ResourceQuota and LimitRange: the per-namespace policy kinds.
import type { ObjectReference, ResourceList } from './api-core.js';
import type { KubeObject, ObjectMeta } from './api-meta.js';

export interface ServiceAccount extends KubeObject {
  apiVersion: 'v1';
  kind: 'ServiceAccount';
  metadata: ObjectMeta;
  secrets?: ObjectReference[];
  imagePullSecrets?: { name?: string }[];
  automountServiceAccountToken?: boolean;
}

export interface ResourceQuota extends KubeObject {
  apiVersion: 'v1';
  kind: 'ResourceQuota';
  metadata: ObjectMeta;
  spec?: { hard?: ResourceList; scopes?: string[]; scopeSelector?: Record<string, unknown> };
  status?: { hard?: ResourceList; used?: ResourceList };
}

export interface LimitRangeItem {
  type: 'Pod' | 'Container' | 'PersistentVolumeClaim' | string;
  max?: ResourceList;
  min?: ResourceList;
  default?: ResourceList;
  defaultRequest?: ResourceList;
  maxLimitRequestRatio?: ResourceList;
}

export interface LimitRange extends KubeObject {
  apiVersion: 'v1';
  kind: 'LimitRange';
  metadata: ObjectMeta;
  spec: { limits: LimitRangeItem[] };
}
