// The build every kemu CNI plugin package shares (their tsup.config.ts files call this): the library, the
// executable's launcher and the plugin bundle it starts. It lives next to the launcher it builds for, and
// is not published.
import { defineConfig, type Options } from 'tsup';

/** One CommonJS file with @kemu/* (from source) and @noble/* inside: what the launcher and the bundle share. */
const selfContainedCjs = {
  format: ['cjs'],
  target: 'node20',
  shims: true,
  dts: false,
  clean: false,
  splitting: false,
  noExternal: [/^@kemu\//, /^@noble\//],
  esbuildOptions(options: { conditions?: string[] }) {
    options.conditions = ['@kemu/source'];
  },
} satisfies Options;

export function pluginTsupConfig() {
  return defineConfig([
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
      // The executable (bin): a small CommonJS launcher (an ESM entry would start Node's ESM loader, which
      // costs more CPU than the launcher itself) that runs the plugin bundle below through V8's code
      // cache (see @kemu/cni/launcher), so a start skips compiling what an earlier ADD compiled.
      entry: { bin: 'src/bin.ts' },
      ...selfContainedCjs,
    },
    {
      // The plugin bundle: one CommonJS file (what the launcher can compile with a code cache), with
      // @kemu/* compiled from source through the condition vitest and tsc use. Bundling their built dist
      // instead drags in its chunk wrappers and every module the chunks share, which each start pays for.
      // netlink and koffi stay outside (native, loaded on first use); @noble/hashes, plain JavaScript
      // (and ESM only, which a CommonJS bundle could not require), goes in.
      entry: { main: 'src/main.ts' },
      ...selfContainedCjs,
      sourcemap: true,
    },
  ]);
}
