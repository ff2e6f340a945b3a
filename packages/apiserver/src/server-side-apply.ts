// Server-side apply (PATCH with application/apply-patch+yaml): the applied configuration is merged into the
// live object (creating it when absent), the manager's Apply entry in managedFields becomes exactly the
// fields it applied, fields it applied before and no longer does are removed unless another manager owns
// them, and a field another manager owns with a different value is a 409 Conflict naming manager and field
// (unless force=true, which takes the field over).
import { BadRequestError, InvalidError, isConflict, isNotFound, type KubeObject, StatusError, strategicMerge } from '@kemu/core';
import { leaves, ownershipOf, writeOwnership, type FieldPath } from './managed-fields.js';
import { checkCommonShape } from './object-decode.js';
import type { RequestContext } from './request-context.js';
import { parseYamlBody } from './request-body.js';
import { render } from './rest-read.js';
import { admit, validateFields, writeExisting } from './rest-write.js';
import { queryBool } from './request-info.js';

const isObject = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `.spec.containers[name="x"].image`, the way upstream prints a conflicting field. */
function printPath(path: FieldPath): string {
  return path
    .filter((s) => s !== '.')
    .map((s) => {
      if (s.startsWith('f:')) return `.${s.slice(2)}`;
      const key = JSON.parse(s.slice(2)) as Record<string, unknown>;
      return `[${Object.entries(key).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',')}]`;
    })
    .join('');
}

function removeAt(obj: Record<string, any>, path: FieldPath): void {
  const segs = path.filter((s) => s !== '.');
  const stack: { container: any; at: string | number }[] = [];
  let node: any = obj;
  for (const seg of segs) {
    if (seg.startsWith('f:')) {
      if (!isObject(node) || !(seg.slice(2) in node)) return;
      stack.push({ container: node, at: seg.slice(2) });
      node = node[seg.slice(2)];
    } else {
      const [k, v] = Object.entries(JSON.parse(seg.slice(2)) as Record<string, unknown>)[0];
      if (!Array.isArray(node)) return;
      const i = node.findIndex((e) => isObject(e) && e[k] === v);
      if (i < 0) return;
      stack.push({ container: node, at: i });
      node = node[i];
    }
  }
  // Remove the leaf, then any container the removal left empty (up to the top-level section).
  for (let i = stack.length - 1; i >= 0; i--) {
    const { container, at } = stack[i];
    const child = container[at];
    const empty = i === stack.length - 1 || (isObject(child) ? Object.keys(child).length === 0 : Array.isArray(child) && child.length === 0);
    if (!empty) break;
    if (Array.isArray(container)) container.splice(at as number, 1);
    else delete container[at];
    if (i === 1) break;
  }
}

export async function serverSideApply(
  ctx: RequestContext,
  namespace: string,
  name: string,
  body: Buffer,
  opts: { dryRun: boolean; manager: string },
): Promise<void> {
  const force = queryBool(ctx.query, 'force');
  if (!ctx.query.get('fieldManager'))
    throw new InvalidError('PatchOptions', '', 'meta.k8s.io', [
      { field: 'fieldManager', type: 'FieldValueRequired', message: 'Required value: is required for apply patch' },
    ]);
  const config = parseYamlBody(body);
  if (!isObject(config)) throw new BadRequestError('the applied configuration must be an object');
  if (!config.apiVersion || !config.kind) throw new BadRequestError('apiVersion and kind must be set in the applied configuration');
  if (config.apiVersion !== ctx.kind.apiVersion || config.kind !== ctx.kind.kind)
    throw new BadRequestError(`the applied configuration's ${config.apiVersion}/${config.kind} does not match the URL's ${ctx.kind.apiVersion}/${ctx.kind.kind}`);
  checkCommonShape(ctx.kind, config);
  validateFields(ctx, config as KubeObject);
  const meta = (config.metadata ??= {});
  if (meta.name && meta.name !== name) throw new BadRequestError(`the name of the object (${meta.name}) does not match the name on the URL (${name})`);
  if (ctx.kind.namespaced && meta.namespace && meta.namespace !== namespace)
    throw new BadRequestError('the namespace of the provided object does not match the namespace sent on the request');
  if (meta.managedFields !== undefined) throw new BadRequestError('metadata.managedFields must be nil');
  const sub = ctx.info.subresource;
  const applied = leaves(config, sub);
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');

  for (let attempt = 0; ; attempt++) {
    let live: KubeObject | undefined;
    try {
      live = await ctx.store.get(ctx.kind.kind, namespace, name);
    } catch (err) {
      // Apply may create the object, never through one of its subresources.
      if (!isNotFound(err) || sub) throw err;
    }
    const owners = ownershipOf(live);
    const liveLeaves = live ? leaves(live, sub) : new Map();
    const isMine = (o: (typeof owners)[number]) => o.entry.manager === opts.manager && o.entry.operation === 'Apply' && (o.entry.subresource ?? '') === sub;
    // Conflicts: fields the config sets to a value other than the live one that someone else owns.
    const conflicts: { manager: string; apiVersion: string; path: FieldPath }[] = [];
    for (const [k, v] of applied) {
      const cur = liveLeaves.get(k);
      if (!cur || JSON.stringify(cur.value) === JSON.stringify(v.value)) continue;
      for (const o of owners) {
        if (isMine(o) || !o.fields.has(k)) continue;
        if (force) o.fields.delete(k);
        else conflicts.push({ manager: o.entry.manager ?? '', apiVersion: o.entry.apiVersion ?? '', path: v.path });
      }
    }
    if (conflicts.length) {
      // By manager name, as upstream prints them.
      conflicts.sort((x, y) => (x.manager < y.manager ? -1 : x.manager > y.manager ? 1 : 0));
      const byManager = new Map<string, string[]>();
      for (const c of conflicts) {
        const head = `"${c.manager}"${c.apiVersion ? ` using ${c.apiVersion}` : ''}`;
        if (!byManager.has(head)) byManager.set(head, []);
        byManager.get(head)!.push(printPath(c.path));
      }
      const n = conflicts.length;
      const msg =
        n === 1
          ? `Apply failed with 1 conflict: conflict with ${[...byManager.keys()][0]}: ${conflicts.map((c) => printPath(c.path))[0]}`
          : `Apply failed with ${n} conflicts: ${[...byManager].map(([h, fields]) => `conflicts with ${h}:\n${fields.map((f) => `- ${f}`).join('\n')}`).join('\n')}`;
      throw new StatusError('Conflict', 409, msg, {
        name,
        group: ctx.kind.group,
        kind: ctx.kind.resource,
        causes: conflicts.map((c) => ({ reason: 'FieldManagerConflict' as never, message: `conflict with "${c.manager}"${c.apiVersion ? ` using ${c.apiVersion}` : ''}`, field: printPath(c.path) })),
      });
    }
    // Fields this manager applied before and no longer does: removed unless someone else still owns them.
    const mine = owners.find(isMine);
    const next: KubeObject = live
      ? (strategicMerge(structuredClone(live), { ...config, metadata: { ...meta, managedFields: undefined } }) as KubeObject)
      : (structuredClone(config) as KubeObject);
    if (mine) {
      // Whole list elements first (their `.` marker), so an element goes at once rather than field by field
      // (removing its key field first would leave the rest unfindable).
      const gone = [...mine.fields].filter((k) => !applied.has(k) && !owners.some((o) => o !== mine && o.fields.has(k)));
      gone.sort((x, y) => Number(!x.endsWith('\u0000.')) - Number(!y.endsWith('\u0000.')));
      for (const k of gone) {
        const path = k.split('\u0000');
        if (path[path.length - 1] === '.') {
          // Only when nobody still owns a field inside the element.
          const prefix = k.slice(0, -1);
          if (owners.some((o) => o !== mine && [...o.fields].some((f) => f.startsWith(prefix)))) continue;
          removeAt(next as Record<string, any>, path.slice(0, -1));
        } else removeAt(next as Record<string, any>, path);
      }
    }
    // Everyone else keeps only what the applier did not take over by changing its value.
    for (const o of owners) {
      if (o === mine) continue;
      for (const [k, v] of applied) {
        const cur = liveLeaves.get(k);
        if (cur && JSON.stringify(cur.value) !== JSON.stringify(v.value)) o.fields.delete(k);
      }
    }
    const entry = mine ?? { entry: { manager: opts.manager, operation: 'Apply' as const, apiVersion: ctx.kind.apiVersion, ...(sub ? { subresource: sub } : {}) }, fields: new Set<string>() };
    entry.entry.time = now;
    entry.entry.apiVersion = ctx.kind.apiVersion;
    entry.fields = new Set(applied.keys());
    const others = owners.filter((o) => o !== mine);
    next.apiVersion = ctx.kind.apiVersion;
    next.kind = ctx.kind.kind;
    next.metadata = { ...(next.metadata ?? {}), name, ...(ctx.kind.namespaced ? { namespace } : {}) };
    writeOwnership(next, [entry, ...others]);
    try {
      if (!live) {
        delete next.metadata.resourceVersion;
        await admit(ctx, 'CREATE', namespace, name, next, undefined, opts.dryRun);
        return render(ctx, 201, await ctx.store.create(next, { dryRun: opts.dryRun }), false);
      }
      next.metadata.resourceVersion = live.metadata.resourceVersion;
      await admit(ctx, 'UPDATE', namespace, name, next, live, opts.dryRun);
      return render(ctx, 200, await writeExisting(ctx, next, opts.dryRun), false);
    } catch (err) {
      const retry = isConflict(err) || (!live && (err as StatusError).reason === 'AlreadyExists');
      if (!retry || attempt >= 5) throw err;
    }
  }
}
