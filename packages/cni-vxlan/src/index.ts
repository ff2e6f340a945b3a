export {
  ANNOTATIONS,
  DEFAULT_DEVICE,
  DEFAULT_NETWORK,
  DEFAULT_PORT,
  DEFAULT_SUBNET_LEN,
  DEFAULT_VNI,
  LEASE_NAMESPACE,
  leaseSubnet,
  type ReconcileReport,
  type RemoteNode,
  remoteOf,
  subnetLeaseName,
  VxlanAgent,
  type VxlanAgentOptions,
} from './agent.js';
export {
  DEFAULT_DATA_DIR,
  DEFAULT_SUBNET_FILE,
  delegateConfig,
  loadVxlanConfig,
  PLUGIN_NAME,
  parseSubnetEnv,
  type SubnetEnv,
  type VxlanCniConfig,
  vxlan,
} from './plugin.js';
export { AGENT_USAGE, type AgentArgs, parseAgentArgs, runAgent, UsageError } from './cli.js';
