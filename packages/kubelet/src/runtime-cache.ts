// The kubelet's picture of the runtime, per pod UID: its sandboxes and containers as the CRI lists them.
// PLEG refreshes all of it each relist; a pod worker refreshes its own pod before and after acting.
import { cri } from '@kemu/proto';
import { POD_UID_LABEL } from './labels.js';
import type { RuntimeApi } from './types.js';

export interface PodRuntime {
  /** Newest first. */
  sandboxes: cri.PodSandbox[];
  /** Every container of every sandbox of the pod, newest first. */
  containers: cri.Container[];
}

const EMPTY: PodRuntime = { sandboxes: [], containers: [] };

function fingerprint(p: PodRuntime): string {
  return `${p.sandboxes.map((s) => `${s.id}:${s.state}`).join(',')}|${p.containers.map((c) => `${c.id}:${c.state}`).join(',')}`;
}

function group(sandboxes: cri.PodSandbox[], containers: cri.Container[]): Map<string, PodRuntime> {
  const byUid = new Map<string, PodRuntime>();
  const uidOfSandbox = new Map<string, string>();
  for (const s of sandboxes) {
    const uid = s.labels?.[POD_UID_LABEL] ?? s.metadata?.uid ?? '';
    if (!uid) continue;
    uidOfSandbox.set(s.id!, uid);
    let p = byUid.get(uid);
    if (!p) {
      p = { sandboxes: [], containers: [] };
      byUid.set(uid, p);
    }
    p.sandboxes.push(s);
  }
  for (const c of containers) {
    const uid = c.labels?.[POD_UID_LABEL] ?? uidOfSandbox.get(c.podSandboxId ?? '');
    if (!uid) continue;
    let p = byUid.get(uid);
    if (!p) {
      p = { sandboxes: [], containers: [] };
      byUid.set(uid, p);
    }
    p.containers.push(c);
  }
  for (const p of byUid.values()) {
    p.sandboxes.sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0));
    p.containers.sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0) || (b.metadata?.attempt ?? 0) - (a.metadata?.attempt ?? 0));
  }
  return byUid;
}

export class RuntimeCache {
  private pods = new Map<string, PodRuntime>();
  private prints = new Map<string, string>();
  private statuses = new Map<string, { state: number; status: cri.ContainerStatus }>();

  constructor(private readonly runtime: RuntimeApi) {}

  /** Lists everything; returns the UIDs whose sandboxes or containers changed since the last look. */
  async relist(): Promise<Set<string>> {
    const [sb, ct] = await Promise.all([this.runtime.ListPodSandbox({}), this.runtime.ListContainers({})]);
    const next = group(sb.items ?? [], ct.containers ?? []);
    const changed = new Set<string>();
    for (const [uid, p] of next) {
      const fp = fingerprint(p);
      if (this.prints.get(uid) !== fp) changed.add(uid);
      this.prints.set(uid, fp);
    }
    for (const uid of this.pods.keys()) {
      if (!next.has(uid)) {
        changed.add(uid);
        this.prints.delete(uid);
      }
    }
    this.pods = next;
    this.pruneStatuses(ct.containers ?? []);
    return changed;
  }

  /** Refreshes one pod with label-filtered lists. */
  async refresh(uid: string): Promise<PodRuntime> {
    const selector = { [POD_UID_LABEL]: uid };
    const [sb, ct] = await Promise.all([
      this.runtime.ListPodSandbox({ filter: { labelSelector: selector } }),
      this.runtime.ListContainers({ filter: { labelSelector: selector } }),
    ]);
    const p = group(sb.items ?? [], ct.containers ?? []).get(uid) ?? { sandboxes: [], containers: [] };
    if (p.sandboxes.length || p.containers.length) {
      this.pods.set(uid, p);
      this.prints.set(uid, fingerprint(p));
    } else {
      this.pods.delete(uid);
      this.prints.delete(uid);
    }
    return p;
  }

  get(uid: string): PodRuntime {
    return this.pods.get(uid) ?? EMPTY;
  }

  uids(): string[] {
    return [...this.pods.keys()];
  }

  /** ContainerStatus, fetched once per container state (a container's status only changes with its state). */
  async status(c: cri.Container): Promise<cri.ContainerStatus | undefined> {
    const memo = this.statuses.get(c.id!);
    if (memo && memo.state === c.state) return memo.status;
    try {
      const res = await this.runtime.ContainerStatus({ containerId: c.id });
      if (!res.status) return undefined;
      this.statuses.set(c.id!, { state: res.status.state ?? c.state ?? 0, status: res.status });
      return res.status;
    } catch (err) {
      if ((err as { code?: number }).code === 5) return undefined; // NOT_FOUND: removed meanwhile
      throw err;
    }
  }

  private pruneStatuses(live: cri.Container[]) {
    if (this.statuses.size <= live.length) return;
    const ids = new Set(live.map((c) => c.id));
    for (const id of this.statuses.keys()) if (!ids.has(id)) this.statuses.delete(id);
  }
}

export function isReadySandbox(s: cri.PodSandbox | undefined): boolean {
  return !!s && s.state === cri.PodSandboxState.SANDBOX_READY;
}
