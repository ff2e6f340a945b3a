// @kemu/dns: cluster DNS as CoreDNS's kubernetes plugin answers it. Whole public surface.
export { DnsServer, type DnsServerOptions } from './server.js';
export { Resolver, SCHEMA_VERSION, type Question, type Rcode, type Resolution, type ResolverOptions } from './resolver.js';
export { type SearchConfig, type SearchResult, lookupWithSearch, searchCandidates } from './search-path.js';
export { type DnsExchange, type StubConfig, type StubLookup, type StubQuery, queryMessage, readReply, stubLookup } from './stub-resolver.js';
export { Forwarder, MAX_IN_FLIGHT, parseUpstream, type Upstream } from './forward.js';
export { answerMessage, CLASSIC_UDP_SIZE, EDNS_UDP_SIZE } from './message.js';
export { frameMessage, onFramedMessages } from './tcp-framing.js';
export {
  type ClusterIndex,
  type ClusterObjects,
  type EndpointEntry,
  type PortEntry,
  type ServiceEntry,
  buildClusterIndex,
} from './cluster-index.js';
export {
  type ClusterName,
  REVERSE_ZONES,
  inZone,
  ipToLabel,
  ipToReverseName,
  normalizeName,
  parseClusterName,
  podLabelToIp,
  reverseNameToIp,
} from './names.js';
