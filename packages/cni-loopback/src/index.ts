export { loopback } from './loopback.js';
