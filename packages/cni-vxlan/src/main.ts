#!/usr/bin/env node
import { main } from '@kemu/cni';
import { bridge } from '@kemu/cni-bridge';
import { hostLocal } from '@kemu/cni-host-local';
import { runAgent } from './cli.js';
import { vxlan } from './plugin.js';

if (process.argv[2] === 'agent') {
  process.exitCode = await runAgent(process.argv.slice(3));
} else {
  // The usual delegate chain (bridge + host-local) rides along: one process start per ADD instead of three.
  await main(vxlan, { bundled: [bridge, hostLocal] });
}
