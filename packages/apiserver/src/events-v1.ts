// events.k8s.io/v1 Event: the core/v1 Events of the store, served under the newer group's field names, as
// kube-apiserver serves both from one storage. Requests for the group get this resource's KindInfo and a
// Store that converts at its edge (regarding ⇄ involvedObject, note ⇄ message, reportingController ⇄
// reportingComponent, deprecated* ⇄ the legacy fields), so reads, writes, patches (applied to the
// events.k8s.io form), watches and Tables all go through the generic REST code unchanged. Creates and
// updates are validated as upstream validates writes through events.k8s.io/v1 (most fields immutable).
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

const unset = (v: unknown) => v === undefined || v === null || v === '' || v === 0 || (typeof v === 'object' && Object.values(v as object).every(unset));
const invalid = (field: string, value: unknown, detail: string): StatusCause => ({
  field,
  type: 'FieldValueInvalid',
  message: `Invalid value: ${typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value ?? '')}: ${detail}`,
});
const required = (field: string): StatusCause => ({ field, type: 'FieldValueRequired', message: 'Required value' });

/**
 * What upstream checks of an Event written through events.k8s.io/v1 (ValidateEventCreate/Update with that
 * request version), on the core form and with the core field names in the causes, as upstream reports them.
 */
function eventChecks(e: Event): StatusCause[] {
  const causes: StatusCause[] = [];
  const ns = e.metadata?.namespace ?? '';
  if (!e.involvedObject?.namespace && ns !== 'default' && ns !== 'kube-system')
    causes.push(invalid('involvedObject.namespace', e.involvedObject?.namespace ?? '', 'does not match event.namespace'));
  if (!e.reportingComponent) causes.push(required('reportingController'));
  if (!e.reportingInstance) causes.push(required('reportingInstance'));
  else if (e.reportingInstance.length > 128) causes.push(invalid('reportingInstance', '', 'can have at most 128 characters'));
  if (!e.action) causes.push(required('action'));
  else if (e.action.length > 128) causes.push(invalid('action', '', 'can have at most 128 characters'));
  if (!e.reason) causes.push(required('reason'));
  else if (e.reason.length > 128) causes.push(invalid('reason', '', 'can have at most 128 characters'));
  if ((e.message ?? '').length > 1024) causes.push(invalid('message', '', 'can have at most 1024 characters'));
  return causes;
}

function seriesChecks(e: Event): StatusCause[] {
  const series = (e as { series?: { count?: number; lastObservedTime?: string } }).series;
  if (!series) return [];
  const causes: StatusCause[] = [];
  if ((series.count ?? 0) < 2) causes.push(invalid('series.count', '', 'should be at least 2'));
  if (!series.lastObservedTime) causes.push(required('series.lastObservedTime'));
  return causes;
}

function validateCreate(e: Event): void {
  const causes = [...eventChecks(e), ...seriesChecks(e)];
  if (!e.eventTime) causes.push(required('eventTime'));
  if (e.type !== 'Normal' && e.type !== 'Warning') causes.push(invalid('type', '', `has invalid value: ${e.type ?? ''}`));
  for (const field of ['firstTimestamp', 'lastTimestamp', 'count', 'source'] as const)
    if (!unset(e[field])) causes.push(invalid(field, '', 'needs to be unset'));
  if (causes.length) throw new InvalidError('Event', e.metadata?.name ?? '', EVENTS_GROUP, causes);
}

/** A MicroTime as whole microseconds since the epoch (digits past the sixth are dropped). */
function microseconds(t: unknown): string {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(.*)$/.exec(String(t ?? ''));
  if (!m) return String(t ?? '');
  return `${Date.parse(`${m[1]}${m[3]}`)}.${(m[2] ?? '').padEnd(6, '0').slice(0, 6)}`;
}

/** Fields an update through the group may not change (series, and metadata, may). */
const IMMUTABLE = ['involvedObject', 'reason', 'message', 'source', 'firstTimestamp', 'lastTimestamp', 'count', 'type', 'eventTime', 'action', 'related', 'reportingComponent', 'reportingInstance'] as const;

function validateUpdate(next: Event, old: Event): void {
  const causes = eventChecks(next);
  const same = (a: unknown, b: unknown) => (unset(a) && unset(b)) || JSON.stringify(a) === JSON.stringify(b);
  if (!same((next as { series?: unknown }).series, (old as { series?: unknown }).series)) causes.push(...seriesChecks(next));
  for (const field of IMMUTABLE) {
    if (same(next[field as keyof Event], old[field as keyof Event])) continue;
    // eventTime may differ below the microsecond (clients that truncate, or not).
    if (field === 'eventTime' && microseconds(next.eventTime) === microseconds(old.eventTime)) continue;
    causes.push(invalid(field === 'reportingComponent' ? 'reportingController' : field, next[field as keyof Event], 'field is immutable'));
  }
  if (causes.length) throw new InvalidError('Event', next.metadata?.name ?? '', EVENTS_GROUP, causes);
}

function convertWatch(w: Watch): Watch {
  const convert = (ev: WatchEvent): WatchEvent => (ev.type === 'ERROR' ? ev : ({ type: ev.type, object: eventToV1(ev.object) } as WatchEvent));
  return {
    get stopped() {
      return w.stopped;
    },
    stop: () => w.stop(),
    subscribe: (sink) => w.subscribe({ event: (ev) => sink.event(convert(ev)), end: (err) => sink.end(err) }),
    resume: () => w.resume(),
    async *[Symbol.asyncIterator]() {
      for await (const ev of w) yield convert(ev);
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
      const core = eventFromV1(obj);
      validateCreate(core);
      return eventToV1(await store.create(core, opts)) as never;
    },
    get: async (_kind, namespace, name) => eventToV1(await store.get('Event', namespace, name)) as never,
    list: (async (_kind: string, opts?: Parameters<Store['list']>[1]) => list(opts)) as Store['list'],
    update: async (obj, opts) => {
      const core = eventFromV1(obj);
      validateUpdate(core, await store.get('Event', core.metadata.namespace, core.metadata.name ?? ''));
      return eventToV1(await store.update(core, opts)) as never;
    },
    updateStatus: (obj, opts) => view.update(obj, opts),
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
