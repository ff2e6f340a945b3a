/**
 * Routes and the decision process (RFC 4271 §9.1, with RFC 4456 §9 tie-breaks for reflected routes).
 */
import type { Prefix } from '@kemu/ip';
import { type Afi, compareAddresses, routerIdToNumber } from './router-id.js';
import {
  AsPathSegmentType,
  type AsPathSegment,
  type PathAttributes,
  type UnknownAttribute,
} from './message.js';

/** Where a route came from: one of our sessions, or this speaker itself (`--advertise`). */
export interface RouteSource {
  /** Neighbour address, or undefined for a locally originated route. */
  address?: string;
  name?: string;
  ibgp: boolean;
  rrClient: boolean;
  /** The neighbour's BGP identifier. */
  routerId: string;
  as: number;
}

export interface Route {
  /** Canonical prefix text, e.g. `10.244.1.0/26`. */
  prefix: string;
  pfx: Prefix;
  afi: Afi;
  nextHop: string;
  origin: number;
  asPath: AsPathSegment[];
  med?: number;
  localPref?: number;
  atomicAggregate?: boolean;
  aggregator?: { as: number; address: string };
  communities?: number[];
  originatorId?: string;
  clusterList?: string[];
  unknown?: UnknownAttribute[];
  source: RouteSource;
  /** @internal exports of this route, cached per export class so many peers share one encoding. */
  exportCache?: Map<string, unknown>;
  /** @internal the most recent export class and its result: a reflector's clients all share one. */
  lastExportClass?: string;
  lastExport?: unknown;
}

export function asPathLength(segs: AsPathSegment[]): number {
  let n = 0;
  for (const s of segs) {
    if (s.type === AsPathSegmentType.AsSequence) n += s.asns.length;
    else if (s.type === AsPathSegmentType.AsSet) n += 1;
    // Confederation segments do not count (RFC 5065 §5.3).
  }
  return n;
}

export function flattenAsPath(segs: AsPathSegment[]): number[] {
  const out: number[] = [];
  for (const s of segs) out.push(...s.asns);
  return out;
}

function neighborAs(r: Route): number | undefined {
  for (const s of r.asPath) {
    if (s.type === AsPathSegmentType.AsSequence && s.asns.length > 0) return s.asns[0];
    if (s.type === AsPathSegmentType.AsSet) return undefined;
  }
  return undefined;
}

const DEFAULT_LOCAL_PREF = 100;

/**
 * Negative when `a` is preferred over `b`. Order: highest LOCAL_PREF, locally originated, shortest
 * AS_PATH, lowest ORIGIN, lowest MED (between routes from the same neighbouring AS), eBGP over iBGP,
 * lowest router ID (ORIGINATOR_ID for reflected routes), shortest CLUSTER_LIST, lowest peer address.
 */
export function compareRoutes(a: Route, b: Route): number {
  const lpA = a.source.ibgp || !a.source.address ? (a.localPref ?? DEFAULT_LOCAL_PREF) : DEFAULT_LOCAL_PREF;
  const lpB = b.source.ibgp || !b.source.address ? (b.localPref ?? DEFAULT_LOCAL_PREF) : DEFAULT_LOCAL_PREF;
  if (lpA !== lpB) return lpB - lpA;
  const localA = a.source.address === undefined ? 0 : 1;
  const localB = b.source.address === undefined ? 0 : 1;
  if (localA !== localB) return localA - localB;
  const lenA = asPathLength(a.asPath);
  const lenB = asPathLength(b.asPath);
  if (lenA !== lenB) return lenA - lenB;
  if (a.origin !== b.origin) return a.origin - b.origin;
  const nA = neighborAs(a);
  if (nA !== undefined && nA === neighborAs(b)) {
    const mA = a.med ?? 0;
    const mB = b.med ?? 0;
    if (mA !== mB) return mA - mB;
  }
  const eA = a.source.ibgp ? 1 : 0;
  const eB = b.source.ibgp ? 1 : 0;
  if (eA !== eB) return eA - eB;
  const oA = a.originatorId ?? a.source.routerId;
  const oB = b.originatorId ?? b.source.routerId;
  if (oA !== oB) {
    const idA = routerIdToNumber(oA) ?? 0;
    const idB = routerIdToNumber(oB) ?? 0;
    if (idA !== idB) return idA - idB;
  }
  const clA = a.clusterList?.length ?? 0;
  const clB = b.clusterList?.length ?? 0;
  if (clA !== clB) return clA - clB;
  return compareAddresses(a.source.address ?? '', b.source.address ?? '');
}

export function selectBest(candidates: Iterable<Route>): Route | undefined {
  let best: Route | undefined;
  for (const r of candidates) {
    if (!best || compareRoutes(r, best) < 0) best = r;
  }
  return best;
}

/** The JSON form of a Loc-RIB entry (what `--rib-out` writes and `locRib()` returns). */
export interface RibEntry {
  prefix: string;
  nextHop: string;
  asPath: number[];
  /** The neighbour the route was learned from; null for our own routes. */
  peer: string | null;
  origin: 'IGP' | 'EGP' | 'INCOMPLETE';
  localPref?: number;
  med?: number;
  originatorId?: string;
  clusterList?: string[];
  communities?: string[];
}

export function toRibEntry(r: Route): RibEntry {
  const e: RibEntry = {
    prefix: r.prefix,
    nextHop: r.nextHop,
    asPath: flattenAsPath(r.asPath),
    peer: r.source.address ?? null,
    origin: (['IGP', 'EGP', 'INCOMPLETE'] as const)[r.origin] ?? 'INCOMPLETE',
  };
  if (r.localPref !== undefined) e.localPref = r.localPref;
  if (r.med !== undefined) e.med = r.med;
  if (r.originatorId) e.originatorId = r.originatorId;
  if (r.clusterList?.length) e.clusterList = r.clusterList;
  if (r.communities?.length) e.communities = r.communities.map((c) => `${c >>> 16}:${c & 0xffff}`);
  return e;
}

/** Copies the attributes of a route into the wire form (caller adjusts for the export). */
export function routeAttributes(r: Route): PathAttributes {
  const a: PathAttributes = { origin: r.origin, asPath: r.asPath };
  if (r.atomicAggregate) a.atomicAggregate = true;
  if (r.aggregator) a.aggregator = r.aggregator;
  if (r.communities) a.communities = r.communities;
  if (r.unknown) a.unknown = r.unknown;
  return a;
}
