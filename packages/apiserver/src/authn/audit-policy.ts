// Audit policy (audit.k8s.io/v1 Policy, as kube-apiserver's --audit-policy-file): the first rule that
// matches a request decides its level (None, Metadata, Request, RequestResponse) and the stages left out.
import fs from 'node:fs';
import YAML from 'yaml';
import type { AuditEvent } from '../auth-seams.js';

export type AuditLevel = 'None' | 'Metadata' | 'Request' | 'RequestResponse';
export type AuditStage = AuditEvent['stage'];
const LEVELS: AuditLevel[] = ['None', 'Metadata', 'Request', 'RequestResponse'];
const STAGES: AuditStage[] = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'];

export interface AuditPolicyRule {
  level: AuditLevel;
  users?: string[];
  userGroups?: string[];
  verbs?: string[];
  resources?: { group?: string; resources?: string[]; resourceNames?: string[] }[];
  namespaces?: string[];
  nonResourceURLs?: string[];
  omitStages?: AuditStage[];
}

export interface AuditPolicy {
  apiVersion: 'audit.k8s.io/v1';
  kind: 'Policy';
  rules: AuditPolicyRule[];
  omitStages?: AuditStage[];
}

export class AuditPolicyError extends Error {}

/** Parses and checks a policy (YAML or JSON), naming the bad field. */
export function parseAuditPolicy(text: string, file = 'audit policy'): AuditPolicy {
  let p: AuditPolicy;
  try {
    p = YAML.parse(text, { maxAliasCount: 100 });
  } catch (err) {
    throw new AuditPolicyError(`${file}: ${(err as Error).message}`);
  }
  if (!p || typeof p !== 'object' || p.kind !== 'Policy' || p.apiVersion !== 'audit.k8s.io/v1') throw new AuditPolicyError(`${file}: expected apiVersion audit.k8s.io/v1, kind Policy`);
  if (!Array.isArray(p.rules) || !p.rules.length) throw new AuditPolicyError(`${file}: rules: Required value: at least one rule is required`);
  p.rules.forEach((r, i) => {
    if (!LEVELS.includes(r?.level)) throw new AuditPolicyError(`${file}: rules[${i}].level: Unsupported value: "${r?.level ?? ''}": supported values: ${LEVELS.map((l) => `"${l}"`).join(', ')}`);
    for (const s of r.omitStages ?? []) if (!STAGES.includes(s)) throw new AuditPolicyError(`${file}: rules[${i}].omitStages: Unsupported value: "${s}"`);
    if (r.nonResourceURLs?.length && (r.resources?.length || r.namespaces?.length)) {
      throw new AuditPolicyError(`${file}: rules[${i}].nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs`);
    }
  });
  return p;
}

export function loadAuditPolicy(file: string): AuditPolicy {
  return parseAuditPolicy(fs.readFileSync(file, 'utf8'), file);
}

const any = (list: readonly string[] | undefined, v: string) => !list?.length || list.includes(v);

function urlMatches(patterns: readonly string[], uri: string): boolean {
  const p = uri.split('?')[0];
  return patterns.some((u) => u === '*' || u === p || (u.endsWith('*') && p.startsWith(u.slice(0, -1))));
}

/** The level and omitted stages for an event (level None when no rule matches). */
export function auditLevel(policy: AuditPolicy, ev: AuditEvent): { level: AuditLevel; omitStages: AuditStage[] } {
  const user = ev.impersonatedUser ?? ev.user;
  for (const r of policy.rules) {
    if (!any(r.users, user.name)) continue;
    if (r.userGroups?.length && !user.groups.some((g) => r.userGroups!.includes(g))) continue;
    if (!any(r.verbs, ev.verb)) continue;
    const ref = ev.objectRef;
    if (r.nonResourceURLs?.length) {
      if (ref || !urlMatches(r.nonResourceURLs, ev.requestURI)) continue;
    } else if (r.resources?.length || r.namespaces?.length) {
      if (!ref) continue;
      if (r.namespaces?.length && !r.namespaces.includes(ref.namespace ?? '')) continue;
      if (r.resources?.length) {
        const combined = ref.subresource ? `${ref.resource}/${ref.subresource}` : (ref.resource ?? '');
        const hit = r.resources.some(
          (g) =>
            (g.group ?? '') === (ref.apiGroup ?? '') &&
            (!g.resources?.length || g.resources.some((x) => x === '*' || x === combined || x === `${ref.resource}/*` || (x.startsWith('*/') && x.slice(2) === ref.subresource))) &&
            (!g.resourceNames?.length || g.resourceNames.includes(ref.name ?? '')),
        );
        if (!hit) continue;
      }
    }
    return { level: r.level, omitStages: [...(policy.omitStages ?? []), ...(r.omitStages ?? [])] };
  }
  return { level: 'None', omitStages: [] };
}
