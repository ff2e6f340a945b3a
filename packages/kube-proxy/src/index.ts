// @kemu/kube-proxy: kube-proxy's iptables and nftables modes on the simulated datapath and on real Linux. Whole public surface.
export { endpointChain, externalChain, nftEndpointBase, nftServiceBase, serviceChain, serviceLocalChain, servicePortName } from './chain-names.js';
export { BASE_JUMPS, buildRules, type NodeContext, probability, restoreInput, type RuleSet } from './iptables-rules.js';
export { LoadBalancerIpam, type LoadBalancerIpamOptions } from './lb-ipam.js';
export {
  buildNftables,
  listedObjects,
  NFT_TABLE,
  nftablesScript,
  nftBase,
  type NftElementSpec,
  type NftNodeContext,
  type NftRules,
  type NftServiceRules,
  nftServiceRules,
} from './nftables-rules.js';
export { Proxier, type ProxierOptions, type ProxyMode, type SyncStats } from './proxier.js';
export { linuxRuleSink, type RuleSink, type SimNetfilter, simRuleSink } from './rule-sink.js';
export { type EndpointInfo, type ServicePortInfo, servicePorts } from './service-ports.js';
