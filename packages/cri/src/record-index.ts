// The runtime's sandbox and container records by ID, with an index of their labels and of the group each
// belongs to (a container's sandbox), so a list filtered by a label selector or a sandbox reads only the
// records that can match instead of every record on the node. CRI labels never change after creation.
import { matchesLabels } from './labels.js';

export class RecordIndex<R extends { id: string }> extends Map<string, R> {
  /** label key -> label value -> ids. */
  private readonly byLabel = new Map<string, Map<string, Set<string>>>();
  private readonly byGroup = new Map<string, Set<string>>();

  constructor(
    private readonly labelsOf: (r: R) => Record<string, string> | undefined,
    private readonly groupOf?: (r: R) => string,
  ) {
    super();
  }

  override set(id: string, r: R): this {
    const old = super.get(id);
    if (old) this.unindex(id, old);
    super.set(id, r);
    for (const [k, v] of Object.entries(this.labelsOf(r) ?? {})) {
      let values = this.byLabel.get(k);
      if (!values) this.byLabel.set(k, (values = new Map()));
      let ids = values.get(v);
      if (!ids) values.set(v, (ids = new Set()));
      ids.add(id);
    }
    const g = this.groupOf?.(r);
    if (g !== undefined) {
      let ids = this.byGroup.get(g);
      if (!ids) this.byGroup.set(g, (ids = new Set()));
      ids.add(id);
    }
    return this;
  }

  override delete(id: string): boolean {
    const old = super.get(id);
    if (!old) return false;
    this.unindex(id, old);
    return super.delete(id);
  }

  override clear(): void {
    this.byLabel.clear();
    this.byGroup.clear();
    super.clear();
  }

  /** The records whose labels hold every entry of the selector (all records for an empty selector). */
  matching(selector: Record<string, string> | undefined): R[] {
    const entries = Object.entries(selector ?? {});
    if (entries.length === 0) return [...this.values()];
    let smallest: Set<string> | undefined;
    for (const [k, v] of entries) {
      const ids = this.byLabel.get(k)?.get(v);
      if (!ids) return [];
      if (!smallest || ids.size < smallest.size) smallest = ids;
    }
    const out: R[] = [];
    for (const id of smallest!) {
      const r = super.get(id)!;
      if (matchesLabels(this.labelsOf(r), selector)) out.push(r);
    }
    return out;
  }

  /** The records of one group (a sandbox's containers). */
  inGroup(group: string): R[] {
    const ids = this.byGroup.get(group);
    return ids ? [...ids].map((id) => super.get(id)!) : [];
  }

  private unindex(id: string, r: R): void {
    for (const [k, v] of Object.entries(this.labelsOf(r) ?? {})) {
      const values = this.byLabel.get(k);
      const ids = values?.get(v);
      if (!ids) continue;
      ids.delete(id);
      if (ids.size === 0) {
        values!.delete(v);
        if (values!.size === 0) this.byLabel.delete(k);
      }
    }
    const g = this.groupOf?.(r);
    if (g === undefined) return;
    const ids = this.byGroup.get(g);
    if (!ids) return;
    ids.delete(id);
    if (ids.size === 0) this.byGroup.delete(g);
  }
}
