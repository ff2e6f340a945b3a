#!/usr/bin/env node
import { main } from '@kemu/cni';
import { bridge } from '@kemu/cni-bridge';
import { hostLocal } from '@kemu/cni-host-local';
import { vxlan } from './plugin.js';

// The usual delegate chain (bridge + host-local) rides along: one process start per ADD instead of three.
await main(vxlan, { bundled: [bridge, hostLocal] });
