// Subresources beyond status: pods/binding, pods/eviction (honouring PodDisruptionBudgets when that kind
// exists), pods/log (follow, tail, since, timestamps, previous, limitBytes), <workload>/scale (autoscaling/v1
// Scale over spec.replicas, or over the paths a CRD names), and the streaming ones (exec, attach,
// portforward) whose upgrades server.ts relays to the node's CRI streaming server.
import {
  applyPatch,
  BadRequestError,
  type Binding,
  lookupKind,
  type KubeObject,
  NotFoundError,
  type Pod,
  StatusError,
  toSelector,
} from '@kemu/core';
import type { RequestContext } from './request-context.js';
import { decodeBody, readBody } from './request-body.js';
import { queryBool } from './request-info.js';
import { recordManagedFields } from './managed-fields.js';
import { admit, dryRunOf, fieldManagerOf } from './rest-write.js';
import { send } from './responses.js';
import type { StreamOptions } from './server-extensions.js';

export async function bindPod(ctx: RequestContext, namespace: string, name: string, decoded?: unknown): Promise<void> {
  const body = decoded ?? decodeBody(await readBody(ctx.req, ctx.maxBodyBytes), ctx.req.headers['content-type'], { protobuf: ctx.renderers.protobufDecode });
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new BadRequestError('the request body must be a Binding object');
  const binding = { ...(body as Binding), metadata: { ...((body as Binding).metadata ?? {}), namespace } } as Binding;
  if (binding.metadata.name && binding.metadata.name !== name)
    throw new BadRequestError(`the name of the object (${binding.metadata.name}) does not match the name on the URL (${name})`);
  binding.metadata.name = name;
  const dryRun = dryRunOf(ctx.query);
  await admit(ctx, 'CREATE', namespace, name, binding as unknown as KubeObject, undefined, dryRun, 'binding');
  await ctx.store.bind(binding, { dryRun });
  send(ctx.res, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
}

/** POST pods/<name>/eviction: delete the pod unless a PodDisruptionBudget covering it allows no disruption. */
export async function evictPod(ctx: RequestContext, namespace: string, name: string): Promise<void> {
  const body = decodeBody(await readBody(ctx.req, ctx.maxBodyBytes), ctx.req.headers['content-type'], { protobuf: ctx.renderers.protobufDecode }) as Record<string, any>;
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new BadRequestError('the request body must be an Eviction object');
  if (body.metadata?.name && body.metadata.name !== name)
    throw new BadRequestError(`name in URL does not match name in Eviction object`);
  const pod = (await ctx.store.get('Pod', namespace, name)) as Pod;
  const dryRun = dryRunOf(ctx.query) || (Array.isArray(body.deleteOptions?.dryRun) && body.deleteOptions.dryRun.includes('All'));
  // A pod that is already done or terminating can go whatever the budgets say.
  const done = pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed' || Boolean(pod.metadata.deletionTimestamp);
  if (!done && lookupKind('PodDisruptionBudget')) {
    const pdbs = await ctx.store.list('PodDisruptionBudget', { namespace });
    const covering = pdbs.items.filter((p: KubeObject) => {
      const sel = p.spec?.selector;
      return sel && toSelector(sel).matches(pod.metadata.labels ?? {});
    });
    if (covering.length > 1)
      throw new StatusError('InternalError', 500, 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.');
    const pdb = covering[0];
    if (pdb && (pdb.status?.disruptionsAllowed ?? 0) <= 0)
      throw new StatusError('TooManyRequests', 429, `Cannot evict pod as it would violate the pod's disruption budget.`, {
        causes: [{ reason: 'DisruptionBudget' as never, message: `The disruption budget ${pdb.metadata.name} needs ${pdb.status?.desiredHealthy ?? 0} healthy pods and has ${pdb.status?.currentHealthy ?? 0} currently`, field: '' }],
      });
  }
  await admit(ctx, 'CREATE', namespace, name, body as KubeObject, pod, dryRun, 'eviction');
  await ctx.store.delete('Pod', namespace, name, { ...(body.deleteOptions ?? {}), dryRun });
  send(ctx.res, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
}

function workloadScaleOf(obj: KubeObject): Record<string, unknown> {
  const sel = obj.spec?.selector;
  const selector = sel ? (sel.matchLabels || sel.matchExpressions ? toSelector(sel).toString() : toSelector({ matchLabels: sel }).toString()) : '';
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: {
      name: obj.metadata.name,
      namespace: obj.metadata.namespace,
      uid: obj.metadata.uid,
      resourceVersion: obj.metadata.resourceVersion,
      creationTimestamp: obj.metadata.creationTimestamp,
    },
    spec: { replicas: obj.spec?.replicas ?? 0 },
    status: { replicas: obj.status?.replicas ?? 0, ...(selector ? { selector } : {}) },
  };
}

/** How a kind's objects read as, and are changed by, an autoscaling/v1 Scale. */
export interface ScaleAdapter {
  scaleOf(obj: KubeObject): Record<string, unknown>;
  /** A copy of the object with `replicas` (a non-negative integer) written where the kind keeps them. */
  withReplicas(obj: KubeObject, replicas: number): KubeObject;
}

/** The built-in workloads (Deployment, ReplicaSet, StatefulSet, ReplicationController): spec.replicas. */
export const workloadScale: ScaleAdapter = {
  scaleOf: workloadScaleOf,
  withReplicas: (obj, replicas) => ({ ...obj, spec: { ...obj.spec, replicas } }),
};

export async function scale(ctx: RequestContext, namespace: string, name: string, method: string, adapter: ScaleAdapter = workloadScale): Promise<void> {
  const scaleOf = adapter.scaleOf;
  const cur = await ctx.store.get(ctx.kind.kind, namespace, name);
  if (method === 'GET') return send(ctx.res, 200, scaleOf(cur));
  const dryRun = dryRunOf(ctx.query);
  let replicas: unknown;
  const raw = await readBody(ctx.req, ctx.maxBodyBytes);
  if (method === 'PUT') {
    const body = decodeBody(raw, ctx.req.headers['content-type']) as Record<string, any>;
    replicas = body?.spec?.replicas;
    if (body?.metadata?.resourceVersion && body.metadata.resourceVersion !== cur.metadata.resourceVersion)
      throw new StatusError('Conflict', 409, `Operation cannot be fulfilled on ${ctx.kind.resource}.${ctx.kind.group} "${name}": the object has been modified; please apply your changes to the latest version and try again`);
  } else if (method === 'PATCH') {
    const type = ({ 'application/json-patch+json': 'json', 'application/merge-patch+json': 'merge', 'application/strategic-merge-patch+json': 'merge' } as const)[
      String(ctx.req.headers['content-type'] ?? '').split(';')[0].trim() as 'application/json-patch+json'
    ];
    if (!type) throw new StatusError('UnsupportedMediaType', 415, 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json');
    replicas = (applyPatch(scaleOf(cur), JSON.parse(raw.toString('utf8') || '{}'), type) as any)?.spec?.replicas;
  } else throw new StatusError('MethodNotAllowed', 405, 'the server does not allow this method on the requested resource');
  if (!Number.isInteger(replicas) || (replicas as number) < 0)
    throw new StatusError('Invalid', 422, `Scale.autoscaling "${name}" is invalid: spec.replicas: Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0`, {
      name,
      group: 'autoscaling',
      kind: 'Scale',
      causes: [{ reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0`, field: 'spec.replicas' }],
    });
  const next = adapter.withReplicas(cur, replicas as number);
  // The object's managedFields record the change under the caller's field manager.
  recordManagedFields(next, cur, fieldManagerOf(ctx), 'Update', ctx.kind.apiVersion);
  await admit(ctx, 'UPDATE', namespace, name, next, cur, dryRun, 'scale');
  const stored = await ctx.store.update(next, { dryRun });
  send(ctx.res, 200, scaleOf(stored));
}

function intParam(q: URLSearchParams, key: string, min = 0): number | undefined {
  const v = q.get(key);
  if (v === null || v === '') return undefined;
  if (!/^-?\d+$/.test(v) || Number(v) < min)
    throw new StatusError('Invalid', 422, `PodLogOptions "" is invalid: ${key}: Invalid value: ${v}: must be greater than or equal to ${min}`);
  return Number(v);
}

/** Whether the pod has a container of that name: a regular, init or ephemeral one, as upstream checks. */
function podHasContainer(pod: Pod, container: string): boolean {
  const spec = pod.spec ?? ({} as Pod['spec']);
  return [...(spec.containers ?? []), ...(spec.initContainers ?? []), ...(spec.ephemeralContainers ?? [])].some((c) => c.name === container);
}

export async function podLog(ctx: RequestContext, namespace: string, name: string): Promise<void> {
  const q = ctx.query;
  const pod = (await ctx.store.get('Pod', namespace, name)) as Pod;
  const names = (pod.spec?.containers ?? []).map((c) => c.name);
  let container = q.get('container') ?? undefined;
  if (!container) {
    if (names.length !== 1)
      throw new BadRequestError(`a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]`);
    container = names[0];
  } else if (!podHasContainer(pod, container)) {
    throw new BadRequestError(`container ${container} is not valid for pod ${name}`);
  }
  if (!ctx.ext.podLog) throw new StatusError('ServiceUnavailable', 503, `the node of pod ${name} serves no logs`);
  const sinceSeconds = intParam(q, 'sinceSeconds', 1);
  const sinceTime = q.get('sinceTime') ?? undefined;
  if (sinceSeconds !== undefined && sinceTime) throw new StatusError('Invalid', 422, 'PodLogOptions "" is invalid: sinceSeconds: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified');
  const out = await ctx.ext.podLog(namespace, name, {
    container,
    tail: intParam(q, 'tailLines'),
    follow: queryBool(q, 'follow'),
    previous: queryBool(q, 'previous'),
    timestamps: queryBool(q, 'timestamps'),
    sinceSeconds,
    sinceTime,
    limitBytes: intParam(q, 'limitBytes', 1),
  });
  const res = ctx.res as import('node:http').ServerResponse;
  res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-cache, private' });
  if (typeof out === 'string') {
    const limit = intParam(q, 'limitBytes', 1);
    res.end(limit !== undefined ? Buffer.from(out).subarray(0, limit) : out);
    return;
  }
  res.flushHeaders?.();
  const iter = out[Symbol.asyncIterator]();
  const stop = () => void iter.return?.();
  ctx.req.on('close', stop);
  for (;;) {
    const { value, done } = await iter.next();
    if (done || res.destroyed) break;
    res.write(value);
  }
  if (!res.writableEnded) res.end();
}

export function streamOptions(kind: 'exec' | 'attach' | 'portforward', q: URLSearchParams): StreamOptions {
  const b = (k: string) => queryBool(q, k);
  if (kind === 'portforward') {
    const ports = q.getAll('ports').flatMap((p) => p.split(',')).map((p) => p.trim()).filter(Boolean);
    for (const p of ports) if (!/^\d+$/.test(p) || Number(p) < 1 || Number(p) > 65535) throw new BadRequestError(`invalid port: ${p}`);
    return { ports: ports.map(Number) };
  }
  const opts: StreamOptions = { container: q.get('container') ?? undefined, stdin: b('stdin'), stdout: b('stdout'), stderr: b('stderr'), tty: b('tty') };
  if (kind === 'exec') {
    opts.command = q.getAll('command');
    if (!opts.command.length) throw new BadRequestError('you must specify at least one command for the container');
  }
  if (!opts.stdin && !opts.stdout && !opts.stderr) throw new BadRequestError('you must specify at least 1 of stdin, stdout, stderr');
  return opts;
}

/** The URL of the node's streaming server for this request (checks the pod and container first). */
export async function streamTarget(ctx: RequestContext, namespace: string, name: string, kind: 'exec' | 'attach' | 'portforward'): Promise<string> {
  const opts = streamOptions(kind, ctx.query);
  const pod = (await ctx.store.get('Pod', namespace, name)) as Pod;
  if (kind !== 'portforward') {
    const names = (pod.spec?.containers ?? []).map((c) => c.name);
    if (!opts.container) {
      if (names.length !== 1) throw new BadRequestError(`a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]`);
      opts.container = names[0];
    } else if (!podHasContainer(pod, opts.container)) throw new BadRequestError(`container ${opts.container} is not valid for pod ${name}`);
  }
  if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed')
    throw new BadRequestError(`cannot ${kind === 'portforward' ? 'port-forward to' : 'exec into'} a container in a completed pod; current phase is ${pod.status.phase}`);
  if (!pod.spec?.nodeName) throw new BadRequestError(`pod ${name} does not have a host assigned`);
  if (!ctx.ext.podStreamUrl) throw new NotFoundError({ resource: `pods/${kind}`, group: '', name });
  await admit(ctx, 'CONNECT', namespace, name, undefined, pod, false, kind);
  return ctx.ext.podStreamUrl(namespace, name, kind, opts);
}

