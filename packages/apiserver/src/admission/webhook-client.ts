// Calling one admission webhook as kube-apiserver does: an AdmissionReview v1 POSTed over HTTPS (the
// configuration's caBundle, else the system roots) to `url?timeout=<n>s`, bounded by timeoutSeconds, and
// the answer checked (AdmissionReview v1, the same uid). Every failure comes back as a WebhookCallError
// whose text matches upstream's `failed to call webhook: ...`, for the caller's failurePolicy.
import { randomUUID } from 'node:crypto';
import https from 'node:https';
import type { WebhookClientConfig } from '@kemu/core';

const MAX_RESPONSE_BYTES = 3 * 1024 * 1024;

export class WebhookCallError extends Error {}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code?: number; message?: string; reason?: string; status?: string; details?: unknown };
  patch?: string;
  patchType?: string;
  warnings?: string[];
  auditAnnotations?: Record<string, string>;
}

export interface WebhookCall {
  clientConfig: WebhookClientConfig;
  timeoutSeconds: number;
  /** The request part of the AdmissionReview; its uid is set here. */
  request: Record<string, unknown>;
}

/** POSTs the review and returns the webhook's response, or throws WebhookCallError. */
export async function callWebhook(call: WebhookCall): Promise<AdmissionResponse> {
  const cc = call.clientConfig;
  if (!cc.url) {
    throw new WebhookCallError(`failed to call webhook: service references are not reachable from this API server (service ${cc.service?.namespace}/${cc.service?.name}); use clientConfig.url`);
  }
  const uid = randomUUID();
  const url = new URL(cc.url);
  url.searchParams.set('timeout', `${call.timeoutSeconds}s`);
  const body = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid, ...call.request } });
  const ca = cc.caBundle ? Buffer.from(cc.caBundle, 'base64').toString('utf8') : undefined;
  const post = `Post "${url.toString()}"`;
  const text = await new Promise<string>((resolve, reject) => {
    const req = https.request(
      url,
      { method: 'POST', ca, headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_RESPONSE_BYTES) {
            req.destroy(new WebhookCallError(`failed to call webhook: ${post}: response body larger than ${MAX_RESPONSE_BYTES} bytes`));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => {
          const t = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) >= 300) {
            reject(new WebhookCallError(`failed to call webhook: the server responded with the status code ${res.statusCode} but did not return more information`));
          } else resolve(t);
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(call.timeoutSeconds * 1000, () => req.destroy(new WebhookCallError(`failed to call webhook: ${post}: context deadline exceeded`)));
    req.on('error', (err) => reject(err instanceof WebhookCallError ? err : new WebhookCallError(`failed to call webhook: ${post}: ${err.message}`)));
    req.end(body);
  });
  let review: { apiVersion?: string; kind?: string; response?: AdmissionResponse };
  try {
    review = JSON.parse(text);
  } catch (err) {
    throw new WebhookCallError(`received invalid webhook response: ${(err as Error).message}`);
  }
  if (!review || typeof review !== 'object' || review.kind !== 'AdmissionReview' || review.apiVersion !== 'admission.k8s.io/v1') {
    throw new WebhookCallError(`received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got ${review?.apiVersion ?? ''}, Kind=${review?.kind ?? ''}`);
  }
  const r = review.response;
  if (!r || typeof r !== 'object') throw new WebhookCallError('received invalid webhook response: webhook response was absent');
  if (r.uid !== uid) throw new WebhookCallError(`received invalid webhook response: expected response.uid="${uid}", got "${r.uid ?? ''}"`);
  if (typeof r.allowed !== 'boolean') throw new WebhookCallError('received invalid webhook response: response.allowed must be a boolean');
  return r;
}
