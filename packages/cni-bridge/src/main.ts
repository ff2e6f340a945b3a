#!/usr/bin/env node
import { main } from '@kemu/cni';
import { hostLocal } from '@kemu/cni-host-local';
import { bridge } from './bridge.js';

// kemu-host-local rides along so the common bridge + host-local chain costs one process start, not two.
void main(bridge, { bundled: [hostLocal] });
