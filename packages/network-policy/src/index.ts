// @kemu/network-policy: NetworkPolicy enforcement on a node, simulated or real. Whole public surface.
export { allowed, type Connection } from './policy-eval.js';
export { type FilterSink, PolicyAgent, type PolicyAgentOptions } from './policy-agent.js';
export { buildPolicyRules, type NamespaceInfo, POLICY_CHAIN, podIPOf, type PolicyInput, policyRestoreInput, type PolicyRuleSet } from './policy-rules.js';
