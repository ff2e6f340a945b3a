// The HTTP(S) requests of a registry pull: per-host CA and skip_verify, bounded redirects (blob downloads
// are often redirected to storage; credentials are never sent to another origin), and errors that say
// which URL failed and how.
import http from 'node:http';
import https from 'node:https';
import type { RegistryHost } from './registry-hosts.js';

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: http.IncomingMessage;
  url: URL;
}

const MAX_REDIRECTS = 5;
const TIMEOUT_MS = 30_000;

export async function registryRequest(url: URL, host: RegistryHost, headers: Record<string, string>, method = 'GET'): Promise<HttpResponse> {
  let current = url;
  let hdrs = { ...host.headers, ...headers };
  for (let hop = 0; ; hop++) {
    const res = await once(current, host, hdrs, method);
    if (res.status >= 300 && res.status < 400 && res.headers.location) {
      res.body.resume();
      if (hop >= MAX_REDIRECTS) throw new Error(`${method} ${url.href}: more than ${MAX_REDIRECTS} redirects`);
      const next = new URL(res.headers.location, current);
      if (next.origin !== current.origin) {
        hdrs = Object.fromEntries(Object.entries(hdrs).filter(([k]) => k.toLowerCase() !== 'authorization'));
      }
      current = next;
      continue;
    }
    return res;
  }
}

function once(url: URL, host: RegistryHost, headers: Record<string, string>, method: string): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const opts: https.RequestOptions = { method, headers, timeout: TIMEOUT_MS };
    if (url.protocol === 'https:') {
      if (host.ca) opts.ca = host.ca;
      if (host.skipVerify) opts.rejectUnauthorized = false;
    }
    const req = (url.protocol === 'https:' ? https : http).request(url, opts, (res) =>
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res, url }),
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url.href}: no response within ${TIMEOUT_MS / 1000}s`)));
    req.on('error', (err) => reject(new Error(`${method} ${url.href}: ${err.message}`)));
    req.end();
  });
}

export async function readBody(res: HttpResponse, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of res.body) {
    n += (chunk as Buffer).length;
    if (n > limit) {
      res.body.destroy();
      throw new Error(`${res.url.href}: response is larger than ${limit} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
