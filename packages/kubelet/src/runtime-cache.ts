// The kubelet's picture of the runtime, per pod UID: its sandboxes and containers as the CRI lists them.
// PLEG refreshes all of it each relist; a pod worker refreshes its own pod after acting, and before
// syncing only when a runtime event (or nothing at all) says the cache may be behind: a periodic resync of
// a pod whose runtime did not change works from the cache, as upstream's pod workers do.
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
/** Runtime events kept per pod until the cache shows them. */
const MAX_PENDING_EVENTS = 32;

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
  /** Lists are numbered as they are issued; per pod, the number of the list its entry comes from. */
  private issued = 0;
  private listedAt = new Map<string, number>();
  /**
   * Pods the runtime may have moved past the cache for. Any list issued after `since` (the last list issued
   * when that was learnt) catches the pod up; so does the cache coming to show every event in `events`,
   * unless the reason was not an event (`forced`).
   */
  private behind = new Map<string, { since: number; events: cri.ContainerEventResponse[]; forced: boolean }>();

  constructor(private readonly runtime: RuntimeApi) {}

  /**
   * Lists everything; returns the UIDs whose sandboxes or containers changed since the last look, and the
   * number of this list (see `seenSince`). A pod refreshed after this list was issued keeps its newer view.
   */
  async relist(): Promise<{ changed: Set<string>; listed: number }> {
    const listed = ++this.issued;
    const [sb, ct] = await Promise.all([this.runtime.ListPodSandbox({}), this.runtime.ListContainers({})]);
    const next = group(sb.items ?? [], ct.containers ?? []);
    const changed = new Set<string>();
    for (const [uid, p] of next) {
      if ((this.listedAt.get(uid) ?? 0) > listed) continue;
      const fp = fingerprint(p);
      if (this.prints.get(uid) !== fp) changed.add(uid);
      this.prints.set(uid, fp);
      this.pods.set(uid, p);
      this.listedAt.set(uid, listed);
    }
    for (const uid of [...this.pods.keys()]) {
      if (next.has(uid) || (this.listedAt.get(uid) ?? 0) > listed) continue;
      changed.add(uid);
      this.pods.delete(uid);
      this.prints.delete(uid);
      this.listedAt.delete(uid);
    }
    this.pruneStatuses(ct.containers ?? []);
    return { changed, listed };
  }

  /** Whether the pod's entry comes from a list issued after list number `listed` (so it shows at least as much). */
  seenSince(uid: string, listed: number): boolean {
    return (this.listedAt.get(uid) ?? 0) > listed;
  }

  /** Refreshes one pod with label-filtered lists. */
  async refresh(uid: string): Promise<PodRuntime> {
    const selector = { [POD_UID_LABEL]: uid };
    const listed = ++this.issued;
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
    this.listedAt.set(uid, listed);
    if ((this.behind.get(uid)?.since ?? listed) < listed) this.behind.delete(uid);
    return p;
  }

  /**
   * The pod's runtime as the cache has it, or freshly listed when the cache never looked at the pod or may
   * be behind (see `invalidate`).
   */
  async current(uid: string): Promise<PodRuntime> {
    if (this.listedAt.has(uid) && this.caughtUp(uid)) return this.get(uid);
    return this.refresh(uid);
  }

  /**
   * A runtime event about the pod: when the cache does not show it yet, `current` lists again until it
   * does. Returns whether the cache already showed it.
   */
  sawEvent(uid: string, ev: cri.ContainerEventResponse): boolean {
    if (this.covers(uid, ev)) return true;
    const b = this.behindOf(uid);
    // A pod flooding events past its lists: only a later list settles them.
    if (b.events.length < MAX_PENDING_EVENTS) b.events.push(ev);
    else b.forced = true;
    return false;
  }

  /** The cache may be behind the runtime for the pod: `current` lists again, with a list issued from now on. */
  invalidate(uid: string) {
    this.behindOf(uid).forced = true;
  }

  private behindOf(uid: string) {
    let b = this.behind.get(uid);
    if (!b) {
      b = { since: 0, events: [], forced: false };
      this.behind.set(uid, b);
    }
    b.since = this.issued;
    return b;
  }

  /** Whether the cache is not known to be behind: every event it missed it now shows (a list came in between). */
  private caughtUp(uid: string): boolean {
    const b = this.behind.get(uid);
    if (!b) return true;
    if (b.forced || b.events.some((ev) => !this.covers(uid, ev))) return false;
    this.behind.delete(uid);
    return true;
  }

  /** Drops what is kept about a pod that is gone for good (its worker is done). */
  forget(uid: string) {
    if (this.pods.has(uid)) return;
    this.listedAt.delete(uid);
    this.behind.delete(uid);
  }

  /**
   * Whether this cache already shows what a runtime event reports (upstream's evented PLEG drops events
   * older than the pod's cache entry): every sandbox and container the event names is known and has
   * reached the state the event gives it, and a deleted container is gone. A worker's own creates and
   * starts come back as events; its last refresh has usually seen them already.
   */
  covers(uid: string, ev: cri.ContainerEventResponse): boolean {
    const p = this.pods.get(uid);
    if (!p) return false;
    if (ev.containerEventType === cri.ContainerEventType.CONTAINER_DELETED_EVENT) {
      if (p.containers.some((c) => c.id === ev.containerId)) return false;
    } else if (!p.containers.some((c) => c.id === ev.containerId)) return false;
    const sb = ev.podSandboxStatus;
    if (sb?.id) {
      const mine = p.sandboxes.find((s) => s.id === sb.id);
      // Sandboxes only go from ready to not ready.
      if (!mine || (mine.state ?? 0) < (sb.state ?? 0)) return false;
    }
    for (const cs of ev.containersStatuses ?? []) {
      const mine = p.containers.find((c) => c.id === cs.id);
      if (!mine || !reached(mine.state ?? 0, cs.state ?? 0)) return false;
    }
    return true;
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

const { CONTAINER_CREATED, CONTAINER_RUNNING, CONTAINER_EXITED } = cri.ContainerState;
const PROGRESS = [CONTAINER_CREATED, CONTAINER_RUNNING, CONTAINER_EXITED];

/** A container goes created -> running -> exited; `seen` has reached `reported` on that path (unknown only by being equal). */
function reached(seen: number, reported: number): boolean {
  const a = PROGRESS.indexOf(seen);
  const b = PROGRESS.indexOf(reported);
  return a < 0 || b < 0 ? seen === reported : a >= b;
}

export function isReadySandbox(s: cri.PodSandbox | undefined): boolean {
  return !!s && s.state === cri.PodSandboxState.SANDBOX_READY;
}
