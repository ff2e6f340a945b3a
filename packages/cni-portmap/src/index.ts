export { type PortMapping, parsePortMappings, portmap } from './portmap.js';
