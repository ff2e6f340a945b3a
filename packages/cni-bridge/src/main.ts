#!/usr/bin/env node
import { main } from '@kemu/cni';
import { bridge } from './bridge.js';

await main(bridge);
