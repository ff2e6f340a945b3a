export * from './datapath.js';
export { MemoryDatapath } from './datapath-memory.js';
export { CniError, CniErrorCode, invalidConfig, toCniError } from './errors.js';
export {
  type ConfField,
  type ConfFields,
  canonicalConf,
  conf,
  field,
  foldKey,
  mergeFields,
  NETCONF_FIELDS,
  RESULT_FIELDS,
} from './conf-decode.js';
export { withFileLock } from './file-lock.js';
export { datapathFromEnv, type MainOptions, main } from './plugin-main.js';
export {
  type CniCommand,
  type CniPlugin,
  type Delegate,
  type InvocationInput,
  type InvocationOutput,
  invokePlugin,
  type PluginContext,
  parseCniArgs,
  type ValidAttachment,
  validateIfname,
} from './skeleton.js';
export * from './types.js';
export { execDelegate, execPlugin, findInPath, interpretOutput } from './invoke-exec.js';
export { ExecInvoker, InProcessInvoker, type InProcessInvokerOptions, type Invoker } from './invoke-inprocess.js';
export { DiskResultCache, MemoryResultCache, type ResultCache } from './result-cache.js';
export {
  CniRuntime,
  type CniRuntimeOptions,
  type NetworkConfig,
  type NetworkConfigList,
  parseConfList,
  type RuntimeConf,
} from './runtime.js';
export { createLinuxDatapath, LinuxDatapath } from './datapath-linux.js';
export {
  type CniDaemon,
  type CniDaemonOptions,
  type DaemonAnswer,
  type DaemonRequest,
  DEFAULT_DAEMON_SOCKET,
  serveCniDaemon,
} from './daemon.js';
export { type BoundedRead, READ_LIMITS, readFdBounded } from './read-bounded.js';
export { readFileBounded, readFileBoundedIfExists, readTextBounded, readTextBoundedIfExists } from './read-file-bounded.js';
export { requireNetns } from './netns-check.js';
