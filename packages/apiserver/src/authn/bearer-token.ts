// Bearer-token authentication: the token of `Authorization: Bearer` is offered to each token authenticator
// (static file, ServiceAccount JWTs) in turn; a token none of them accepts is a 401, never anonymous, as
// kube-apiserver does.
import type { AuthenticationRequest, AuthenticationResult, Authenticator, UserInfo } from '../auth-seams.js';
import { bearerToken, UnauthorizedError } from './unauthorized.js';

export interface TokenAuthenticator {
  /** The user a token names (and the audiences it was valid for), or undefined when it is not this kind's. */
  authenticateToken(token: string, audiences?: string[]): Promise<{ user: UserInfo; audiences?: string[] } | undefined> | { user: UserInfo } | undefined;
}

/** Authenticates a token with the first authenticator that knows it; undefined when none does. */
export async function authenticateToken(
  authenticators: readonly TokenAuthenticator[],
  token: string,
  audiences?: string[],
): Promise<AuthenticationResult | undefined> {
  for (const a of authenticators) {
    const r = await a.authenticateToken(token, audiences);
    if (r) return r;
  }
  return undefined;
}

export class BearerTokenAuthenticator implements Authenticator {
  constructor(private readonly authenticators: readonly TokenAuthenticator[]) {}

  async authenticate(req: AuthenticationRequest): Promise<AuthenticationResult | null> {
    const token = bearerToken(req.headers);
    if (token === undefined) return null;
    const r = await authenticateToken(this.authenticators, token);
    if (!r) throw new UnauthorizedError('invalid bearer token');
    return r;
  }
}
