// Filter statuses of one scheduling attempt, by node name. A pod that fits nowhere is rejected by every
// node, and on a large cluster inserting thousands of entries into a Map costs more than the filters
// themselves; this Map keeps them in an array by the node's position in the snapshot list instead.
import type { NodeInfo } from './node-info.js';
import type { Status } from './status.js';

export class NodeStatusMap extends Map<string, Status> {
  /** The snapshot's node list the positions refer to. */
  readonly nodes: readonly NodeInfo[];
  private readonly positions: ReadonlyMap<string, number>;
  private readonly dense: (Status | undefined)[];
  private count = 0;
  /** Names outside the node list (rare: callers may record any name). */
  private others: Map<string, Status> | null = null;

  constructor(nodes: readonly NodeInfo[], positions: ReadonlyMap<string, number>) {
    super();
    this.nodes = nodes;
    this.positions = positions;
    this.dense = new Array<Status | undefined>(nodes.length);
  }

  /** Status of the node at position `i` of `nodes`. */
  at(i: number): Status | undefined {
    return this.dense[i];
  }

  setAt(i: number, s: Status): void {
    if (this.dense[i] === undefined) this.count++;
    this.dense[i] = s;
  }

  override get size(): number {
    return this.count + (this.others?.size ?? 0);
  }

  override get(name: string): Status | undefined {
    const i = this.positions.get(name);
    return i === undefined ? this.others?.get(name) : this.dense[i];
  }

  override has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  override set(name: string, s: Status): this {
    const i = this.positions.get(name);
    if (i === undefined) (this.others ??= new Map()).set(name, s);
    else this.setAt(i, s);
    return this;
  }

  override delete(name: string): boolean {
    const i = this.positions.get(name);
    if (i === undefined) return this.others?.delete(name) ?? false;
    if (this.dense[i] === undefined) return false;
    this.dense[i] = undefined;
    this.count--;
    return true;
  }

  override clear(): void {
    this.dense.fill(undefined);
    this.count = 0;
    this.others = null;
  }

  /** Each distinct status object with the number of nodes it was recorded for. */
  tally(): Map<Status, number> {
    const out = new Map<Status, number>();
    // Runs of the same status are the rule (shared rejections), so count runs, not entries.
    let run: Status | undefined;
    let len = 0;
    for (let i = 0; i < this.dense.length; i++) {
      const s = this.dense[i];
      if (s === run) len++;
      else {
        if (run !== undefined) out.set(run, (out.get(run) ?? 0) + len);
        run = s;
        len = 1;
      }
    }
    if (run !== undefined) out.set(run, (out.get(run) ?? 0) + len);
    if (this.others) for (const s of this.others.values()) out.set(s, (out.get(s) ?? 0) + 1);
    return out;
  }

  override *entries(): MapIterator<[string, Status]> {
    for (let i = 0; i < this.dense.length; i++) {
      const s = this.dense[i];
      if (s !== undefined) yield [this.nodes[i].name, s];
    }
    if (this.others) yield* this.others.entries();
  }

  override *keys(): MapIterator<string> {
    for (const [k] of this.entries()) yield k;
  }

  override *values(): MapIterator<Status> {
    for (let i = 0; i < this.dense.length; i++) {
      const s = this.dense[i];
      if (s !== undefined) yield s;
    }
    if (this.others) yield* this.others.values();
  }

  override [Symbol.iterator](): MapIterator<[string, Status]> {
    return this.entries();
  }

  override forEach(fn: (value: Status, key: string, map: Map<string, Status>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this);
  }
}

/** Distinct statuses with the number of nodes each was recorded for (cheap for a NodeStatusMap). */
export function tallyStatuses(statuses: Map<string, Status> | Iterable<Status>): Map<Status, number> {
  if (statuses instanceof NodeStatusMap) return statuses.tally();
  const out = new Map<Status, number>();
  for (const s of statuses instanceof Map ? statuses.values() : statuses) out.set(s, (out.get(s) ?? 0) + 1);
  return out;
}
