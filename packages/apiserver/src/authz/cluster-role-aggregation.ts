// The ClusterRole aggregation controller: a ClusterRole with an aggregationRule holds the union of the
// rules of every ClusterRole whose labels match one of its selectors (in name order, duplicates dropped),
// kept current as those roles change. This is how admin/edit/view grow when a CRD's roles are labelled.
import {
  type ClusterRole,
  deepCopy,
  isConflict,
  isNotFound,
  matchLabels,
  type PolicyRule,
  SharedInformer,
  type Store,
} from '@kemu/core';

/** The rules an aggregated ClusterRole should hold, given every ClusterRole. */
export function aggregatedRules(target: ClusterRole, all: readonly ClusterRole[]): PolicyRule[] {
  const selectors = target.aggregationRule?.clusterRoleSelectors ?? [];
  const sources = all
    .filter((c) => c.metadata.name !== target.metadata.name && selectors.some((s) => matchLabels(s, c.metadata.labels)))
    .sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : 1));
  const seen = new Set<string>();
  const out: PolicyRule[] = [];
  for (const c of sources) {
    for (const rule of c.rules ?? []) {
      const key = JSON.stringify(rule);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(rule);
    }
  }
  return out;
}

export class ClusterRoleAggregationController {
  readonly informer: SharedInformer<'ClusterRole', ClusterRole>;
  private pending: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly store: Store,
    informer?: SharedInformer<'ClusterRole', ClusterRole>,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    this.informer = informer ?? new SharedInformer(store, 'ClusterRole');
    const kick = () => this.schedule();
    this.informer.addEventHandler({ onAdd: kick, onUpdate: kick, onDelete: kick });
  }

  /** Starts the informer (when this controller owns it) and resolves after the first pass. */
  async start(ownInformer = true): Promise<void> {
    if (ownInformer) this.informer.start();
    await this.informer.waitForSync();
    await this.syncAll();
  }

  async stop(ownInformer = true): Promise<void> {
    this.stopped = true;
    if (this.pending) clearTimeout(this.pending);
    await this.running;
    if (ownInformer) await this.informer.stop();
  }

  /** Resolves once every aggregated ClusterRole holds its rules (for tests and start-up ordering). */
  async settled(): Promise<void> {
    await this.syncAll();
  }

  private schedule(): void {
    if (this.pending || this.stopped) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      this.running = this.running.then(() => this.syncAll()).catch(this.onError);
    }, 0);
  }

  /**
   * Brings every aggregated ClusterRole up to date, reading the store itself so that roles aggregated
   * from other aggregated roles (view into edit into admin) settle in one call.
   */
  private async syncAll(): Promise<void> {
    for (let pass = 0; pass < 8; pass++) {
      const all = (await this.store.list('ClusterRole')).items as ClusterRole[];
      let changed = false;
      for (const target of all) {
        if (!target.aggregationRule) continue;
        const rules = aggregatedRules(target, all);
        if (JSON.stringify(rules) === JSON.stringify(target.rules ?? [])) continue;
        try {
          await this.store.update({ ...deepCopy(target), rules });
          changed = true;
        } catch (err) {
          // A concurrent change brings another event, and with it another pass.
          if (!isConflict(err) && !isNotFound(err)) throw err;
          changed = true;
        }
      }
      if (!changed) return;
    }
  }
}
