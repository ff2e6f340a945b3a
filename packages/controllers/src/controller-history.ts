// ControllerRevisions, the history StatefulSets and DaemonSets keep of their pod templates (upstream's
// controller history): one revision per template, named `<owner>-<hash>`, numbered in order; a template
// that comes back becomes the newest revision again; old ones beyond revisionHistoryLimit are deleted.
import { type ControllerRevision, deepCopy, isAlreadyExists, isNotFound, type KubeObject, type LabelSelector, type PodTemplateSpec } from '@kemu/core';
import type { ControllerContext } from './controller-context.js';
import { computeHash } from './deployment-util.js';
import { controllerRef } from './pod-util.js';

export const REVISION_LABEL = 'controller-revision-hash';

export interface RevisionOwner extends KubeObject {
  spec: { template: PodTemplateSpec; selector: LabelSelector; revisionHistoryLimit?: number };
  status?: { collisionCount?: number };
}

/** The owner's revision for its current template (created or renumbered as needed), and all its revisions. */
export async function ensureRevision(
  ctx: ControllerContext,
  owner: RevisionOwner,
  existing: ControllerRevision[],
): Promise<{ update: ControllerRevision; all: ControllerRevision[]; hash: string }> {
  const all = [...existing].sort((a, b) => a.revision - b.revision);
  const hash = computeHash(owner.spec.template, owner.status?.collisionCount);
  const name = `${owner.metadata.name}-${hash}`;
  const max = all.reduce((m, r) => Math.max(m, r.revision), 0);
  let update = all.find((r) => r.metadata.name === name);
  if (!update) {
    const rev: ControllerRevision = {
      apiVersion: 'apps/v1',
      kind: 'ControllerRevision',
      metadata: { name, namespace: owner.metadata.namespace, labels: { ...(owner.spec.selector.matchLabels ?? {}), [REVISION_LABEL]: hash }, ownerReferences: [controllerRef(owner)] },
      data: { spec: { template: { ...deepCopy(owner.spec.template), $patch: 'replace' } } },
      revision: max + 1,
    };
    try {
      update = await ctx.store.create(rev);
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
      update = await ctx.store.get('ControllerRevision', owner.metadata.namespace, name);
    }
    all.push(update);
  } else if (update.revision < max) {
    const next = deepCopy(update);
    next.revision = max + 1;
    update = await ctx.store.update(next);
  }
  return { update, all, hash };
}

/** The pod template a revision recorded. */
export function revisionTemplate(r: ControllerRevision | undefined): PodTemplateSpec | undefined {
  const t = (r?.data as { spec?: { template?: PodTemplateSpec & { $patch?: string } } } | undefined)?.spec?.template;
  if (!t) return undefined;
  const { $patch: _p, ...rest } = t;
  return rest as PodTemplateSpec;
}

/** Delete the oldest revisions not in `keep` beyond the owner's revisionHistoryLimit (default 10). */
export async function truncateHistory(ctx: ControllerContext, owner: RevisionOwner, all: ControllerRevision[], keep: Set<string | undefined>): Promise<void> {
  const limit = owner.spec.revisionHistoryLimit ?? 10;
  const old = all.filter((r) => !keep.has(r.metadata.name)).sort((a, b) => a.revision - b.revision);
  for (const r of old.slice(0, Math.max(0, old.length - limit))) {
    await ctx.store.delete('ControllerRevision', r.metadata.namespace, r.metadata.name!).catch((e) => {
      if (!isNotFound(e)) throw e;
    });
  }
}
