// @kemu/kube-proxy: kube-proxy's iptables mode on the simulated datapath and on real Linux. Whole public surface.
export { endpointChain, externalChain, serviceChain, serviceLocalChain, servicePortName } from './chain-names.js';
export { BASE_JUMPS, buildRules, type NodeContext, probability, restoreInput, type RuleSet } from './iptables-rules.js';
export { LoadBalancerIpam, type LoadBalancerIpamOptions } from './lb-ipam.js';
export { Proxier, type ProxierOptions, type SyncStats } from './proxier.js';
export { linuxRuleSink, type RuleSink, type SimNetfilter, simRuleSink } from './rule-sink.js';
export { type EndpointInfo, type ServicePortInfo, servicePorts } from './service-ports.js';
