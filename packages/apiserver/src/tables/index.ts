// meta.k8s.io/v1 Table output for every kind, with kubectl's own columns.
import { registerClusterPrinters } from './printers-cluster.js';
import { registerCorePrinters } from './printers-core.js';
import { registerNetworkPrinters } from './printers-network.js';
import { registerPolicyPrinters } from './printers-policy.js';
import { registerWorkloadPrinters } from './printers-workloads.js';

registerCorePrinters();
registerClusterPrinters();
registerWorkloadPrinters();
registerNetworkPrinters();
registerPolicyPrinters();

export { age, humanDuration } from './human-duration.js';
export { firstOf, formatLabels, formatLabelSelector } from './format.js';
export { podReady, podRestarts, podStatusReason } from './pod-status.js';
export { accessModes, nodeRoles, nodeStatus } from './printers-core.js';
export {
  acceptsTable,
  buildTable,
  type Cell,
  column,
  type IncludeObject,
  NAME_COLUMN,
  parseIncludeObject,
  type Printer,
  printerFor,
  registerPrinter,
  type Table,
  type TableColumnDefinition,
  type TableOptions,
  type TableRow,
  unregisterPrinter,
} from './table.js';
