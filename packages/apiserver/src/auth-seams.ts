// The seams where authentication, audit, impersonation, authorization and admission plug into the request
// pipeline. The server calls them in kube-apiserver's order for every request:
//
//   authenticate -> audit (RequestReceived) -> impersonate -> authorize -> [body decoded] -> admission
//   (mutate, then validate) -> storage -> audit (ResponseComplete)
//
// The shapes follow upstream's interfaces (authenticator.Request, user.Info, authorizer.Attributes and
// Decision, admission.Attributes with MutationInterface/ValidationInterface, audit.Event) so real
// implementations (client certificates, tokens, RBAC, admission plugins) drop in without touching the server.
// The defaults here allow everything: a server built without options behaves as an unsecured local API.
import type { KubeObject } from '@kemu/core';

/** Who made a request (upstream `user.Info`). */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export const ANONYMOUS_USER = 'system:anonymous';
export const UNAUTHENTICATED_GROUP = 'system:unauthenticated';
export const AUTHENTICATED_GROUP = 'system:authenticated';

/** The user upstream assigns to a request that no authenticator claimed (when anonymous access is on). */
export function anonymousUser(): UserInfo {
  return { name: ANONYMOUS_USER, groups: [UNAUTHENTICATED_GROUP] };
}

/** What an authenticator sees of a request: the transport-level facts, not the body. */
export interface AuthenticationRequest {
  method: string;
  /** The raw request path with its query, as received. */
  url: string;
  /** Lower-case header names, as Node gives them. */
  headers: Record<string, string | string[] | undefined>;
  /** The peer's address. */
  remoteAddress?: string;
  /**
   * The client certificate chain the TLS layer verified against the cluster CA (leaf first, DER), or
   * undefined on the unix socket or when the client sent none. Verification already happened: an
   * authenticator only maps the subject to a user (CN = name, O = groups, as upstream's x509 authenticator).
   */
  peerCertificates?: Buffer[];
  /**
   * A client certificate chain the client sent that did NOT verify against the cluster CA (forged, expired,
   * another CA's). Upstream's x509 authenticator answers such a request 401 rather than treating it as
   * anonymous; an authenticator that checks chains itself reads it for that.
   */
  unverifiedPeerCertificates?: Buffer[];
  /** True when the request came over the local unix socket (file permissions are its only gate). */
  localSocket: boolean;
}

export interface AuthenticationResult {
  user: UserInfo;
  /** Audiences the credential was valid for (tokens), as upstream's `authenticator.Response`. */
  audiences?: string[];
}

/**
 * Upstream `authenticator.Request`. Resolve to a result when the request's credentials identify a user,
 * to null when this authenticator finds no credentials of its kind (the next one, or anonymous, decides),
 * and reject (with an Unauthorized StatusError) when credentials are present but invalid.
 */
export interface Authenticator {
  authenticate(req: AuthenticationRequest): Promise<AuthenticationResult | null>;
}

/** Upstream `RequestInfo`: what the URL says the request is about. */
export interface RequestInfo {
  isResourceRequest: boolean;
  /** The path without the query. */
  path: string;
  /**
   * For resource requests: get, list, watch, create, update, patch, delete, deletecollection (or connect
   * verbs' HTTP method lower-cased, as upstream: `create` for exec POST, `get` for logs). For non-resource
   * requests: the lower-cased HTTP method.
   */
  verb: string;
  apiPrefix: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

/** Upstream `authorizer.Attributes`. */
export interface AuthorizationAttributes extends RequestInfo {
  user: UserInfo;
}

export type AuthorizationDecision = 'allow' | 'deny' | 'no-opinion';

export interface AuthorizationResult {
  decision: AuthorizationDecision;
  /** Why, shown to the user in a 403 (upstream appends it to the Forbidden message). */
  reason?: string;
}

/** Upstream `authorizer.Authorizer`: anything but `allow` is a 403 Forbidden. */
export interface Authorizer {
  authorize(attrs: AuthorizationAttributes): Promise<AuthorizationResult>;
}

/**
 * Impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`, `Impersonate-Extra-*` headers):
 * given the authenticated user and the request, return the user the rest of the pipeline acts as. The
 * default implementation asks the authorizer for the `impersonate` verb on each requested identity, as
 * upstream's filter does.
 */
export interface Impersonator {
  impersonate(
    user: UserInfo,
    req: AuthenticationRequest,
    authorizer: Authorizer,
  ): Promise<{ user: UserInfo; impersonatedBy?: UserInfo }>;
}

/** Upstream `audit.Event`, reduced to what the pipeline knows; level and policy belong to the backend. */
export interface AuditEvent {
  auditID: string;
  stage: 'RequestReceived' | 'ResponseStarted' | 'ResponseComplete' | 'Panic';
  requestURI: string;
  verb: string;
  user: UserInfo;
  impersonatedUser?: UserInfo;
  sourceIPs: string[];
  userAgent?: string;
  objectRef?: {
    resource?: string;
    namespace?: string;
    name?: string;
    apiGroup?: string;
    apiVersion?: string;
    subresource?: string;
  };
  responseStatus?: { code: number; reason?: string; message?: string };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

/** Receives audit events; must not throw or block the request (upstream backends buffer). */
export interface AuditSink {
  record(event: AuditEvent): void;
}

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** Upstream `admission.Attributes`. */
export interface AdmissionAttributes {
  operation: AdmissionOperation;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subresource: string;
  namespace: string;
  name: string;
  /** The object to be written. Mutating admission may change it in place. Absent for DELETE and CONNECT. */
  object?: KubeObject;
  /** The stored object, for UPDATE and DELETE. */
  oldObject?: KubeObject;
  /** CreateOptions, UpdateOptions, PatchOptions or DeleteOptions as sent (or the connect options). */
  options?: Record<string, unknown>;
  dryRun: boolean;
  userInfo: UserInfo;
  /**
   * Warnings for the client; the server sends each as a `Warning: 299 - "<text>"` response header (how
   * PodSecurity's warn mode and deprecations reach kubectl). Plugins push to it when present.
   */
  warnings?: string[];
  /** Annotations for the request's audit event (e.g. `pod-security.kubernetes.io/audit-violations`). */
  auditAnnotations?: Record<string, string>;
}

/**
 * Mutating then validating admission, as upstream runs them: `admit` may change `attrs.object`; `validate`
 * must not. Reject with a StatusError (Forbidden, Invalid, ...) to fail the request; nothing is stored then.
 */
export interface AdmissionChain {
  admit(attrs: AdmissionAttributes): Promise<void>;
  validate(attrs: AdmissionAttributes): Promise<void>;
}

/**
 * An endpoint the auth modules serve: a create that stores nothing and answers with the request plus its
 * status (the access and token reviews, `kubectl auth can-i` / `whoami`), or a create on a subresource
 * (`serviceaccounts/<name>/token`, `kubectl create token`). The server lists each in discovery (verbs:
 * create), authorizes the request as any other (verb create on the resource/subresource) and answers 201
 * with what `create` returns; errors are StatusErrors.
 */
export interface AuthEndpoint {
  group: string;
  version: string;
  /** Plural resource, e.g. `selfsubjectaccessreviews`, or the parent (`serviceaccounts`) for a subresource. */
  resource: string;
  /** For subresources: its name (`token`); the parent resource is then served by the server as usual. */
  subresource?: string;
  kind: string;
  namespaced: boolean;
  create(req: { user: UserInfo; namespace: string; name: string; body: unknown; dryRun: boolean }): Promise<unknown>;
}

/** The seams a server is built with; any left out take the allow-all defaults below. */
export interface AuthSeams {
  /** Endpoints the auth modules add (reviews, TokenRequest). */
  endpoints?: AuthEndpoint[];
  authenticator?: Authenticator;
  /** Whether a request no authenticator claims runs as system:anonymous (true) or gets 401 (false). */
  anonymous?: boolean;
  audit?: AuditSink;
  impersonator?: Impersonator;
  authorizer?: Authorizer;
  admission?: AdmissionChain;
}

/** Claims every request as a cluster admin (system:masters), as an unsecured local server does. */
export const allowAllAuthenticator: Authenticator = {
  async authenticate() {
    return { user: { name: 'kemu-admin', groups: ['system:masters', AUTHENTICATED_GROUP] } };
  },
};

export const allowAllAuthorizer: Authorizer = {
  async authorize() {
    return { decision: 'allow', reason: '' };
  },
};

export const allowAllAdmission: AdmissionChain = {
  async admit() {},
  async validate() {},
};

export const discardAudit: AuditSink = { record() {} };

/** Runs admission chains one after another: every mutation first, then every validation. */
export function admissionChain(...chains: AdmissionChain[]): AdmissionChain {
  return {
    async admit(attrs) {
      for (const c of chains) await c.admit(attrs);
    },
    async validate(attrs) {
      for (const c of chains) await c.validate(attrs);
    },
  };
}

/** Tries authenticators in order; the first that claims the request wins (upstream's union). */
export function unionAuthenticator(...authenticators: Authenticator[]): Authenticator {
  return {
    async authenticate(req) {
      for (const a of authenticators) {
        const r = await a.authenticate(req);
        if (r) return r;
      }
      return null;
    },
  };
}

/** Asks authorizers in order; the first allow or deny decides, no-opinion passes on (upstream's union). */
export function unionAuthorizer(...authorizers: Authorizer[]): Authorizer {
  return {
    async authorize(attrs) {
      const reasons: string[] = [];
      for (const a of authorizers) {
        const r = await a.authorize(attrs);
        if (r.decision !== 'no-opinion') return r;
        if (r.reason) reasons.push(r.reason);
      }
      return { decision: 'no-opinion', reason: reasons.join('\n') };
    },
  };
}
