// Deep freezing of stored objects: what the store hands out is shared, so nobody may change it.

export function deepFreeze<T>(o: T): T {
  if (o !== null && typeof o === 'object' && !Object.isFrozen(o)) freezeTree(o as object);
  return o;
}

/** Freezes children before their parent, so a frozen object here is frozen all the way down. */
function freezeTree(o: object): void {
  // (A frozen child is such a subtree, shared with an earlier version of the object: not walked again.)
  if (Array.isArray(o)) {
    for (let i = 0; i < o.length; i++) {
      const v = o[i];
      if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) freezeTree(v);
    }
  } else {
    for (const k in o) {
      const v = (o as Record<string, unknown>)[k];
      if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) freezeTree(v);
    }
  }
  Object.freeze(o);
}
