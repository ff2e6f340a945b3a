import { defineConfig } from 'tsup';

export default defineConfig([
  {
    // The library: @kemu/* stay external, so in-process users share one copy of @kemu/cni.
    entry: ['src/index.ts'],
    format: ['esm'],
    target: 'node20',
    sourcemap: true,
    dts: { entry: 'src/index.ts' },
    clean: false,
  },
  {
    // The executable: one file, with @kemu/* compiled from source through the condition vitest and tsc
    // use. Bundling their built dist instead drags in its chunk wrappers and every module the chunks
    // share, which each plugin start pays for. netlink and koffi stay outside (native, loaded on use).
    entry: ['src/main.ts'],
    format: ['esm'],
    target: 'node20',
    sourcemap: true,
    dts: false,
    clean: false,
    splitting: false,
    noExternal: [/^@kemu\//],
    esbuildOptions(options) {
      options.conditions = ['@kemu/source'];
    },
  },
]);
