export { DEFAULT_DATA_DIR, DiskStore, hostLocal, loadConfig } from './host-local.js';
