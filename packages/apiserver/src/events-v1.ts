// events.k8s.io/v1 Event: the core/v1 Events of the store, served under the newer group's field names, as
// kube-apiserver serves both from one storage. Requests for the group get this resource's KindInfo and a
// Store that converts at its edge (regarding ⇄ involvedObject, note ⇄ message, reportingController ⇄
// reportingComponent, deprecated* ⇄ the legacy fields), so reads, writes, patches (applied to the
// events.k8s.io form), watches and Tables all go through the generic REST code unchanged. Creates are
// validated as upstream validates an events.k8s.io/v1 create.
import {
  type Event,
  InvalidError,
  type KindInfo,
  type KubeList,
  type KubeObject,
  kindInfo,
  type StatusCause,
  type Store,
  type Watch,
  type WatchEvent,
} from '@kemu/core';
import type { ResourceInfo } from './resource-catalog.js';
import { printerFor, registerPrinter } from './tables/index.js';

export const EVENTS_GROUP = 'events.k8s.io';
export const EVENTS_V1 = `${EVENTS_GROUP}/v1`;

/** The resource as routing and rendering see it: its own group/version, the core kind's storage. */
export function eventsV1Kind(): KindInfo {
  const core = kindInfo('Event');
  return { ...core, kind: 'Event', apiVersion: EVENTS_V1, group: EVENTS_GROUP, version: 'v1', resource: 'events', fields: {} };
}

/** Discovery's view of the resource (short name `ev`, as upstream). */
export function eventsV1Resource(): ResourceInfo {
  const verbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
  return { info: eventsV1Kind(), singularName: 'event', shortNames: ['ev'], categories: [], verbs, subresources: [] };
}

/** core/v1 field → events.k8s.io/v1 field; everything else keeps its name. */
const RENAMED: readonly (readonly [string, string])[] = [
  ['involvedObject', 'regarding'],
  ['message', 'note'],
  ['reportingComponent', 'reportingController'],
  ['source', 'deprecatedSource'],
  ['firstTimestamp', 'deprecatedFirstTimestamp'],
  ['lastTimestamp', 'deprecatedLastTimestamp'],
  ['count', 'deprecatedCount'],
];
const TO_V1 = new Map(RENAMED);
const FROM_V1 = new Map(RENAMED.map(([c, v]) => [v, c]));

function rename(obj: Record<string, unknown>, names: ReadonlyMap<string, string>, apiVersion: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[names.get(k) ?? k] = v;
  out.apiVersion = apiVersion;
  out.kind = 'Event';
  return out;
}

/** A stored core/v1 Event in its events.k8s.io/v1 form. */
export function eventToV1(e: KubeObject): KubeObject {
  return rename(e as unknown as Record<string, unknown>, TO_V1, EVENTS_V1) as unknown as KubeObject;
}

/** An events.k8s.io/v1 Event in the core/v1 form the store keeps. */
export function eventFromV1(e: KubeObject): Event {
  return rename(e as unknown as Record<string, unknown>, FROM_V1, 'v1') as unknown as Event;
}

/** Field selector keys of the group, as the core kind's (upstream's field label conversion). */
function fieldSelectorToCore(sel: unknown): unknown {
  if (typeof sel !== 'string') return sel;
  return sel
    .split(',')
    .map((term) => {
      const m = /^\s*([^=!\s]+)(.*)$/s.exec(term);
      if (!m) return term;
      const [, key, rest] = m;
      const dot = key.indexOf('.');
      const head = dot < 0 ? key : key.slice(0, dot);
      const core = FROM_V1.get(head);
      if (!core) return term;
      // deprecatedSource is selected as `source` (its component), as on core/v1.
      return `${core === 'source' ? 'source' : core + (dot < 0 ? '' : key.slice(dot))}${rest}`;
    })
    .join(',');
}

/** What upstream requires of an events.k8s.io/v1 create beyond the core kind's checks. */
function validateCreate(e: KubeObject): void {
  const o = e as unknown as Record<string, unknown>;
  const causes: StatusCause[] = [];
  const required = (field: string) => {
    if (o[field] === undefined || o[field] === null || o[field] === '') causes.push({ field, type: 'FieldValueRequired', message: 'Required value' });
  };
  required('eventTime');
  if (o.type !== 'Normal' && o.type !== 'Warning')
    causes.push({ field: 'type', type: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(o.type ?? '')}: has invalid value: ${String(o.type ?? '')}` });
  for (const field of ['deprecatedFirstTimestamp', 'deprecatedLastTimestamp', 'deprecatedCount', 'deprecatedSource']) {
    const v = o[field];
    const set = v !== undefined && v !== null && v !== 0 && v !== '' && !(typeof v === 'object' && Object.values(v as object).every((x) => !x));
    if (set) causes.push({ field, type: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(v)}: needs to be unset` });
  }
  required('reportingController');
  required('reportingInstance');
  required('action');
  required('reason');
  if (typeof o.note === 'string' && Buffer.byteLength(o.note) > 1024)
    causes.push({ field: 'note', type: 'FieldValueTooLong', message: 'Too long: may not be more than 1024 bytes' });
  if (causes.length) throw new InvalidError('Event', e.metadata?.name ?? '', EVENTS_GROUP, causes);
}

function convertWatch(w: Watch): Watch {
  return {
    get stopped() {
      return w.stopped;
    },
    stop: () => w.stop(),
    async *[Symbol.asyncIterator]() {
      for await (const ev of w) {
        if (ev.type === 'ERROR') yield ev;
        else yield { type: ev.type, object: eventToV1(ev.object) } as WatchEvent;
      }
    },
  };
}

/**
 * The store as the events.k8s.io/v1 resource sees it. Only the Event kind goes through it; the REST layer
 * patches with get + update, so `patch` and `bind` are not part of this view.
 */
export function eventsV1Store(store: Store): Store {
  const list = async (opts: Parameters<Store['list']>[1] = {}) => {
    const l = await store.list('Event', { ...opts, fieldSelector: fieldSelectorToCore(opts.fieldSelector) as string | undefined });
    return { ...l, apiVersion: EVENTS_V1, kind: 'EventList', items: l.items.map(eventToV1) } as KubeList;
  };
  const view: Store = {
    create: async (obj, opts) => {
      validateCreate(obj);
      return eventToV1(await store.create(eventFromV1(obj), opts)) as never;
    },
    get: async (_kind, namespace, name) => eventToV1(await store.get('Event', namespace, name)) as never,
    list: (async (_kind: string, opts?: Parameters<Store['list']>[1]) => list(opts)) as Store['list'],
    update: async (obj, opts) => eventToV1(await store.update(eventFromV1(obj), opts)) as never,
    updateStatus: async (obj, opts) => eventToV1(await store.update(eventFromV1(obj), opts)) as never,
    patch: () => Promise.reject(new Error('events.k8s.io: patches are applied by the REST layer')),
    delete: async (_kind, namespace, name, opts) => eventToV1(await store.delete('Event', namespace, name, opts)) as never,
    watch: (async (_kind: string, opts?: Parameters<Store['watch']>[1]) =>
      convertWatch(await store.watch('Event', { ...opts, fieldSelector: fieldSelectorToCore(opts?.fieldSelector) as string | undefined }))) as Store['watch'],
    bind: () => Promise.reject(new Error('events.k8s.io has no binding')),
    resourceVersion: () => store.resourceVersion(),
    close: async () => {},
  };
  return view;
}

// The same columns as core/v1 Events (upstream prints both groups from one internal type).
registerPrinter(EVENTS_V1, 'Event', {
  get columns() {
    return printerFor('v1', 'Event').columns;
  },
  row: (o, now) => printerFor('v1', 'Event').row(eventFromV1(o), now),
});
