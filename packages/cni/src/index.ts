export * from './datapath.js';
export { MemoryDatapath } from './datapath-memory.js';
