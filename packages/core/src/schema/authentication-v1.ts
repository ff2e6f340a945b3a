// Schema of authentication.k8s.io/v1: TokenReview, TokenRequest (the serviceaccounts/token subresource)
// and SelfSubjectReview. Field names, protobuf numbers and types follow upstream's API (1.32). `extra`
// (a map of ExtraValue upstream) is JSON-only here.
import { f, META, schemaModule, type } from './dsl.js';

const atomic = { listType: 'atomic' as const };

export default schemaModule(
  'io.k8s.api.authentication.v1',
  {
    UserInfo: type('Who a request or token authenticates as.', {
      username: f(1, 'string', 'The user name.'),
      uid: f(2, 'string', 'A unique, stable identifier of the user.'),
      groups: f(3, '[]string', 'Groups the user is in.', atomic),
      extra: f(0, 'map[string][]string', 'More facts the authenticator provides.'),
    }),
    BoundObjectReference: type('The object a token is bound to.', {
      kind: f(1, 'string', 'Pod, Secret or Node.'),
      apiVersion: f(2, 'string', 'API version of the object.'),
      name: f(3, 'string', 'Name of the object.'),
      uid: f(4, 'string', 'UID of the object.'),
    }),
    TokenRequestSpec: type('What token is asked for.', {
      audiences: f(1, '[]string', 'Who the token is for; defaults to the API server.', { required: true, ...atomic }),
      boundObjectRef: f(3, 'BoundObjectReference', 'An object the token lives no longer than.'),
      expirationSeconds: f(4, 'int64', 'Requested lifetime.', { pointer: true }),
    }),
    TokenRequestStatus: type('The issued token.', {
      token: f(1, 'string', 'The bearer token.', { required: true }),
      expirationTimestamp: f(2, 'time', 'When the token expires.', { required: true }),
    }),
    TokenRequest: type('Asks for a token of a ServiceAccount.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'TokenRequestSpec', '', { required: true }),
      status: f(3, 'TokenRequestStatus'),
    }),
    TokenReviewSpec: type('The token to check.', {
      token: f(1, 'string', 'The bearer token.'),
      audiences: f(2, '[]string', 'Audiences the token must be valid for; defaults to the API server.', atomic),
    }),
    TokenReviewStatus: type('Who the token authenticates as.', {
      authenticated: f(1, 'bool', 'Whether the token is valid.'),
      user: f(2, 'UserInfo', 'The user the token names.'),
      audiences: f(4, '[]string', 'Audiences the token is valid for.', atomic),
      error: f(3, 'string', 'Why the token could not be checked.'),
    }),
    TokenReview: type('Checks a bearer token.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'TokenReviewSpec', '', { required: true }),
      status: f(3, 'TokenReviewStatus'),
    }),
    SelfSubjectReviewStatus: type('Who the requester is.', {
      userInfo: f(1, 'UserInfo', 'The requester as authenticated.'),
    }),
    SelfSubjectReview: type('Asks who the requester is (kubectl auth whoami).', {
      metadata: f(1, `${META}ObjectMeta`),
      status: f(2, 'SelfSubjectReviewStatus'),
    }),
  },
  [
    { kind: 'TokenReview', apiVersion: 'authentication.k8s.io/v1', type: 'TokenReview' },
    { kind: 'TokenRequest', apiVersion: 'authentication.k8s.io/v1', type: 'TokenRequest' },
    { kind: 'SelfSubjectReview', apiVersion: 'authentication.k8s.io/v1', type: 'SelfSubjectReview' },
  ],
);
