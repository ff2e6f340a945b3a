#!/usr/bin/env node
// The executable: starts the plugin bundle (dist/main.cjs, built from main.ts) through the code cache.
import { launch } from '@kemu/cni/launcher';

launch(new URL('./main.cjs', import.meta.url));
