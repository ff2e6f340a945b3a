#!/usr/bin/env node
import { main } from '@kemu/cni';
import { portmap } from './portmap.js';

await main(portmap);
