// authorization.k8s.io/v1: SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview
// (`kubectl auth can-i`) and SelfSubjectRulesReview (`kubectl auth can-i --list`). None is stored.
import type { ObjectMeta, TypeMeta } from './api-meta.js';

export const AUTHORIZATION_GROUP = 'authorization.k8s.io';
export const AUTHORIZATION_API_VERSION = 'authorization.k8s.io/v1';

export interface ResourceAttributes {
  namespace?: string;
  verb?: string;
  group?: string;
  version?: string;
  resource?: string;
  subresource?: string;
  name?: string;
}

export interface NonResourceAttributes {
  path?: string;
  verb?: string;
}

export interface SubjectAccessReviewStatus {
  allowed: boolean;
  denied?: boolean;
  reason?: string;
  evaluationError?: string;
}

export interface SubjectAccessReviewSpec {
  resourceAttributes?: ResourceAttributes;
  nonResourceAttributes?: NonResourceAttributes;
  user?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
  uid?: string;
}

export interface SubjectAccessReview extends TypeMeta {
  apiVersion: typeof AUTHORIZATION_API_VERSION;
  kind: 'SubjectAccessReview';
  metadata?: ObjectMeta;
  spec: SubjectAccessReviewSpec;
  status?: SubjectAccessReviewStatus;
}

export interface LocalSubjectAccessReview extends TypeMeta {
  apiVersion: typeof AUTHORIZATION_API_VERSION;
  kind: 'LocalSubjectAccessReview';
  metadata?: ObjectMeta;
  spec: SubjectAccessReviewSpec;
  status?: SubjectAccessReviewStatus;
}

export interface SelfSubjectAccessReview extends TypeMeta {
  apiVersion: typeof AUTHORIZATION_API_VERSION;
  kind: 'SelfSubjectAccessReview';
  metadata?: ObjectMeta;
  spec: { resourceAttributes?: ResourceAttributes; nonResourceAttributes?: NonResourceAttributes };
  status?: SubjectAccessReviewStatus;
}

export interface ResourceRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
}

export interface NonResourceRule {
  verbs: string[];
  nonResourceURLs?: string[];
}

export interface SelfSubjectRulesReview extends TypeMeta {
  apiVersion: typeof AUTHORIZATION_API_VERSION;
  kind: 'SelfSubjectRulesReview';
  metadata?: ObjectMeta;
  spec: { namespace?: string };
  status?: {
    resourceRules: ResourceRule[];
    nonResourceRules: NonResourceRule[];
    incomplete: boolean;
    evaluationError?: string;
  };
}
