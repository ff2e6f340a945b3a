// Schema of authorization.k8s.io/v1: SubjectAccessReview, LocalSubjectAccessReview,
// SelfSubjectAccessReview and SelfSubjectRulesReview. Field names, protobuf numbers and types follow
// upstream's API (1.32); the alpha field/label selector attributes are left out, and `extra` is JSON-only.
import { f, META, schemaModule, type } from './dsl.js';

const atomic = { listType: 'atomic' as const };

export default schemaModule(
  'io.k8s.api.authorization.v1',
  {
    ResourceAttributes: type('A resource request to check.', {
      namespace: f(1, 'string', 'Namespace; "" means all namespaces (or a cluster-scoped resource).'),
      verb: f(2, 'string', 'API verb; * means all.'),
      group: f(3, 'string', 'API group; * means all.'),
      version: f(4, 'string', 'API version; * means all.'),
      resource: f(5, 'string', 'Resource; * means all.'),
      subresource: f(6, 'string', 'Subresource; "" means none.'),
      name: f(7, 'string', 'Object name; "" means all.'),
    }),
    NonResourceAttributes: type('A non-resource request to check.', {
      path: f(1, 'string', 'URL path.'),
      verb: f(2, 'string', 'HTTP verb, lower case.'),
    }),
    SubjectAccessReviewSpec: type('The request and who makes it.', {
      resourceAttributes: f(1, 'ResourceAttributes', 'A resource request.'),
      nonResourceAttributes: f(2, 'NonResourceAttributes', 'A non-resource request.'),
      user: f(3, 'string', 'The user to check for.'),
      groups: f(4, '[]string', 'The groups to check for.', atomic),
      extra: f(0, 'map[string][]string', 'Extra user facts.'),
      uid: f(6, 'string', 'UID of the user.'),
    }),
    SelfSubjectAccessReviewSpec: type('The request the requester would make.', {
      resourceAttributes: f(1, 'ResourceAttributes', 'A resource request.'),
      nonResourceAttributes: f(2, 'NonResourceAttributes', 'A non-resource request.'),
    }),
    SubjectAccessReviewStatus: type('Whether the request would be allowed.', {
      allowed: f(1, 'bool', 'True when allowed.', { required: true }),
      denied: f(4, 'bool', 'True when explicitly denied.'),
      reason: f(2, 'string', 'Why.'),
      evaluationError: f(3, 'string', 'An error met while deciding.'),
    }),
    SubjectAccessReview: type('May a user or group do something?', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'SubjectAccessReviewSpec', '', { required: true }),
      status: f(3, 'SubjectAccessReviewStatus'),
    }),
    LocalSubjectAccessReview: type('May a user or group do something in this namespace?', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'SubjectAccessReviewSpec', '', { required: true }),
      status: f(3, 'SubjectAccessReviewStatus'),
    }),
    SelfSubjectAccessReview: type('May the requester do something (kubectl auth can-i)?', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'SelfSubjectAccessReviewSpec', '', { required: true }),
      status: f(3, 'SubjectAccessReviewStatus'),
    }),
    SelfSubjectRulesReviewSpec: type('The namespace to list the rules for.', {
      namespace: f(1, 'string', 'Namespace.'),
    }),
    ResourceRule: type('Verbs allowed on resources.', {
      verbs: f(1, '[]string', 'Verbs.', { required: true, ...atomic }),
      apiGroups: f(2, '[]string', 'API groups.', atomic),
      resources: f(3, '[]string', 'Resources.', atomic),
      resourceNames: f(4, '[]string', 'Names.', atomic),
    }),
    NonResourceRule: type('Verbs allowed on URL paths.', {
      verbs: f(1, '[]string', 'Verbs.', { required: true, ...atomic }),
      nonResourceURLs: f(2, '[]string', 'URL paths.', atomic),
    }),
    SubjectRulesReviewStatus: type('What the requester may do.', {
      resourceRules: f(1, '[]ResourceRule', 'Rules on resources.', { required: true, ...atomic }),
      nonResourceRules: f(2, '[]NonResourceRule', 'Rules on URL paths.', { required: true, ...atomic }),
      incomplete: f(3, 'bool', 'True when the list may be incomplete.', { required: true }),
      evaluationError: f(4, 'string', 'An error met while listing.'),
    }),
    SelfSubjectRulesReview: type('Lists what the requester may do (kubectl auth can-i --list).', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'SelfSubjectRulesReviewSpec', '', { required: true }),
      status: f(3, 'SubjectRulesReviewStatus'),
    }),
  },
  [
    { kind: 'SubjectAccessReview', apiVersion: 'authorization.k8s.io/v1', type: 'SubjectAccessReview' },
    { kind: 'LocalSubjectAccessReview', apiVersion: 'authorization.k8s.io/v1', type: 'LocalSubjectAccessReview' },
    { kind: 'SelfSubjectAccessReview', apiVersion: 'authorization.k8s.io/v1', type: 'SelfSubjectAccessReview' },
    { kind: 'SelfSubjectRulesReview', apiVersion: 'authorization.k8s.io/v1', type: 'SelfSubjectRulesReview' },
  ],
);
