#!/usr/bin/env node
import { main } from '@kemu/cni';
import { loopback } from './loopback.js';

await main(loopback);
