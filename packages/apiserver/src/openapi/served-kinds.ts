// The kinds the OpenAPI documents describe: those with both a schema and a registered resource, grouped by
// the path their group/version is served under (`api/v1`, `apis/storage.k8s.io/v1`).
import { type KindInfo, lookupKind } from '@kemu/core';
import { kindSchemas } from '@kemu/core/schema';
import { EVENTS_V1, eventsV1Kind } from '../events-v1.js';

export interface ServedKind {
  info: KindInfo;
  /** The kind's schema type name. */
  type: string;
}

/** `api/v1` for the core group, `apis/<group>/<version>` otherwise (no leading slash, as the v3 index keys). */
export function groupVersionPath(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

/** Served kinds by group-version path, in a stable order. */
export function servedKinds(): Map<string, ServedKind[]> {
  const out = new Map<string, ServedKind[]>();
  for (const k of kindSchemas()) {
    // events.k8s.io/v1 Event is the core kind's storage under another group (events-v1.ts).
    const info = k.apiVersion === EVENTS_V1 && k.kind === 'Event' ? eventsV1Kind() : lookupKind(k.kind);
    if (!info || info.apiVersion !== k.apiVersion) continue;
    const key = groupVersionPath(info.group, info.version);
    let list = out.get(key);
    if (!list) out.set(key, (list = []));
    list.push({ info, type: k.type });
  }
  return new Map([...out.entries()].sort(([a], [b]) => a.localeCompare(b)));
}
