#!/usr/bin/env node
// The executable: hands the call to `kemu-cni daemon` when one runs, else starts the plugin bundle
// (dist/main.cjs, built from main.ts) through the code cache.
import { launchPlugin } from '@kemu/cni/launcher';

launchPlugin('kemu-loopback', new URL('./main.cjs', import.meta.url));
