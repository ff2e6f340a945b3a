import type {
  CycleState,
  Framework,
  PluginFactory,
  PostFilterPlugin,
  PostFilterResult,
  PreFilterPlugin,
} from '../framework.js';
import { type LabelMatcher, labelSelectorMatcher } from '../labels.js';
import type { NodeInfo } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';
import { NodeStatusMap, tallyStatuses } from '../node-statuses.js';
import { Code, Status } from '../status.js';
import type { Pod, PodDisruptionBudget } from '../types.js';
import { DefaultPreemption } from './names.js';

export const MSG_NOT_HELPFUL = 'Preemption is not helpful for scheduling';
export const MSG_NO_VICTIMS = 'No preemption victims found for incoming pod';

export interface DefaultPreemptionArgs {
  minCandidateNodesPercentage?: number;
  minCandidateNodesAbsolute?: number;
}

interface Candidate {
  node: string;
  /** Most important first. */
  victims: PodInfo[];
  pdbViolations: number;
  /** Highest victim priority. */
  top: number;
  /** Sum of victim priorities, each offset by 2^31 so that a longer list never sums lower. */
  sum: number;
  /** Earliest start time among the victims with the highest priority. */
  earliest: number;
}

function candidate(node: string, victims: PodInfo[], pdbViolations: number): Candidate {
  const top = victims[0].priority;
  let sum = 0;
  let earliest = Number.POSITIVE_INFINITY;
  for (const v of victims) {
    sum += v.priority + 2 ** 31;
    if (v.priority === top && v.startTime < earliest) earliest = v.startTime;
  }
  return { node, victims, pdbViolations, top, sum, earliest };
}

/**
 * Whether `a` is a strictly better node to preempt on than `b`: fewer PDB violations, then a lower
 * highest victim priority, a smaller priority sum, fewer victims, a later start of the highest-priority
 * victims. Among equals the earlier candidate stays chosen.
 */
function better(a: Candidate, b: Candidate): boolean {
  if (a.pdbViolations !== b.pdbViolations) return a.pdbViolations < b.pdbViolations;
  if (a.top !== b.top) return a.top < b.top;
  if (a.sum !== b.sum) return a.sum < b.sum;
  if (a.victims.length !== b.victims.length) return a.victims.length < b.victims.length;
  return a.earliest > b.earliest;
}

/**
 * True when no choice of victims among `lower` (a non-empty set none of which a PDB protects) could
 * make a candidate better than `best`: then the node only needs checking for whether it is a candidate
 * at all, not which pods it would lose.
 */
function cannotBeat(lower: PodInfo[], best: Candidate): boolean {
  if (best.pdbViolations > 0) return false;
  let min = Number.POSITIVE_INFINITY;
  for (const p of lower) if (p.priority < min) min = p.priority;
  // Every victim set includes a pod of at least this priority.
  if (min > best.top) return true;
  if (min < best.top || best.victims.length !== 1 || best.sum !== min + 2 ** 31) return false;
  // At best a single victim of priority `min`, tying on sum and count: start time decides, and the
  // earlier candidate wins ties.
  for (const p of lower) if (p.priority === min && !(p.startTime <= best.earliest)) return false;
  return true;
}

/** Higher priority first, then the one running longer. */
export function moreImportant(a: PodInfo, b: PodInfo): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  return a.startTime < b.startTime;
}

/** The order of moreImportant() as a comparator (most important first). */
function byImportance(a: PodInfo, b: PodInfo): number {
  if (a.priority !== b.priority) return a.priority > b.priority ? -1 : 1;
  return a.startTime < b.startTime ? -1 : b.startTime < a.startTime ? 1 : 0;
}

function sortByImportance(pods: PodInfo[]): void {
  if (pods.length > 1) pods.sort(byImportance);
}

/** Histogram message in the scheduler's format: `0/N nodes are available: 2 reason, 3 other.` */
export function nodesAvailableMessage(numAll: number, statuses: Map<string, Status> | Iterable<Status>): string {
  const hist = new Map<string, number>();
  // Rejections share status objects, so count those first and expand their reasons once each.
  for (const [s, n] of tallyStatuses(statuses)) for (const r of s.reasons) hist.set(r, (hist.get(r) ?? 0) + n);
  const parts = [...hist].map(([r, n]) => `${n} ${r}`).sort();
  return `0/${numAll} nodes are available: ${parts.join(', ')}.`;
}

const NO_VICTIMS = Status.unresolvable(MSG_NO_VICTIMS).withPlugin(DefaultPreemption);
const NOT_HELPFUL = Status.unresolvable(MSG_NOT_HELPFUL);

function removeFromNode(
  pfs: PreFilterPlugin[],
  state: CycleState,
  pi: PodInfo,
  n: NodeInfo,
  victim: PodInfo,
): void {
  n.removeLastPod(victim);
  for (let i = 0; i < pfs.length; i++) pfs[i].removePod?.(state, pi, victim, n);
}

/** Tell the PreFilter state that these pods are off the node (the node itself already shows it). */
function trackRemoved(
  pfs: PreFilterPlugin[],
  state: CycleState,
  pi: PodInfo,
  n: NodeInfo,
  victims: PodInfo[],
): void {
  for (let i = 0; i < pfs.length; i++) {
    const pf = pfs[i];
    if (pf.removePod) for (const v of victims) pf.removePod(state, pi, v, n);
  }
}

function addToNode(pfs: PreFilterPlugin[], state: CycleState, pi: PodInfo, n: NodeInfo, p: PodInfo): void {
  n.addPod(p);
  for (let i = 0; i < pfs.length; i++) pfs[i].addPod?.(state, pi, p, n);
}

interface PdbEntry {
  matcher: LabelMatcher;
  /** status.disruptedPods: pods whose eviction the API server already counted. */
  disrupted: Record<string, string> | undefined;
  allowed: number;
}

/** Whether evicting these pods, most important first, would exceed a budget (PDB violations). */
function breaksBudget(pods: PodInfo[], idx: PdbIndex): boolean {
  if (idx.entries.length === 0) return false;
  sortByImportance(pods);
  return splitByPDB(pods, idx).violating.length > 0;
}

/** PDBs grouped by namespace with compiled selectors, so a victim is checked only against its own. */
interface PdbIndex {
  entries: PdbEntry[];
  byNamespace: Map<string, number[]>;
}

function hasKeys(o: object): boolean {
  for (const _ in o) return true;
  return false;
}

const NO_PDBS: PdbIndex = { entries: [], byNamespace: new Map() };
// null: the PDB matches nothing (nil, empty or invalid selector).
const pdbMatchers = new WeakMap<PodDisruptionBudget, LabelMatcher | null>();

function pdbMatcher(pdb: PodDisruptionBudget): LabelMatcher | null {
  let m = pdbMatchers.get(pdb);
  if (m !== undefined) return m;
  try {
    m = labelSelectorMatcher(pdb.spec?.selector);
    // A nil or empty selector selects no pods for a budget (unlike most selectors).
    if (m.everything || m.nothing) m = null;
  } catch {
    m = null;
  }
  pdbMatchers.set(pdb, m);
  return m;
}

export function indexPDBs(pdbs: Iterable<PodDisruptionBudget>): PdbIndex {
  const entries: PdbEntry[] = [];
  const byNamespace = new Map<string, number[]>();
  for (const pdb of pdbs) {
    const matcher = pdbMatcher(pdb);
    if (!matcher) continue;
    const ns = pdb.metadata.namespace ?? 'default';
    const list = byNamespace.get(ns);
    if (list) list.push(entries.length);
    else byNamespace.set(ns, [entries.length]);
    entries.push({ matcher, disrupted: pdb.status?.disruptedPods, allowed: pdb.status?.disruptionsAllowed ?? 0 });
  }
  return entries.length === 0 ? NO_PDBS : { entries, byNamespace };
}

/**
 * Splits pods (in order) by whether evicting them, one after the other, would exceed a budget's
 * disruptionsAllowed. Exported for tests.
 */
export function splitByPDB(pods: PodInfo[], idx: PdbIndex): { violating: PodInfo[]; nonViolating: PodInfo[] } {
  if (idx.entries.length === 0) return { violating: [], nonViolating: pods };
  const allowed = idx.entries.map((e) => e.allowed);
  const violating: PodInfo[] = [];
  const nonViolating: PodInfo[] = [];
  for (const p of pods) {
    let v = false;
    const labels = p.labels;
    // A pod without labels matches no budget, whatever its selector.
    const list = labels && hasKeys(labels) ? idx.byNamespace.get(p.namespace) : undefined;
    if (list && labels) {
      for (const i of list) {
        const e = idx.entries[i];
        if (!e.matcher(labels)) continue;
        // Already counted by the API server: evicting it again costs the budget nothing.
        if (e.disrupted && Object.hasOwn(e.disrupted, p.pod.metadata.name ?? '')) continue;
        allowed[i]--;
        if (allowed[i] < 0) v = true;
      }
    }
    (v ? violating : nonViolating).push(p);
  }
  return { violating, nonViolating };
}

/**
 * The plugin factory. `prune: false` computes victims on every candidate instead of skipping nodes that
 * cannot be chosen (same choice, more work; tests compare the two).
 */
export const defaultPreemptionFactory =
  ({ prune }: { prune: boolean }): PluginFactory =>
  (args: DefaultPreemptionArgs | undefined, handle): PostFilterPlugin => {
    const pct = args?.minCandidateNodesPercentage ?? 10;
    const abs = args?.minCandidateNodesAbsolute ?? 100;

    /**
     * Victims on one node, called with its lower-priority pods (`potential`) taken off (withoutPods):
     * check the preemptor fits, then put back as many as still fit (PDB-protected ones first, most
     * important first).
     */
    const selectVictims = (
      fw: Framework,
      pfs: PreFilterPlugin[],
      state: CycleState,
      pi: PodInfo,
      n: NodeInfo,
      potential: PodInfo[],
      pdbs: PdbIndex,
    ): { victims: PodInfo[]; violations: number; status: Status | null } => {
      trackRemoved(pfs, state, pi, n, potential);
      const s = fw.runFilterWithNominatedPods(state, pi, n);
      if (s) return { victims: [], violations: 0, status: s };
      sortByImportance(potential);
      const { violating, nonViolating } = splitByPDB(potential, pdbs);
      const victims: PodInfo[] = [];
      let violations = 0;
      for (let round = 0; round < 2; round++) {
        const list = round === 0 ? violating : nonViolating;
        for (const p of list) {
          addToNode(pfs, state, pi, n, p);
          if (fw.runFilterWithNominatedPods(state, pi, n)) {
            removeFromNode(pfs, state, pi, n, p);
            victims.push(p);
            if (round === 0) violations++;
          }
        }
      }
      sortByImportance(victims);
      return { victims, violations, status: null };
    };

    /** Whether the pod fits once the lower-priority pods are off the node (null: it does). */
    const fitsWithout = (
      fw: Framework,
      pfs: PreFilterPlugin[],
      state: CycleState,
      pi: PodInfo,
      n: NodeInfo,
      lower: PodInfo[],
    ): Status | null => {
      trackRemoved(pfs, state, pi, n, lower);
      return fw.runFilterWithNominatedPods(state, pi, n);
    };

    const pick = (cands: Candidate[]): Candidate => {
      let best = cands[0];
      for (let i = 1; i < cands.length; i++) if (better(cands[i], best)) best = cands[i];
      return best;
    };

    return {
      name: DefaultPreemption,
      async postFilter(state, pi, statuses): Promise<PostFilterResult> {
        const fw = handle.framework();
        const pod = pi.pod;
        if ((pod.spec.preemptionPolicy ?? 'PreemptLowerPriority') === 'Never') {
          return { status: Status.unschedulable('preemption: not eligible due to preemptionPolicy=Never.') };
        }
        const nominated = pod.status?.nominatedNodeName;
        if (nominated) {
          const ns = statuses.get(nominated);
          const ni = handle.snapshot.get(nominated);
          if (ni && ns?.code !== Code.UnschedulableAndUnresolvable) {
            if (ni.pods.some((p) => p.pod.metadata.deletionTimestamp && p.priority < pi.priority)) {
              return {
                status: Status.unschedulable(
                  'preemption: not eligible due to a terminating pod on the nominated node.',
                ),
              };
            }
          }
        }
        const all = handle.snapshot.list();
        const nodeStatuses = new Map<string, Status>();
        const dense = statuses instanceof NodeStatusMap && statuses.nodes === all ? statuses : null;
        for (let i = 0; i < all.length; i++) {
          const n = all[i];
          const s = dense ? dense.at(i) : statuses.get(n.name);
          if (s && s.code === Code.UnschedulableAndUnresolvable) nodeStatuses.set(n.name, NOT_HELPFUL);
        }
        // Usually every node is worth a try: then the snapshot's list serves, not a copy of it.
        const potential =
          nodeStatuses.size === 0 ? all : all.filter((n) => nodeStatuses.get(n.name) !== NOT_HELPFUL);
        if (potential.length === 0) {
          if (nominated) await handle.client.updatePodStatus(pod, { status: 'False' }, '');
          return {
            status: Status.unschedulable(
              `preemption: ${nodesAvailableMessage(all.length, nodeStatuses.values())}`,
            ),
          };
        }
        const want = Math.min(potential.length, Math.max(Math.trunc((potential.length * pct) / 100), abs));
        const offset = Math.floor(handle.random() * potential.length);
        const pdbs = handle.cluster.pdbs.size === 0 ? NO_PDBS : indexPDBs(handle.cluster.pdbs.values());
        const pfs = fw.preFilterTrackers(state);
        const cands: Candidate[] = [];
        let best: Candidate | null = null;
        // Candidates found (including those that cannot be picked), and how many break no PDB.
        let found = 0;
        let nonViolating = 0;
        for (let i = 0; i < potential.length && !(nonViolating > 0 && found >= want); i++) {
          const n = potential[(offset + i) % potential.length];
          // Only a node with lower-priority pods is worth a copy.
          let lower: PodInfo[] | null = null;
          for (const p of n.pods) {
            if (p.priority < pi.priority) (lower ??= []).push(p);
          }
          if (lower === null) {
            nodeStatuses.set(n.name, NO_VICTIMS);
            continue;
          }
          const st = pfs.length > 0 ? state.clone() : state;
          if (prune && best !== null && cannotBeat(lower, best) && !breaksBudget(lower, pdbs)) {
            // It still counts towards the candidates wanted, so check that it is one.
            const s = n.withoutPods(lower, () => fitsWithout(fw, pfs, st, pi, n, lower));
            if (s) nodeStatuses.set(n.name, s);
            else {
              found++;
              nonViolating++;
            }
            continue;
          }
          const r = n.withoutPods(lower, () => selectVictims(fw, pfs, st, pi, n, lower, pdbs));
          if (!r.status && r.victims.length > 0) {
            const c = candidate(n.name, r.victims, r.violations);
            cands.push(c);
            found++;
            if (r.violations === 0) nonViolating++;
            if (best === null || better(c, best)) best = c;
            continue;
          }
          nodeStatuses.set(
            n.name,
            r.status ?? Status.error(`expected at least one victim pod on node "${n.name}"`),
          );
        }
        if (cands.length === 0) {
          return {
            status: Status.unschedulable(
              `preemption: ${nodesAvailableMessage(all.length, nodeStatuses.values())}`,
            ),
          };
        }
        const chosen = pick(cands);
        for (const v of chosen.victims) {
          const wp = handle.waitingPods.get(v.uid);
          if (wp) wp.reject(DefaultPreemption, 'preempted');
          handle.client.event(v.pod, 'Normal', 'Preempted', `Preempted by pod ${pi.uid} on node ${chosen.node}`);
          await handle.client.deletePod(v.pod, 'preempted');
        }
        // Lower-priority pods nominated to this node lose their nomination: the preemptor takes the room.
        for (const np of handle.nominator.nominatedPodsForNode(chosen.node)) {
          if (np.priority < pi.priority && np.uid !== pi.uid) {
            handle.nominator.deleteNominatedPod(np);
            await handle.client.updatePodStatus(np.pod, { status: 'False' }, '');
          }
        }
        return { nominatedNodeName: chosen.node, status: null, victims: chosen.victims.map((v) => v.pod as Pod) };
      },
      eventsToRegister: () => [{ resource: 'Pod', action: 'Delete' }],
    };
  };

export const newDefaultPreemption: PluginFactory = defaultPreemptionFactory({ prune: true });
