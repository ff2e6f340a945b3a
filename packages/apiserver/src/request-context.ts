// What every handler gets for one request: the store, the resolved request info and kind, the user the
// pipeline settled on, the query, and the server's wiring (extensions, admission, renderers).
import type { KindInfo, KubeObject, Store } from '@kemu/core';
import type { AdmissionChain, RequestInfo, UserInfo } from './auth-seams.js';
import type { Rendering } from './content-negotiation.js';
import type { IncomingRequest } from './request-body.js';
import type { OutgoingResponse } from './responses.js';
import type { ApiExtensions } from './server-extensions.js';

/**
 * Renderers other modules provide (meta.k8s.io Tables, the protobuf codec): each is optional, and a request
 * that needs a missing one gets upstream's 406/415.
 */
export interface Renderers {
  /** Objects (one, or a list's items) as a meta.k8s.io Table with the kind's columns. */
  table?(info: KindInfo, objects: KubeObject[], opts: { wide: boolean; includeObject: 'None' | 'Metadata' | 'Object'; listMeta?: Record<string, unknown>; version: 'v1' | 'v1beta1'; noHeaders?: boolean }): unknown;
  /** Encode an object as a Kubernetes protobuf envelope. */
  protobufEncode?(obj: unknown): Buffer;
  /** Decode a Kubernetes protobuf envelope for a kind. */
  protobufDecode?(body: Buffer): unknown;
  /** Whether a kind has a protobuf form (CRDs do not); without it protobuf is offered for every kind. */
  protobufSupports?(apiVersion: string, kind: string): boolean;
}

export interface RequestContext {
  store: Store;
  ext: ApiExtensions;
  admission: AdmissionChain;
  renderers: Renderers;
  req: IncomingRequest;
  res: OutgoingResponse;
  info: RequestInfo;
  kind: KindInfo;
  query: URLSearchParams;
  user: UserInfo;
  rendering: Rendering;
  /** Bytes a request body may have. */
  maxBodyBytes: number;
}
