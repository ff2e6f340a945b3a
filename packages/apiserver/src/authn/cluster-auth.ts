// A cluster's whole auth stack, built from its CA and service-account keys over its store: client
// certificates, static tokens and ServiceAccount tokens; RBAC with the bootstrap policy and aggregation;
// impersonation; the admission plugins; and the review and TokenRequest endpoints. `seams` is what the
// API server takes. `mode: 'none'` (kemu up --auth=none) gives the allow-all seams instead.
import { InformerFactory, type KubeObject, type SharedInformer, type Store, StatusError } from '@kemu/core';
import { admissionChain, type AdmissionChain, type AuthEndpoint, type AuthSeams, unionAuthenticator, type UserInfo } from '../auth-seams.js';
import { InformerAdmissionLookups } from '../admission/admission-lookups.js';
import { WebhookAdmission } from '../admission/admission-webhooks.js';
import { DefaultStorageClassAdmission } from '../admission/default-storage-class.js';
import { DefaultTolerationSecondsAdmission } from '../admission/default-toleration-seconds.js';
import { LimitRangerAdmission } from '../admission/limit-ranger.js';
import { NamespaceLifecycleAdmission } from '../admission/namespace-lifecycle.js';
import { NodeRestrictionAdmission } from '../admission/node-restriction.js';
import { PodSecurityAdmission, type PodSecurityOptions } from '../admission/pod-security.js';
import { ensureSystemPriorityClasses, PriorityAdmission } from '../admission/priority.js';
import { ResourceQuotaAdmission, ResourceQuotaStatusController } from '../admission/resource-quota.js';
import { ServiceAccountAdmission } from '../admission/service-account.js';
import { ValidatingAdmissionPolicyAdmission } from '../admission/validating-admission-policy.js';
import { localSubjectAccessReview, selfSubjectAccessReview, selfSubjectRulesReview, subjectAccessReview } from '../authz/access-reviews.js';
import { authorizingStore } from '../authz/authorizing-store.js';
import { bootstrapControllerRoleBindings, ensureBootstrapPolicy } from '../authz/bootstrap-policy.js';
import { KUBE_CONTROLLER_MANAGER } from '../authz/component-identities.js';
import { ClusterRoleAggregationController } from '../authz/cluster-role-aggregation.js';
import { DecisionCache } from '../authz/decision-cache.js';
import { NodeAuthorizer, nodeThen } from '../authz/node-authorizer.js';
import { NodeGraph } from '../authz/node-graph.js';
import { RBACEscalationCheck } from '../authz/escalation.js';
import { RBACAuthorizer } from '../authz/rbac-authorizer.js';
import { InformerRBACSource } from '../authz/rbac-source.js';
import { AuditLogSink } from './audit-log.js';
import { loadAuditPolicy } from './audit-policy.js';
import { BearerTokenAuthenticator, type TokenAuthenticator } from './bearer-token.js';
import { HeaderImpersonator } from './impersonation.js';
import { selfSubjectReview, tokenReview } from './reviews.js';
import { ServiceAccountControllers } from './service-account-controllers.js';
import { type ServiceAccountKeys, ServiceAccountTokens } from './service-account-token.js';
import { StaticTokenAuthenticator } from './token-file.js';
import { createToken } from './token-request.js';
import { X509Authenticator } from './x509.js';

export interface ClusterAuthOptions {
  store: Store;
  /** The cluster CA's certificate (client certificates must chain to it). */
  caCertPem: string;
  serviceAccountKeys: ServiceAccountKeys;
  /** A static token file (`token,user,uid,"groups"` lines), as --token-auth-file. */
  tokenFile?: string;
  /** Requests without credentials run as system:anonymous (upstream's default) rather than 401. */
  anonymous?: boolean;
  issuer?: string;
  apiAudiences?: string[];
  /** Cap on TokenRequest lifetimes, in seconds. */
  maxTokenExpirationSeconds?: number;
  podSecurity?: PodSecurityOptions;
  /** Built-in admission plugins to leave out, by upstream name (e.g. `ServiceAccount`). */
  disableAdmissionPlugins?: AdmissionPluginName[];
  /** Admission plugins run after the built-in mutating and validating ones, before RBAC escalation and quota. */
  extraAdmission?: AdmissionChain[];
  onError?(err: unknown): void;
  /** An audit log: audit.k8s.io/v1 Events as JSON lines at `path`, kept as the policy file says. */
  audit?: { path: string; policyFile: string };
  /**
   * Keep ResourceQuota status with the API server's own controller (default). Off where kube-controller-manager's
   * resourcequota controller runs beside it (`kemu up`), so that one controller keeps it, as upstream.
   */
  quotaStatusController?: boolean;
  /** The clock tokens are issued and checked against (tests move it to see tokens expire). */
  now?: () => Date;
}

/** The users of the controllers' ServiceAccounts, whose informers run as the controller manager. */
const CONTROLLER_USERS = new Set(bootstrapControllerRoleBindings().flatMap((b) => (b.subjects ?? []).map((s) => `system:serviceaccount:${s.namespace}:${s.name}`)));

/** The built-in plugins, in kube-apiserver's recommended order. */
export const ADMISSION_PLUGINS = [
  'NamespaceLifecycle',
  'LimitRanger',
  'ServiceAccount',
  'NodeRestriction',
  'PodSecurity',
  'Priority',
  'DefaultTolerationSeconds',
  'DefaultStorageClass',
  'MutatingAdmissionWebhook',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionWebhook',
  'ResourceQuota',
] as const;
export type AdmissionPluginName = (typeof ADMISSION_PLUGINS)[number];

export interface ClusterAuth {
  seams: AuthSeams;
  rbac: RBACAuthorizer;
  tokens: ServiceAccountTokens;
  /**
   * A token of the pod's ServiceAccount bound to the pod, as kubelet asks TokenRequest for one to project
   * into the pod's serviceAccountToken volume (audience: the API server's unless given).
   */
  podToken(pod: KubeObject, audience: string | undefined, expirationSeconds: number): Promise<string>;
  /**
   * The store as an in-process component running as `user` sees it through the API: every call authorized
   * (decisions cached until the RBAC policy changes), every write through the admission chain, and a
   * controller's lists and watches made as system:kube-controller-manager (its informers are the manager's).
   */
  storeFor(user: UserInfo): Store;
  stop(): Promise<void>;
}

/** Starts the RBAC caches and the aggregation controller, creates the bootstrap policy, and returns the seams. */
export async function startClusterAuth(opts: ClusterAuthOptions): Promise<ClusterAuth> {
  const { store } = opts;
  // The audit policy first: a bad file stops the start before anything runs, as upstream refuses to start.
  const audit = opts.audit ? new AuditLogSink(opts.audit.path, loadAuditPolicy(opts.audit.policyFile), opts.onError) : undefined;
  await ensureBootstrapPolicy(store);
  const source = new InformerRBACSource(store);
  await source.start();
  const aggregation = new ClusterRoleAggregationController(store, source.clusterRolesInformer);
  await aggregation.start(false);
  const rbac = new RBACAuthorizer(source);
  const decisions = new DecisionCache(rbac, source);
  // One informer per kind for the parts below that watch the same kinds (Pods: the Node authorizer's graph
  // and the quota status controller), as kube-apiserver's share one informer factory.
  const informers = new InformerFactory(store, { onError: opts.onError });
  // --authorization-mode=Node,RBAC: kubelets read what their pods reference, through the Node authorizer's graph.
  const graph = new NodeGraph(store, { informers, onError: opts.onError });
  const authorizer = nodeThen(new NodeAuthorizer(graph), decisions);
  const tokens = new ServiceAccountTokens({ keys: opts.serviceAccountKeys, store, issuer: opts.issuer, apiAudiences: opts.apiAudiences, now: opts.now });
  const tokenAuthenticators: TokenAuthenticator[] = [];
  if (opts.tokenFile) tokenAuthenticators.push(StaticTokenAuthenticator.fromFile(opts.tokenFile));
  tokenAuthenticators.push(tokens);

  const off = new Set(opts.disableAdmissionPlugins ?? []);
  const on = (n: AdmissionPluginName) => !off.has(n);
  const serviceAccounts = new ServiceAccountControllers(store, opts.caCertPem, opts.onError);
  await serviceAccounts.start();
  const quotaStatus = on('ResourceQuota') && opts.quotaStatusController !== false ? new ResourceQuotaStatusController(store, undefined, opts.onError, informers) : undefined;
  // Admission reads quotas from an informer either way (the status controller's, or the shared factory's).
  const quotas = quotaStatus?.quotaInformer ?? (on('ResourceQuota') ? (informers.informer('ResourceQuota') as unknown as SharedInformer) : undefined);
  informers.start();
  await graph.start();
  await quotaStatus?.start();
  if (on('Priority')) await ensureSystemPriorityClasses(store);
  const vap = on('ValidatingAdmissionPolicy') ? new ValidatingAdmissionPolicyAdmission(store) : undefined;
  await vap?.start();
  const webhooks = on('MutatingAdmissionWebhook') || on('ValidatingAdmissionWebhook') ? new WebhookAdmission(store) : undefined;
  await webhooks?.start();
  // The plugins read informer caches, as kube-apiserver's read their listers.
  const nodeRestriction = new NodeRestrictionAdmission(store);
  const lookups = new InformerAdmissionLookups(store);
  await lookups.start();
  const plugins: Record<AdmissionPluginName, () => AdmissionChain> = {
    NamespaceLifecycle: () => new NamespaceLifecycleAdmission(store, lookups),
    LimitRanger: () => new LimitRangerAdmission(store, lookups),
    ServiceAccount: () => new ServiceAccountAdmission(store, lookups),
    NodeRestriction: () => nodeRestriction,
    PodSecurity: () => new PodSecurityAdmission(store, opts.podSecurity, lookups),
    Priority: () => new PriorityAdmission(store, lookups),
    DefaultTolerationSeconds: () => new DefaultTolerationSecondsAdmission(),
    DefaultStorageClass: () => new DefaultStorageClassAdmission(store, lookups),
    ValidatingAdmissionPolicy: () => vap!,
    MutatingAdmissionWebhook: () => ({ admit: (a) => webhooks!.admit(a), validate: async () => {} }),
    ValidatingAdmissionWebhook: () => ({ admit: async () => {}, validate: (a) => webhooks!.validate(a) }),
    ResourceQuota: () => new ResourceQuotaAdmission(store, quotas),
  };
  const builtins = ADMISSION_PLUGINS.filter((n) => n !== 'ResourceQuota' && on(n)).map((n) => plugins[n]());
  const admission = admissionChain(
    ...builtins,
    ...(opts.extraAdmission ?? []),
    new RBACEscalationCheck(rbac),
    ...(on('ResourceQuota') ? [plugins.ResourceQuota()] : []),
  );

  const endpoint = (group: string, resource: string, kind: string, namespaced: boolean, create: AuthEndpoint['create'], subresource?: string): AuthEndpoint => ({
    group,
    version: 'v1',
    resource,
    kind,
    namespaced,
    create,
    ...(subresource ? { subresource } : {}),
  });
  const AZ = 'authorization.k8s.io';
  const AN = 'authentication.k8s.io';
  const endpoints: AuthEndpoint[] = [
    endpoint(AZ, 'selfsubjectaccessreviews', 'SelfSubjectAccessReview', false, ({ user, body }) => selfSubjectAccessReview(authorizer, user, body as never)),
    endpoint(AZ, 'subjectaccessreviews', 'SubjectAccessReview', false, ({ body }) => subjectAccessReview(authorizer, body as never)),
    endpoint(AZ, 'localsubjectaccessreviews', 'LocalSubjectAccessReview', true, ({ namespace, body }) => localSubjectAccessReview(authorizer, namespace, body as never)),
    endpoint(AZ, 'selfsubjectrulesreviews', 'SelfSubjectRulesReview', false, async ({ user, body }) => selfSubjectRulesReview(rbac, user, body as never)),
    endpoint(AN, 'selfsubjectreviews', 'SelfSubjectReview', false, async ({ user }) => selfSubjectReview(user)),
    endpoint(AN, 'tokenreviews', 'TokenReview', false, ({ body }) => tokenReview(tokenAuthenticators, tokens.apiAudiences, body as never)),
    endpoint(
      '',
      'serviceaccounts',
      'TokenRequest',
      true,
      ({ namespace, name, body }) => {
        if (!name) throw new StatusError('MethodNotAllowed', 405, 'the server does not allow this method on the requested resource');
        return createToken({ store, tokens, namespace, name, body, maxExpirationSeconds: opts.maxTokenExpirationSeconds });
      },
      'token',
    ),
  ];

  return {
    seams: {
      endpoints,
      authenticator: unionAuthenticator(new X509Authenticator(opts.caCertPem), new BearerTokenAuthenticator(tokenAuthenticators)),
      anonymous: opts.anonymous ?? true,
      impersonator: new HeaderImpersonator(),
      ...(audit ? { audit } : {}),
      authorizer,
      admission,
    },
    rbac,
    tokens,
    async podToken(pod, audience, expirationSeconds) {
      const ns = pod.metadata.namespace ?? 'default';
      const tr = await createToken({
        store,
        tokens,
        namespace: ns,
        name: pod.spec?.serviceAccountName || 'default',
        body: { spec: { ...(audience ? { audiences: [audience] } : {}), expirationSeconds, boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: pod.metadata.name, uid: pod.metadata.uid } } },
        maxExpirationSeconds: opts.maxTokenExpirationSeconds,
      });
      return tr.status!.token;
    },
    storeFor(user) {
      return authorizingStore(store, user, authorizer, {
        admission,
        ...(CONTROLLER_USERS.has(user.name) ? { listAs: KUBE_CONTROLLER_MANAGER } : {}),
      });
    },
    async stop() {
      await webhooks?.stop();
      await vap?.stop();
      await lookups.stop();
      await quotaStatus?.stop();
      await serviceAccounts.stop();
      await aggregation.stop(false);
      await source.stop();
      await graph.stop();
      await informers.stop();
      audit?.close();
    },
  };
}

/** The endpoints startClusterAuth serves, by what a server routes on (resource, subresource). */
const ENDPOINT_SHAPES: Omit<AuthEndpoint, 'create'>[] = [
  { group: 'authorization.k8s.io', version: 'v1', resource: 'selfsubjectaccessreviews', kind: 'SelfSubjectAccessReview', namespaced: false },
  { group: 'authorization.k8s.io', version: 'v1', resource: 'subjectaccessreviews', kind: 'SubjectAccessReview', namespaced: false },
  { group: 'authorization.k8s.io', version: 'v1', resource: 'localsubjectaccessreviews', kind: 'LocalSubjectAccessReview', namespaced: true },
  { group: 'authorization.k8s.io', version: 'v1', resource: 'selfsubjectrulesreviews', kind: 'SelfSubjectRulesReview', namespaced: false },
  { group: 'authentication.k8s.io', version: 'v1', resource: 'selfsubjectreviews', kind: 'SelfSubjectReview', namespaced: false },
  { group: 'authentication.k8s.io', version: 'v1', resource: 'tokenreviews', kind: 'TokenReview', namespaced: false },
  { group: '', version: 'v1', resource: 'serviceaccounts', subresource: 'token', kind: 'TokenRequest', namespaced: true },
];

/**
 * Seams for a server that must listen before its store (and so its auth stack) exists, as a composed
 * cluster's does: every call waits until `resolve` hands over the started ClusterAuth. Anonymous requests
 * are allowed (upstream's default) and answered by RBAC like any other.
 */
export function deferredClusterAuth(): { seams: AuthSeams; resolve(auth: ClusterAuth): void; auth(): Promise<ClusterAuth> } {
  let resolve!: (a: ClusterAuth) => void;
  let current: ClusterAuth | undefined;
  const ready = new Promise<ClusterAuth>((r) => (resolve = (a) => r((current = a))));
  const s = async () => (await ready).seams;
  // Until the stack is handed over, the cluster's own local-socket admin (system:masters, which RBAC lets do
  // anything) passes without waiting: node processes register through it while the cluster is starting.
  const early = (groups: string[]) => !current && groups.includes('system:masters');
  const endpoints: AuthEndpoint[] = ENDPOINT_SHAPES.map((shape) => ({
    ...shape,
    async create(req) {
      const e = (await s()).endpoints!.find((x) => x.resource === shape.resource && x.subresource === shape.subresource && x.group === shape.group)!;
      return e.create(req);
    },
  }));
  return {
    resolve,
    auth: () => ready,
    seams: {
      endpoints,
      anonymous: true,
      authenticator: {
        authenticate: async (req) => (!current && req.localSocket ? null : (await s()).authenticator!.authenticate(req)),
      },
      impersonator: {
        impersonate: async (user, req, authorizer) =>
          early(user.groups) && !Object.keys(req.headers).some((h) => h.startsWith('impersonate-')) ? { user } : (await s()).impersonator!.impersonate(user, req, authorizer),
      },
      // Events before the hand-over (the cluster's own start-up through its local socket) are not kept.
      audit: { record: (ev) => current?.seams.audit?.record(ev) },
      authorizer: {
        authorize: async (attrs) => (early(attrs.user.groups) ? { decision: 'allow', reason: '' } : (await s()).authorizer!.authorize(attrs)),
      },
      admission: {
        admit: async (attrs) => (early(attrs.userInfo.groups) ? undefined : (await s()).admission!.admit(attrs)),
        validate: async (attrs) => (early(attrs.userInfo.groups) ? undefined : (await s()).admission!.validate(attrs)),
      },
    },
  };
}
