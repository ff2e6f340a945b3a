// Which PersistentVolume a claim binds to, by the rules of the Kubernetes PV controller (index.go and
// the volume helpers): volumes are grouped by their access-mode set and the groups tried smallest first;
// inside a group the smallest volume that fits wins. A volume pre-bound to the claim wins over all.
import type {
  Node,
  NodeSelectorRequirement,
  PersistentVolume,
  PersistentVolumeAccessMode,
  PersistentVolumeClaim,
} from '../api-core.js';
import { selectorFromLabelSelector } from '../labels.js';
import { parseQuantity } from '../quantity.js';
import { ANN_BETA_STORAGE_CLASS } from './annotations.js';

/** The class a claim asks for: the beta annotation, else spec.storageClassName, else "". */
export function claimClass(claim: PersistentVolumeClaim): string {
  return claim.metadata.annotations?.[ANN_BETA_STORAGE_CLASS] ?? claim.spec.storageClassName ?? '';
}

/** The class of a volume: the beta annotation, else spec.storageClassName, else "". */
export function volumeClass(pv: PersistentVolume): string {
  return pv.metadata.annotations?.[ANN_BETA_STORAGE_CLASS] ?? pv.spec.storageClassName ?? '';
}

/** Requested storage in bytes (rounded up), 0 when absent or unparsable. */
export function claimRequestBytes(claim: PersistentVolumeClaim): bigint {
  return toBytes(claim.spec.resources?.requests?.storage);
}

export function volumeCapacityBytes(pv: PersistentVolume): bigint {
  return toBytes(pv.spec.capacity?.storage);
}

function toBytes(q: string | number | undefined): bigint {
  if (q === undefined) return 0n;
  try {
    const n = parseQuantity(q).nanos;
    return (n + 999_999_999n) / 1_000_000_000n;
  } catch {
    return 0n;
  }
}

/** Every mode the claim requests is offered by the volume. */
export function checkAccessModes(claim: PersistentVolumeClaim, pv: PersistentVolume): boolean {
  const offered = new Set(pv.spec.accessModes ?? []);
  return (claim.spec.accessModes ?? []).every((m) => offered.has(m));
}

/** Filesystem unless set to Block. */
export function volumeModeMismatch(claim: PersistentVolumeClaim, pv: PersistentVolume): boolean {
  return (claim.spec.volumeMode ?? 'Filesystem') !== (pv.spec.volumeMode ?? 'Filesystem');
}

/** The volume's claimRef names this claim (and, when the ref carries a uid, the same uid). */
export function isVolumeBoundToClaim(pv: PersistentVolume, claim: PersistentVolumeClaim): boolean {
  const ref = pv.spec.claimRef;
  if (!ref) return false;
  if (ref.name !== claim.metadata.name || (ref.namespace ?? '') !== (claim.metadata.namespace ?? ''))
    return false;
  return !ref.uid || ref.uid === claim.metadata.uid;
}

function matchRequirement(r: NodeSelectorRequirement, value: string | undefined): boolean {
  const vals = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && vals.includes(value);
    case 'NotIn':
      return value === undefined || !vals.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
      return value !== undefined && Number(value) > Number(vals[0]);
    case 'Lt':
      return value !== undefined && Number(value) < Number(vals[0]);
    default:
      return false;
  }
}

/** The volume's required node affinity admits the node (no affinity admits every node). */
export function volumeNodeAffinityMatches(pv: PersistentVolume, node: Node): boolean {
  const terms = pv.spec.nodeAffinity?.required?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return true;
  const labels = node.metadata.labels ?? {};
  return terms.some(
    (t) =>
      (t.matchExpressions?.length || t.matchFields?.length) &&
      (t.matchExpressions ?? []).every((r) => matchRequirement(r, labels[r.key])) &&
      (t.matchFields ?? []).every((r) =>
        matchRequirement(r, r.key === 'metadata.name' ? node.metadata.name : undefined),
      ),
  );
}

export interface MatchOptions {
  /** With a node (the scheduler's path), only volumes whose node affinity admits it. */
  node?: Node;
  /** The claim's class is WaitForFirstConsumer: without a node only pre-bound volumes are taken. */
  delayBinding?: boolean;
  /** Volume names to leave out (already chosen for another claim). */
  excluded?: Set<string>;
}

/** The best volume in one access-mode group for the claim, or undefined (FindMatchingVolume). */
export function findMatchingVolume(
  claim: PersistentVolumeClaim,
  volumes: readonly PersistentVolume[],
  opts: MatchOptions = {},
): PersistentVolume | undefined {
  const requested = claimRequestBytes(claim);
  const cls = claimClass(claim);
  let selector: ReturnType<typeof selectorFromLabelSelector> | undefined;
  try {
    selector = selectorFromLabelSelector(claim.spec.selector);
  } catch {
    return undefined; // an invalid selector matches nothing
  }
  let best: PersistentVolume | undefined;
  let bestBytes = 0n;
  for (const pv of volumes) {
    if (opts.excluded?.has(pv.metadata.name!)) continue;
    if (pv.metadata.deletionTimestamp) continue;
    const bytes = volumeCapacityBytes(pv);
    if (volumeModeMismatch(claim, pv)) continue;
    if (isVolumeBoundToClaim(pv, claim)) {
      // Pre-bound to this claim: take it if it fits, ignoring the selector (the user chose it).
      if (bytes < requested) continue;
      if (volumeClass(pv) !== cls) continue;
      if (!checkAccessModes(claim, pv)) continue;
      if (opts.node && !volumeNodeAffinityMatches(pv, opts.node)) continue;
      return pv;
    }
    // The scheduler binds WaitForFirstConsumer claims once it knows the node.
    if (!opts.node && opts.delayBinding) continue;
    if ((pv.status?.phase ?? 'Pending') !== 'Available') continue;
    if (pv.spec.claimRef) continue;
    if (bytes < requested) continue;
    if (!selector.matches(pv.metadata.labels)) continue;
    if (volumeClass(pv) !== cls) continue;
    if (opts.node && !volumeNodeAffinityMatches(pv, opts.node)) continue;
    if (!checkAccessModes(claim, pv)) continue;
    if (!best || bytes < bestBytes) {
      best = pv;
      bestBytes = bytes;
    }
  }
  return best;
}

const modeKey = (modes: readonly PersistentVolumeAccessMode[] | undefined) =>
  [...new Set(modes ?? [])].sort().join(',');

/**
 * The volume to bind the claim to (findBestMatchForClaim): volumes grouped by access-mode set, groups
 * offering every requested mode tried in order of fewest modes, first match wins.
 */
export function findBestMatchForClaim(
  claim: PersistentVolumeClaim,
  volumes: readonly PersistentVolume[],
  opts: MatchOptions = {},
): PersistentVolume | undefined {
  const groups = new Map<string, PersistentVolume[]>();
  for (const pv of volumes) {
    const k = modeKey(pv.spec.accessModes);
    const g = groups.get(k);
    if (g) g.push(pv);
    else groups.set(k, [pv]);
  }
  const wanted = claim.spec.accessModes ?? [];
  const candidates = [...groups.entries()]
    .map(([k, vols]) => ({ modes: k ? k.split(',') : [], vols }))
    .filter((g) => wanted.every((m) => g.modes.includes(m)))
    .sort((a, b) => a.modes.length - b.modes.length || a.modes.join(',').localeCompare(b.modes.join(',')));
  for (const g of candidates) {
    const v = findMatchingVolume(claim, g.vols, opts);
    if (v) return v;
  }
  return undefined;
}

/** Why a pre-bound volume cannot serve the claim, or undefined (checkVolumeSatisfyClaim). */
export function checkVolumeSatisfyClaim(
  pv: PersistentVolume,
  claim: PersistentVolumeClaim,
): string | undefined {
  if (volumeCapacityBytes(pv) < claimRequestBytes(claim)) return 'requested PV is too small';
  if (volumeClass(pv) !== claimClass(claim)) return 'storageClassName does not match';
  if (volumeModeMismatch(claim, pv)) return 'incompatible volumeMode';
  if (!checkAccessModes(claim, pv)) return 'incompatible accessMode';
  return undefined;
}
