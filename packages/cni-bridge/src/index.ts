export { type BridgeConfig, bridge, hostVethName, loadBridgeConfig } from './bridge.js';
