// Label selectors and node selectors compiled once into predicates; compiled forms are cached per
// selector object because the same pod spec is evaluated against thousands of nodes.
import type { LabelSelector, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm } from './types.js';

export type Labels = Record<string, string> | undefined;
export type LabelMatcher = ((labels: Labels) => boolean) & {
  everything?: boolean;
  nothing?: boolean;
  /** `k=v` of the first matchLabels pair, for index lookups. */
  firstEq?: string;
  /** The selector is exactly that one pair. */
  singleEq?: boolean;
};

const everything: LabelMatcher = Object.assign(() => true, { everything: true });
const nothing: LabelMatcher = Object.assign(() => false, { nothing: true });
const compiled = new WeakMap<object, LabelMatcher>();

/** A nil selector matches nothing, an empty one matches everything (metav1.LabelSelectorAsSelector). */
export function labelSelectorMatcher(sel: LabelSelector | undefined | null): LabelMatcher {
  if (!sel) return nothing;
  const hit = compiled.get(sel);
  if (hit) return hit;
  const eq: [string, string][] = Object.entries(sel.matchLabels ?? {});
  const exprs = sel.matchExpressions ?? [];
  let m: LabelMatcher;
  if (eq.length === 0 && exprs.length === 0) m = everything;
  else {
    const checks = exprs.map((e) => {
      const vals = new Set(e.values ?? []);
      switch (e.operator) {
        case 'In':
          return (l: Labels) => l !== undefined && l[e.key] !== undefined && vals.has(l[e.key]);
        case 'NotIn':
          return (l: Labels) => l === undefined || l[e.key] === undefined || !vals.has(l[e.key]);
        case 'Exists':
          return (l: Labels) => l !== undefined && l[e.key] !== undefined;
        case 'DoesNotExist':
          return (l: Labels) => l === undefined || l[e.key] === undefined;
        default:
          throw new Error(`"${e.operator}" is not a valid label selector operator`);
      }
    });
    m = (l: Labels) => {
      for (let i = 0; i < eq.length; i++) {
        if (l === undefined || l[eq[i][0]] !== eq[i][1]) return false;
      }
      for (let i = 0; i < checks.length; i++) if (!checks[i](l)) return false;
      return true;
    };
    if (eq.length > 0) m.firstEq = `${eq[0][0]}=${eq[0][1]}`;
    m.singleEq = eq.length === 1 && checks.length === 0;
  }
  compiled.set(sel, m);
  return m;
}

/** matchLabels-style map selector (nodeSelector): every pair must match. */
export function mapMatches(sel: Record<string, string> | undefined, labels: Labels): boolean {
  if (!sel) return true;
  for (const k in sel) if (labels === undefined || labels[k] !== sel[k]) return false;
  return true;
}

function requirementMatches(r: NodeSelectorRequirement, value: string | undefined): boolean {
  switch (r.operator) {
    case 'In':
      return value !== undefined && (r.values ?? []).includes(value);
    case 'NotIn':
      return value === undefined || !(r.values ?? []).includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || !/^-?\d+$/.test(value)) return false;
      const lhs = Number(value);
      const rhs = Number(r.values?.[0]);
      return r.operator === 'Gt' ? lhs > rhs : lhs < rhs;
    }
    default:
      return false;
  }
}

/** One node selector term; an empty term matches no objects (core/v1 semantics). */
export function nodeSelectorTermMatches(term: NodeSelectorTerm, labels: Labels, nodeName: string): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  for (const r of exprs) if (!requirementMatches(r, labels?.[r.key])) return false;
  for (const r of fields) {
    if (r.key !== 'metadata.name') return false;
    if (!requirementMatches(r, nodeName)) return false;
  }
  return true;
}

/** Terms are ORed. */
export function nodeSelectorMatches(sel: NodeSelector, labels: Labels, nodeName: string): boolean {
  for (const t of sel.nodeSelectorTerms ?? []) if (nodeSelectorTermMatches(t, labels, nodeName)) return true;
  return false;
}
