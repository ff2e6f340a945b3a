// Per-kind behaviour for kinds defined outside the core switch statements: defaulting, initial status,
// validation on create and update, and write hooks run by the store (resource allocation such as a
// Service's cluster IP and node ports). `registerKindHooks` is the extension point; defaults.ts,
// validation.ts and store-base.ts call `kindHooks(kind)`.
import type { KubeObject } from './api-meta.js';
import type { FieldErrors } from './field-errors.js';

/** What a write hook can see of the store it runs in. */
export interface WriteHookContext {
  /** The store itself: hooks keep per-store state (allocators) keyed on it. */
  readonly owner: object;
  /** Every stored object of a kind (used to rebuild allocator state, as the API server's repair loops do). */
  listAll(kind: string): Promise<KubeObject[]>;
  /** Store options given to the backend (e.g. the service cluster IP range). */
  readonly options: Readonly<Record<string, unknown>>;
}

/** What a write hook returns: `undo` when the write does not land, `commit` once it has. */
export interface WriteEffect {
  undo?(): void;
  commit?(): void;
}

export interface KindHooks {
  /** API-server defaulting; mutates the object. */
  defaults?(obj: KubeObject): void;
  /** Status a freshly created object starts with. */
  initialStatus?(obj: KubeObject): void;
  /** Before an update is defaulted-and-validated: carry over what the server filled in (allocations). */
  prepareForUpdate?(next: KubeObject, prev: KubeObject): void;
  /** Field errors of the object on its own (create and update). */
  validate?(e: FieldErrors, obj: KubeObject): void;
  /** Field errors of an update beyond `validate` (immutable fields). */
  validateUpdate?(e: FieldErrors, next: KubeObject, prev: KubeObject): void;
  /** Runs after validation, before a create is persisted; may allocate and fill fields. */
  beforeCreate?(ctx: WriteHookContext, obj: KubeObject): Promise<WriteEffect | undefined>;
  /** Runs after validation, before an update is persisted. */
  beforeUpdate?(ctx: WriteHookContext, next: KubeObject, prev: KubeObject): Promise<WriteEffect | undefined>;
  /** Runs once the object is gone from the store. */
  afterDelete?(ctx: WriteHookContext, obj: KubeObject): void;
}

const hooks = new Map<string, KindHooks>();

/** Register (or extend) the hooks of a kind. Later registrations override the same hook. */
export function registerKindHooks(kind: string, h: KindHooks): void {
  hooks.set(kind, { ...hooks.get(kind), ...h });
}

/** The hooks of a kind, or undefined. */
export function kindHooks(kind: string | undefined): KindHooks | undefined {
  return kind === undefined ? undefined : hooks.get(kind);
}
