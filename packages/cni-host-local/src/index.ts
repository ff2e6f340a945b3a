export { createHostLocal, DEFAULT_DATA_DIR, type HostLocalOptions, hostLocal, loadConfig } from './host-local.js';
export type { IpamStore, IpamStoreProvider } from './store.js';
export { DiskStore } from './store-disk.js';
export { MemoryIpam, MemoryStore } from './store-memory.js';
