// Create, update, patch, delete and deletecollection, each through admission (mutating, then validating)
// before the store, with kube-apiserver's options: dryRun=All, fieldManager, DeleteOptions in the body or
// the query (gracePeriodSeconds, propagationPolicy, preconditions), 201 on create, 202 when a deletion
// is pending (finalizers, graceful pod deletion).
import {
  applyPatch,
  BadRequestError,
  type DeleteOptions,
  isConflict,
  type KubeObject,
  StatusError,
} from '@kemu/core';
import { type AdmissionAttributes, type AdmissionOperation, allowAllAdmission } from './auth-seams.js';
import { APPLY_YAML_TYPE, bodyMediaType, unsupportedMediaType } from './content-negotiation.js';
import { recordManagedFields } from './managed-fields.js';
import { checkFields, fieldValidationOf, unknownFieldOutcome } from './field-validation.js';
import { checkCommonShape, objectFromBody } from './object-decode.js';
import type { RequestContext } from './request-context.js';
import { decodeBody, parseJsonBody, readBody } from './request-body.js';
import { render } from './rest-read.js';
import { serverSideApply } from './server-side-apply.js';

export function dryRunOf(q: URLSearchParams): boolean {
  const values = q.getAll('dryRun');
  for (const v of values)
    if (v !== 'All') throw new BadRequestError(`dryRun: Unsupported value: "${v}": supported values: "All"`);
  return values.length > 0;
}

/** The field manager of a write: the query's, else derived from the User-Agent as upstream does. */
export function fieldManagerOf(ctx: RequestContext): string {
  const m = ctx.query.get('fieldManager');
  if (m !== null) {
    if (m.length > 128) throw new BadRequestError(`fieldManager: Too long: may not be more than 128 bytes`);
    return m;
  }
  const ua = ctx.req.headers['user-agent'];
  if (ua === undefined) return 'unknown';
  const s = String(ua);
  const slash = s.indexOf('/');
  return (slash < 0 ? s : s.slice(0, slash)).slice(0, 128) || 'unknown';
}

export async function admit(
  ctx: RequestContext,
  operation: AdmissionOperation,
  namespace: string,
  name: string,
  object: KubeObject | undefined,
  oldObject: KubeObject | undefined,
  dryRun: boolean,
  subresource = ctx.info.subresource,
): Promise<void> {
  // Without admission plugins there is nothing to ask (and no attributes to build for it).
  if (ctx.admission === allowAllAdmission) return;
  const attrs: AdmissionAttributes = {
    operation,
    kind: { group: ctx.kind.group, version: ctx.kind.version, kind: ctx.kind.kind },
    resource: { group: ctx.kind.group, version: ctx.kind.version, resource: ctx.kind.resource },
    subresource,
    namespace,
    name,
    object,
    oldObject,
    dryRun,
    userInfo: ctx.user,
    options: Object.fromEntries(ctx.query),
    warnings: [],
    auditAnnotations: {},
  };
  try {
    await ctx.admission.admit(attrs);
    await ctx.admission.validate(attrs);
  } finally {
    // Admission warnings (PodSecurity's warn mode) reach the client even when the request is refused.
    if (attrs.warnings?.length) addWarnings(ctx, attrs.warnings);
  }
}

/** Server-side field validation of an object about to be written (unknown fields dropped; 400 or warnings). */
export function validateFields(ctx: RequestContext, obj: KubeObject): void {
  const mode = fieldValidationOf(ctx.query);
  const warnings = unknownFieldOutcome(ctx.kind, mode, checkFields(ctx.kind, obj as unknown as Record<string, unknown>).unknown);
  if (warnings.length) addWarnings(ctx, warnings);
}

/** `Warning: 299 - "<text>"` headers, as kube-apiserver sends them. */
export function addWarnings(ctx: RequestContext, warnings: string[]): void {
  const res = ctx.res as import('node:http').ServerResponse;
  if (res.headersSent) return;
  const prev = res.getHeader('warning');
  const list = prev === undefined ? [] : Array.isArray(prev) ? prev.map(String) : [String(prev)];
  res.setHeader('warning', [...list, ...warnings.map((w) => `299 - ${JSON.stringify(w)}`)]);
}

async function bodyOf(ctx: RequestContext): Promise<unknown> {
  const bytes = await readBody(ctx.req, ctx.maxBodyBytes);
  return decodeBody(bytes, ctx.req.headers['content-type'], { protobuf: ctx.renderers.protobufDecode });
}

export async function createObject(ctx: RequestContext, namespace: string): Promise<void> {
  const dryRun = dryRunOf(ctx.query);
  const manager = fieldManagerOf(ctx);
  const obj = objectFromBody(ctx.kind, await bodyOf(ctx), namespace);
  validateFields(ctx, obj);
  recordManagedFields(obj, undefined, manager, 'Update', ctx.kind.apiVersion);
  await admit(ctx, 'CREATE', namespace, obj.metadata.name ?? '', obj, undefined, dryRun);
  // The decoded body is this request's own: the store keeps it rather than a copy, and the response only
  // renders what was stored, so no private copy of that either.
  const created = await ctx.store.create(obj, { dryRun, readOnlyResult: true, adoptInput: true });
  render(ctx, 201, created, false);
}

export async function updateObject(ctx: RequestContext, namespace: string, name: string): Promise<void> {
  const dryRun = dryRunOf(ctx.query);
  const manager = fieldManagerOf(ctx);
  const obj = objectFromBody(ctx.kind, await bodyOf(ctx), namespace, name);
  validateFields(ctx, obj);
  const old = await ctx.store.get(ctx.kind.kind, namespace, name);
  recordManagedFields(obj, old, manager, 'Update', ctx.kind.apiVersion, ctx.info.subresource);
  await admit(ctx, 'UPDATE', namespace, name, obj, old, dryRun);
  // (No retry reuses the decoded body: the store may keep it instead of a copy.)
  render(ctx, 200, await writeExisting(ctx, obj, dryRun, true), false);
}

/**
 * Store an updated object through the part the URL names (main resource, status, a pod's ephemeralcontainers);
 * the result is read-only. `adopt`: the object is the request's own and used for nothing after this write.
 */
export function writeExisting(ctx: RequestContext, obj: KubeObject, dryRun: boolean, adopt = false): Promise<KubeObject> {
  const sub = ctx.info.subresource;
  // Every caller only renders the result: no private copy of it.
  const opts = { dryRun, readOnlyResult: true, adoptInput: adopt };
  if (sub === 'status') return ctx.store.updateStatus(obj, opts);
  if (sub === 'ephemeralcontainers') return ctx.store.update(obj, { ...opts, subresource: 'ephemeralcontainers' });
  return ctx.store.update(obj, opts);
}

const PATCH_TYPES: Record<string, 'json' | 'merge' | 'strategic'> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
};

export async function patchObject(ctx: RequestContext, namespace: string, name: string): Promise<void> {
  const media = bodyMediaType(ctx.req.headers['content-type']);
  const dryRun = dryRunOf(ctx.query);
  const manager = fieldManagerOf(ctx);
  if (media === APPLY_YAML_TYPE) {
    const body = await readBody(ctx.req, ctx.maxBodyBytes);
    return serverSideApply(ctx, namespace, name, body, { dryRun, manager });
  }
  const type = PATCH_TYPES[media];
  if (!type) throw unsupportedMediaType([...Object.keys(PATCH_TYPES), APPLY_YAML_TYPE]);
  const patch = parseJsonBody(await readBody(ctx.req, ctx.maxBodyBytes));
  if (type === 'json' ? !Array.isArray(patch) : patch === null || typeof patch !== 'object' || Array.isArray(patch))
    throw new BadRequestError(
      type === 'json'
        ? 'the JSON patch must be an array of operations'
        : `the ${type === 'merge' ? 'merge' : 'strategic merge'} patch must be a JSON object`,
    );
  const pinned = !Array.isArray(patch) && (patch as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
  for (let attempt = 0; ; attempt++) {
    const cur = await ctx.store.get(ctx.kind.kind, namespace, name);
    let next: KubeObject;
    try {
      next = applyPatch(structuredClone(cur), patch, type) as KubeObject;
    } catch (err) {
      if (err instanceof StatusError) throw err;
      throw new BadRequestError(`the patch could not be applied: ${(err as Error).message}`);
    }
    if (next === null || typeof next !== 'object' || Array.isArray(next)) throw new BadRequestError('the patch does not leave an object');
    checkCommonShape(ctx.kind, next as unknown as Record<string, unknown>);
    next.apiVersion = ctx.kind.apiVersion;
    next.kind = ctx.kind.kind;
    validateFields(ctx, next);
    next.apiVersion = ctx.kind.apiVersion;
    next.kind = ctx.kind.kind;
    next.metadata = { ...(next.metadata ?? {}), name, ...(ctx.kind.namespaced ? { namespace } : {}) };
    if (!pinned) next.metadata.resourceVersion = cur.metadata.resourceVersion;
    recordManagedFields(next, cur, manager, 'Update', ctx.kind.apiVersion, ctx.info.subresource);
    await admit(ctx, 'UPDATE', namespace, name, next, cur, dryRun);
    try {
      return render(ctx, 200, await writeExisting(ctx, next, dryRun), false);
    } catch (err) {
      // Another writer got in between the read and the write: patch the newer object (as upstream retries).
      if (!isConflict(err) || pinned || attempt >= 5) throw err;
    }
  }
}

export async function deleteOptionsOf(ctx: RequestContext): Promise<DeleteOptions> {
  const q = ctx.query;
  const bytes = await readBody(ctx.req, ctx.maxBodyBytes);
  let opts: DeleteOptions = {};
  if (bytes.length && bytes.toString('utf8').trim()) {
    const body = decodeBody(bytes, ctx.req.headers['content-type'], { protobuf: ctx.renderers.protobufDecode });
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new BadRequestError('DeleteOptions must be a JSON object');
    const { kind: _k, apiVersion: _a, dryRun, orphanDependents, ...rest } = body as Record<string, unknown>;
    if (dryRun !== undefined && !(Array.isArray(dryRun) && dryRun.every((v) => v === 'All')))
      throw new BadRequestError(`dryRun: Unsupported value: ${JSON.stringify(dryRun)}: supported values: "All"`);
    if (rest.gracePeriodSeconds !== undefined && rest.gracePeriodSeconds !== null && !Number.isInteger(rest.gracePeriodSeconds))
      throw new BadRequestError('DeleteOptions.gracePeriodSeconds must be an integer');
    opts = { ...(rest as DeleteOptions), dryRun: Array.isArray(dryRun) && dryRun.length > 0 };
    if (orphanDependents !== undefined && opts.propagationPolicy === undefined)
      opts.propagationPolicy = orphanDependents ? 'Orphan' : 'Background';
  }
  const grace = q.get('gracePeriodSeconds');
  if (grace !== null) {
    if (!/^-?\d+$/.test(grace)) throw new BadRequestError(`gracePeriodSeconds: Invalid value: "${grace}": must be an integer`);
    opts.gracePeriodSeconds = Number(grace);
  }
  const policy = q.get('propagationPolicy');
  if (policy !== null) opts.propagationPolicy = policy as DeleteOptions['propagationPolicy'];
  if (dryRunOf(q)) opts.dryRun = true;
  return opts;
}

export async function deleteObject(ctx: RequestContext, namespace: string, name: string): Promise<void> {
  const opts = await deleteOptionsOf(ctx);
  const old = await ctx.store.get(ctx.kind.kind, namespace, name);
  if (opts.preconditions?.uid && opts.preconditions.uid !== old.metadata.uid)
    throw new StatusError(
      'Conflict',
      409,
      `Operation cannot be fulfilled on ${ctx.kind.group ? `${ctx.kind.resource}.${ctx.kind.group}` : ctx.kind.resource} "${name}": Precondition failed: UID in precondition: ${opts.preconditions.uid}, UID in object meta: ${old.metadata.uid}`,
      { name, group: ctx.kind.group, kind: ctx.kind.resource },
    );
  await admit(ctx, 'DELETE', namespace, name, undefined, old, opts.dryRun === true);
  const result = await ctx.store.delete(ctx.kind.kind, namespace, name, opts);
  // Still there (finalizers, or a pod's graceful deletion): 202 Accepted, as upstream.
  const pending = !opts.dryRun && Boolean(result.metadata?.deletionTimestamp) && (result.metadata.finalizers?.length || (result.metadata.deletionGracePeriodSeconds ?? 0) > 0);
  render(ctx, pending ? 202 : 200, result, false);
}

export async function deleteCollection(ctx: RequestContext, namespace: string | undefined): Promise<void> {
  const opts = await deleteOptionsOf(ctx);
  const q = ctx.query;
  const list = await ctx.store.list(ctx.kind.kind, {
    namespace,
    labelSelector: q.get('labelSelector') ?? undefined,
    fieldSelector: q.get('fieldSelector') ?? undefined,
  });
  const deleted: KubeObject[] = [];
  for (const o of list.items) {
    const ns = o.metadata.namespace ?? '';
    await admit(ctx, 'DELETE', ns, o.metadata.name!, undefined, o, opts.dryRun === true);
    try {
      deleted.push(await ctx.store.delete(ctx.kind.kind, ns, o.metadata.name!, opts));
    } catch (err) {
      if ((err as StatusError).code !== 404) throw err;
    }
  }
  render(ctx, 200, { apiVersion: list.apiVersion, kind: list.kind, metadata: { resourceVersion: await ctx.store.resourceVersion() }, items: deleted }, true);
}
