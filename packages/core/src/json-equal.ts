// Equality of JSON values as they would serialize: member order does not count, and a member whose value
// is undefined is the same as one that is absent. No copies are made, so it is cheap on hot paths (the
// store's generation check, the kubelet's "is this status new" check on every pod resync).

export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  const isArray = Array.isArray(a);
  if (isArray !== Array.isArray(b)) return false;
  if (isArray) {
    const aa = a as unknown[];
    const bb = b as unknown[];
    if (aa.length !== bb.length) return false;
    for (let i = 0; i < aa.length; i++) if (!jsonEqual(aa[i], bb[i])) return false;
    return true;
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  // Every defined member of `a` equals the same member of `b` (so is defined there, and own: JSON objects
  // have no inherited data); then equal counts of defined members mean the same members.
  let defined = 0;
  for (const k of Object.keys(ra)) {
    const v = ra[k];
    if (v === undefined) continue;
    defined++;
    if (!Object.hasOwn(rb, k) || !jsonEqual(v, rb[k])) return false;
  }
  for (const k of Object.keys(rb)) if (rb[k] !== undefined) defined--;
  return defined === 0;
}
