// Validation of networking.k8s.io/v1 kinds (NetworkPolicy) with the API server's field paths and wording.
import { BlockList, isIP } from 'node:net';
import type { NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort } from './api-networking.js';
import type { KubeObject } from './api-meta.js';
import type { FieldErrors } from './field-errors.js';
import { validateLabelSelector } from './validation.js';
import { checkPortNumber, checkPortNumOrName, PROTOCOLS } from './validation-service.js';

const POLICY_TYPES = ['Egress', 'Ingress'] as const;
const CIDR_EXAMPLE = 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)';

const oneOf = (v: unknown, set: readonly string[]) => typeof v === 'string' && set.includes(v);

interface ParsedCidr {
  ip: string;
  len: number;
  family: 'ipv4' | 'ipv6';
}

function parseCidr(s: unknown): ParsedCidr | undefined {
  if (typeof s !== 'string') return undefined;
  const [ip, len, extra] = s.split('/');
  if (extra !== undefined || len === undefined || !/^\d+$/.test(len)) return undefined;
  const fam = isIP(ip);
  if (fam === 0 || Number(len) > (fam === 4 ? 32 : 128)) return undefined;
  return { ip, len: Number(len), family: fam === 4 ? 'ipv4' : 'ipv6' };
}

function validatePorts(e: FieldErrors, path: string, ports: NetworkPolicyPort[] | undefined): void {
  (ports ?? []).forEach((p, i) => {
    const pp = `${path}[${i}]`;
    if (p?.protocol !== undefined && !oneOf(p.protocol, PROTOCOLS)) e.notSupported(`${pp}.protocol`, p.protocol, PROTOCOLS);
    if (p?.port !== undefined) checkPortNumOrName(e, `${pp}.port`, p.port);
    if (p?.endPort !== undefined) {
      if (p.port === undefined) e.required(`${pp}.port`, 'When endPort is specified, port must be specified');
      else if (typeof p.port === 'string') e.forbidden(`${pp}.endPort`, 'may not be specified when `port` is non-numeric');
      else if (Number.isInteger(p.endPort) && p.endPort < p.port) e.invalid(`${pp}.endPort`, p.endPort, 'must be greater than or equal to `port`');
      checkPortNumber(e, `${pp}.endPort`, p.endPort);
    }
  });
}

function validatePeers(e: FieldErrors, path: string, peers: NetworkPolicyPeer[] | undefined): void {
  (peers ?? []).forEach((peer, i) => {
    const pp = `${path}[${i}]`;
    const selectors = (peer?.podSelector ? 1 : 0) + (peer?.namespaceSelector ? 1 : 0);
    if (selectors === 0 && !peer?.ipBlock) e.required(pp, 'must specify a peer');
    else if (selectors > 0 && peer.ipBlock) e.forbidden(pp, 'may not specify both ipBlock and another peer');
    validateLabelSelector(e, `${pp}.podSelector`, peer?.podSelector);
    validateLabelSelector(e, `${pp}.namespaceSelector`, peer?.namespaceSelector);
    if (peer?.ipBlock) {
      const bp = `${pp}.ipBlock`;
      const cidr = parseCidr(peer.ipBlock.cidr);
      if (!peer.ipBlock.cidr) e.required(`${bp}.cidr`);
      else if (!cidr) e.invalid(`${bp}.cidr`, peer.ipBlock.cidr, CIDR_EXAMPLE);
      (peer.ipBlock.except ?? []).forEach((x, j) => {
        const ex = parseCidr(x);
        if (!ex) {
          e.invalid(`${bp}.except[${j}]`, x, CIDR_EXAMPLE);
          return;
        }
        if (!cidr) return;
        const within = new BlockList();
        within.addSubnet(cidr.ip, cidr.len, cidr.family);
        if (ex.family !== cidr.family || ex.len <= cidr.len || !within.check(ex.ip, ex.family)) {
          e.invalid(`${bp}.except[${j}]`, x, 'must be a strict subset of `cidr`');
        }
      });
    }
  });
}

export function validateNetworkPolicy(e: FieldErrors, obj: KubeObject): void {
  const np = obj as NetworkPolicy;
  const s = np.spec;
  if (!s || typeof s !== 'object') {
    e.required('spec');
    return;
  }
  if (!s.podSelector || typeof s.podSelector !== 'object') e.required('spec.podSelector');
  else validateLabelSelector(e, 'spec.podSelector', s.podSelector);
  (s.ingress ?? []).forEach((r, i) => {
    validatePorts(e, `spec.ingress[${i}].ports`, r?.ports);
    validatePeers(e, `spec.ingress[${i}].from`, r?.from);
  });
  (s.egress ?? []).forEach((r, i) => {
    validatePorts(e, `spec.egress[${i}].ports`, r?.ports);
    validatePeers(e, `spec.egress[${i}].to`, r?.to);
  });
  const types = s.policyTypes ?? [];
  types.forEach((t, i) => {
    if (!oneOf(t, POLICY_TYPES)) e.notSupported(`spec.policyTypes[${i}]`, t, POLICY_TYPES);
  });
  if (types.length > 2) e.invalid('spec.policyTypes', types, 'may not specify more than two policyTypes');
}
