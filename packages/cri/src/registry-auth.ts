// Registry authentication as the distribution token spec has it: a 401 names its scheme in
// `WWW-Authenticate`; `Basic` is answered with the credentials, `Bearer` by fetching a token from the
// realm (with service and scope, credentials as Basic auth) and retrying with it. Credentials come from
// the CRI AuthConfig (username/password, the base64 `auth` pair, or an identity/registry token).
import type { cri } from '@kemu/proto';

export interface Challenge {
  scheme: string;
  params: Record<string, string>;
}

/** Parses `Bearer realm="...",service="...",scope="..."` (several challenges may be comma-joined). */
export function parseWwwAuthenticate(header: string): Challenge[] {
  const out: Challenge[] = [];
  const re = /\s*([A-Za-z][\w-]*)(?:\s+|$)|\s*([\w-]+)=("((?:[^"\\]|\\.)*)"|[^,\s]*)\s*,?/y;
  let cur: Challenge | undefined;
  let m: RegExpExecArray | null;
  let i = 0;
  while (i < header.length) {
    re.lastIndex = i;
    m = re.exec(header);
    if (!m || m.index !== i || re.lastIndex === i) break;
    i = re.lastIndex;
    if (m[1]) {
      cur = { scheme: m[1].toLowerCase(), params: {} };
      out.push(cur);
    } else if (cur && m[2]) {
      cur.params[m[2].toLowerCase()] = m[4] !== undefined ? m[4].replace(/\\(.)/g, '$1') : m[3];
    }
    while (header[i] === ',' || header[i] === ' ') i++;
  }
  return out;
}

export interface Credentials {
  username?: string;
  password?: string;
  /** An OAuth2 refresh token (identitytoken) or a ready bearer token (registrytoken). */
  identityToken?: string;
  registryToken?: string;
}

export function credentialsFromAuthConfig(auth: cri.AuthConfig | null | undefined): Credentials | undefined {
  if (!auth) return undefined;
  let { username, password } = auth;
  if (!username && auth.auth) {
    const decoded = Buffer.from(auth.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new Error('auth config "auth" must be base64 of username:password');
    username = decoded.slice(0, colon);
    password = decoded.slice(colon + 1);
  }
  if (!username && !auth.identityToken && !auth.registryToken) return undefined;
  return { username: username || undefined, password: password ?? '', identityToken: auth.identityToken || undefined, registryToken: auth.registryToken || undefined };
}

export function basicAuth(c: Credentials): string {
  return `Basic ${Buffer.from(`${c.username ?? ''}:${c.password ?? ''}`).toString('base64')}`;
}
