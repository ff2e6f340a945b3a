export * from './errors.js';
export * from './router-id.js';
export * from './message.js';
export {
  asPathLength,
  compareRoutes,
  flattenAsPath,
  type RibEntry,
  type Route,
  type RouteSource,
  selectBest,
  toRibEntry,
} from './rib.js';
export {
  DatapathRouteSink,
  type DatapathRouteSinkOptions,
  type InstalledRoute,
  MemoryRouteSink,
  type RouteSink,
  type TunnelOptions,
} from './route-sink.js';
export {
  type LocalIdentity,
  type Negotiated,
  type NeighborConfig,
  Session,
  type SessionError,
  type SessionHooks,
  type SessionState,
  type SessionTimers,
} from './session.js';
export {
  type AdvertiseOptions,
  BgpSpeaker,
  PrefixTable,
  type PeerStatus,
  type RibChange,
  type SpeakerOptions,
} from './speaker.js';
export { type BgpSocket, type Listener, MemoryNetwork, tcpTransport, type Transport } from './transport.js';
export {
  defaultBlock,
  RouteSimulation,
  type SimNode,
  type SimTopology,
  type SimulationOptions,
  simAddress,
  startCluster,
} from './sim.js';
export {
  type BgpConfig,
  parsePeerSpec,
  readConfigFile,
  type ResolvedConfig,
  resolveConfig,
} from './config.js';
