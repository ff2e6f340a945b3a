// The one error authentication answers with: 401 and the bare text kube-apiserver sends, whatever was wrong
// with the credential (the detail goes to the server's log, never to the client).
import { StatusError } from '@kemu/core';

export class UnauthorizedError extends StatusError {
  /** Why the credential was refused, for logs and tests; not sent to the client. */
  readonly detail: string;

  constructor(detail: string) {
    super('Unauthorized', 401, 'Unauthorized');
    this.detail = detail;
  }
}

/** The bearer token of a request's Authorization header, or undefined when there is none. */
export function bearerToken(headers: Record<string, string | string[] | undefined>): string | undefined {
  const h = headers.authorization;
  const v = Array.isArray(h) ? h[0] : h;
  if (!v) return undefined;
  const m = /^bearer\s+(.*)$/i.exec(v.trim());
  if (!m) return undefined;
  const token = m[1].trim();
  return token || undefined;
}
