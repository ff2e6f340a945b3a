#!/usr/bin/env node
import { main } from '@kemu/cni';
import { calicoIpam } from './plugin.js';

await main(calicoIpam);
