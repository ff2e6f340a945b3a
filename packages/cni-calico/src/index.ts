export {
  type Allocation,
  type AssignRequest,
  affinityName,
  CalicoIpam,
  type CalicoIpamOptions,
  cidrName,
  type EncapMode,
  PoolConfigError,
  PoolExhaustedError,
  type PoolSpecInput,
  validatePool,
  within,
} from './ipam.js';
export {
  type CalicoIpamConfig,
  type CalicoIpamPluginOptions,
  calicoIpam,
  createCalicoIpamPlugin,
  handleId,
  loadCalicoConfig,
  openStore,
  PLUGIN_NAME,
} from './plugin.js';
