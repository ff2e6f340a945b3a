// Webhook admission: MutatingWebhookConfiguration webhooks run in the mutating phase, one after another,
// and their JSONPatch responses are applied to the object; ValidatingWebhookConfiguration webhooks run in
// the validating phase. A refusal is `admission webhook "<name>" denied the request: <message>` with the
// webhook's code; a webhook that cannot be called, times out or answers garbage fails the request
// (failurePolicy Fail, a 500) or is skipped (Ignore), as upstream.
import {
  deepCopy,
  jsonPatch,
  type KubeObject,
  type MutatingWebhookConfiguration,
  SharedInformer,
  StatusError,
  type Store,
  type ValidatingWebhook,
  type ValidatingWebhookConfiguration,
} from '@kemu/core';
import type { AdmissionAttributes, AdmissionChain } from '../auth-seams.js';
import { evaluate, toCel } from './cel.js';
import { rulesMatch, selectorsMatch } from './match-rules.js';
import { requestVariable } from './validating-admission-policy.js';
import { type AdmissionResponse, callWebhook, WebhookCallError } from './webhook-client.js';

function deniedError(name: string, status: AdmissionResponse['status']): StatusError {
  const deniedBy = `admission webhook "${name}" denied the request`;
  const code = !status?.code || status.code < 400 ? 400 : status.code;
  const message = status?.message ? `${deniedBy}: ${status.message}` : status?.reason ? `${deniedBy}: ${status.reason}` : `${deniedBy} without explanation`;
  return new StatusError((status?.reason ?? '') as never, code, message, status?.details as never);
}

function internalError(message: string): StatusError {
  return new StatusError('InternalError', 500, `Internal error occurred: ${message}`, { causes: [{ message, field: '' } as never] });
}

export class WebhookAdmission implements AdmissionChain {
  readonly validating: SharedInformer<'ValidatingWebhookConfiguration', ValidatingWebhookConfiguration>;
  readonly mutating: SharedInformer<'MutatingWebhookConfiguration', MutatingWebhookConfiguration>;

  constructor(private readonly store: Store) {
    this.validating = new SharedInformer(store, 'ValidatingWebhookConfiguration');
    this.mutating = new SharedInformer(store, 'MutatingWebhookConfiguration');
  }

  async start(): Promise<void> {
    this.validating.start();
    this.mutating.start();
    await Promise.all([this.validating.waitForSync(), this.mutating.waitForSync()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.validating.stop(), this.mutating.stop()]);
  }

  private hooks<T extends ValidatingWebhook>(configs: { metadata: { name?: string }; webhooks?: T[] }[]): T[] {
    return [...configs].sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : 1)).flatMap((c) => c.webhooks ?? []);
  }

  private async applies(w: ValidatingWebhook, attrs: AdmissionAttributes): Promise<boolean> {
    // Webhook configurations themselves are never sent to webhooks (a bad webhook could lock them in).
    if (attrs.resource.group === 'admissionregistration.k8s.io') return false;
    if (!rulesMatch(w.rules, attrs)) return false;
    if (!(await selectorsMatch(this.store, attrs, w.namespaceSelector, w.objectSelector))) return false;
    if (w.matchConditions?.length) {
      const bindings = { object: toCel(attrs.object ?? null), oldObject: toCel(attrs.oldObject ?? null), request: toCel(requestVariable(attrs)) };
      for (const c of w.matchConditions) {
        const r = evaluate(c.expression, bindings);
        if ('error' in r) throw new WebhookCallError(`failed to evaluate matchCondition '${c.name}': ${r.error}`);
        if (r.value === false) return false;
      }
    }
    return true;
  }

  private request(attrs: AdmissionAttributes): Record<string, unknown> {
    const r = requestVariable(attrs);
    return {
      ...r,
      userInfo: { username: attrs.userInfo.name, ...(attrs.userInfo.uid ? { uid: attrs.userInfo.uid } : {}), groups: attrs.userInfo.groups, ...(attrs.userInfo.extra ? { extra: attrs.userInfo.extra } : {}) },
      object: attrs.object ?? null,
      oldObject: attrs.oldObject ?? null,
    };
  }

  /** Calls one webhook; undefined when it was skipped under failurePolicy Ignore. */
  private async call(w: ValidatingWebhook, attrs: AdmissionAttributes): Promise<AdmissionResponse | undefined> {
    try {
      if (!(await this.applies(w, attrs))) return undefined;
      if (attrs.dryRun && w.sideEffects !== 'None' && w.sideEffects !== 'NoneOnDryRun') {
        throw new StatusError('BadRequest', 400, `admission webhook "${w.name}" does not support dry run`);
      }
      const res = await callWebhook({ clientConfig: w.clientConfig, timeoutSeconds: w.timeoutSeconds ?? 10, request: this.request(attrs) });
      for (const warning of res.warnings ?? []) attrs.warnings?.push(warning);
      return res;
    } catch (err) {
      if (!(err instanceof WebhookCallError)) throw err;
      if ((w.failurePolicy ?? 'Fail') === 'Ignore') return undefined;
      throw internalError(`failed calling webhook "${w.name}": ${err.message}`);
    }
  }

  async admit(attrs: AdmissionAttributes): Promise<void> {
    for (const w of this.hooks(this.mutating.indexer.list())) {
      const res = await this.call(w, attrs);
      if (!res) continue;
      if (!res.allowed) throw deniedError(w.name, res.status);
      if (!res.patch) continue;
      const fail = (why: string) => {
        if ((w.failurePolicy ?? 'Fail') === 'Ignore') return;
        throw internalError(`failed calling webhook "${w.name}": ${why}`);
      };
      if (res.patchType !== 'JSONPatch') {
        fail(`unsupported patch type "${res.patchType ?? ''}"`);
        continue;
      }
      if (!attrs.object) continue;
      let patched: KubeObject;
      try {
        patched = jsonPatch(attrs.object, JSON.parse(Buffer.from(res.patch, 'base64').toString('utf8'))) as KubeObject;
      } catch (err) {
        fail(`JSONPatch of the webhook could not be applied: ${(err as Error).message}`);
        continue;
      }
      // The object is mutated in place, so the server writes what the webhooks made of it.
      for (const k of Object.keys(attrs.object)) delete (attrs.object as Record<string, unknown>)[k];
      Object.assign(attrs.object, deepCopy(patched));
    }
  }

  async validate(attrs: AdmissionAttributes): Promise<void> {
    for (const w of this.hooks(this.validating.indexer.list())) {
      const res = await this.call(w, attrs);
      if (res && !res.allowed) throw deniedError(w.name, res.status);
    }
  }
}
