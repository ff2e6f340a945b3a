// Chain names as kube-proxy derives them: a prefix and the first 16 characters of the base32 SHA-256 of
// the service port's name and protocol (and, for an endpoint, its address), so the same Service gets the
// same chains on every node and across restarts (KUBE-SVC-NPX46M4PTMTKRN6Y is default/kubernetes:https).
import { createHash } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

function base32(buf: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of buf) {
    value = ((value << 8) | b) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

function hash16(s: string): string {
  return base32(createHash('sha256').update(s).digest()).slice(0, 16);
}

/** "ns/name:port" (the port's name, empty for an unnamed port), as kube-proxy's ServicePortName prints. */
export function servicePortName(namespace: string, name: string, port: string | undefined): string {
  return `${namespace}/${name}:${port ?? ''}`;
}

/** KUBE-SVC-*: the service port's cluster-wide endpoint chain. `protocol` is lower case ("tcp"). */
export function serviceChain(spn: string, protocol: string): string {
  return `KUBE-SVC-${hash16(spn + protocol)}`;
}

/** KUBE-SVL-*: only the endpoints on this node (externalTrafficPolicy/internalTrafficPolicy Local). */
export function serviceLocalChain(spn: string, protocol: string): string {
  return `KUBE-SVL-${hash16(spn + protocol)}`;
}

/** KUBE-EXT-*: what traffic to a NodePort, external IP or load-balancer IP goes through. */
export function externalChain(spn: string, protocol: string): string {
  return `KUBE-EXT-${hash16(spn + protocol)}`;
}

/** KUBE-SEP-*: one endpoint ("ip:port") of the service port. */
export function endpointChain(spn: string, protocol: string, endpoint: string): string {
  return `KUBE-SEP-${hash16(spn + protocol + endpoint)}`;
}

/**
 * nftables mode's per-Service names: the first 8 characters of the base32 SHA-256 of a readable base,
 * then the base itself ("ULMVA6XW-ns1/svc1/tcp/p80"), cut to fit nft's 256-character limit.
 */
function hashAndTruncate(name: string): string {
  const out = `${base32(createHash('sha256').update(name).digest()).slice(0, 8)}-${name}`;
  return out.length > 240 ? `${out.slice(0, 237)}...` : out;
}

/** "ns/name:port" split back into its parts. */
function spnParts(spn: string): { ns: string; name: string; port: string } {
  const slash = spn.indexOf('/');
  const colon = spn.lastIndexOf(':');
  return { ns: spn.slice(0, slash), name: spn.slice(slash + 1, colon), port: spn.slice(colon + 1) };
}

/** The base of a service port's nftables chain names: "HASH-ns/name/proto/port". */
export function nftServiceBase(spn: string, protocol: string): string {
  const p = spnParts(spn);
  return hashAndTruncate(`${p.ns}/${p.name}/${protocol}/${p.port}`);
}

/** The base of an endpoint's chain and affinity set: "HASH-ns/name/proto/port__ip/port" (IPv6 ':' as '.'). */
export function nftEndpointBase(spn: string, protocol: string, ip: string, port: number): string {
  const p = spnParts(spn);
  return hashAndTruncate(`${p.ns}/${p.name}/${protocol}/${p.port}__${ip.replaceAll(':', '.')}/${port}`);
}

/** Chains kube-proxy made per Service; any of them not in the desired rules is deleted on sync. */
export const PER_SERVICE_CHAIN = /^KUBE-(SVC|SVL|EXT|SEP|FW)-[A-Z2-7]{16}$/;
