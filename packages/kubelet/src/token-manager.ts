// The kubelet's service account token manager: a projected token is requested once (TokenRequest bound to
// the pod) and reused until 80% of its lifetime or 24 hours have passed, so the periodic volume resync does
// not mint a token every time; the pod's tokens are forgotten when it goes.
import type { TokenSource } from './volume-sources.js';

const MAX_TOKEN_AGE_MS = 24 * 60 * 60 * 1000;

interface Cached {
  token: string;
  fetchedAt: number;
  ttlMs: number;
}

export class TokenManager {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly source: TokenSource,
    private readonly now: () => number = Date.now,
  ) {}

  /** A TokenSource answering from the cache while a token is fresh. */
  readonly get: TokenSource = async (pod, audience, expirationSeconds) => {
    const key = `${pod.metadata.uid ?? ''}/${audience ?? ''}/${expirationSeconds}`;
    const c = this.cache.get(key);
    const now = this.now();
    if (c && now < c.fetchedAt + 0.8 * c.ttlMs && now - c.fetchedAt < MAX_TOKEN_AGE_MS) return c.token;
    const token = await this.source(pod, audience, expirationSeconds);
    if (token !== undefined) this.cache.set(key, { token, fetchedAt: now, ttlMs: expirationSeconds * 1000 });
    return token;
  };

  forgetPod(uid: string): void {
    for (const k of this.cache.keys()) if (k.startsWith(`${uid}/`)) this.cache.delete(k);
  }
}
