// authentication.k8s.io/v1: TokenReview, TokenRequest (the serviceaccounts/token subresource) and
// SelfSubjectReview (`kubectl auth whoami`). None is stored: each is a request answered in its status.
import type { ObjectMeta, TypeMeta } from './api-meta.js';

export const AUTHENTICATION_GROUP = 'authentication.k8s.io';
export const AUTHENTICATION_API_VERSION = 'authentication.k8s.io/v1';

/** Who made a request, as authentication establishes it. */
export interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface TokenReview extends TypeMeta {
  apiVersion: typeof AUTHENTICATION_API_VERSION;
  kind: 'TokenReview';
  metadata?: ObjectMeta;
  spec: { token?: string; audiences?: string[] };
  status?: { authenticated?: boolean; user?: UserInfo; audiences?: string[]; error?: string };
}

export interface BoundObjectReference {
  kind?: 'Pod' | 'Secret' | 'Node';
  apiVersion?: string;
  name?: string;
  uid?: string;
}

export interface TokenRequest extends TypeMeta {
  apiVersion: typeof AUTHENTICATION_API_VERSION;
  kind: 'TokenRequest';
  metadata?: ObjectMeta;
  spec: {
    audiences?: string[];
    expirationSeconds?: number;
    boundObjectRef?: BoundObjectReference;
  };
  status?: { token: string; expirationTimestamp: string };
}

export interface SelfSubjectReview extends TypeMeta {
  apiVersion: typeof AUTHENTICATION_API_VERSION;
  kind: 'SelfSubjectReview';
  metadata?: ObjectMeta;
  status?: { userInfo?: UserInfo };
}
