// The deterministic operation sequences shared by the crash-test child and its checker. Each writer owns
// its own keys, so concurrent writers never race on a key and each has one well-defined history.
export interface CrashOp {
  action: 'create' | 'update' | 'delete';
  key: string;
  value: string;
}

function rand(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Operation `i` of writer `w`, given a way to read the current value of a key (undefined when absent). */
export async function crashOp(w: number, i: number, current: (key: string) => Promise<string | undefined>): Promise<CrashOp> {
  const r = rand(Math.imul(i + 1, 2654435761) ^ Math.imul(w + 1, 40503));
  const key = `w${w}-k${Math.floor(r() * 12)}`;
  const value = `v${i}`;
  const cur = await current(key);
  if (cur === undefined) return { action: 'create', key, value };
  return { action: r() < 0.65 ? 'update' : 'delete', key, value };
}

/** Apply writer `w`'s op `i` to a model map. */
export async function applyToModel(model: Map<string, string>, w: number, i: number): Promise<void> {
  const op = await crashOp(w, i, async (k) => model.get(k));
  if (op.action === 'delete') model.delete(op.key);
  else model.set(op.key, op.value);
}
