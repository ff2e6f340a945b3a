// Shared vitest settings: every package resolves its sibling @kemu/* packages from source
// through the "@kemu/source" export condition, so tests never need a prior build of a dependency.
import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@kemu/source', ...defaultServerConditions] },
  ssr: { resolve: { conditions: ['@kemu/source', ...defaultServerConditions] } },
  test: {
    environment: 'node',
    include: ['src/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    passWithNoTests: false,
    // The JSON report feeds the one-line summary that `npm test` prints across all packages.
    reporters: ['default', ['json', { outputFile: 'test-results/vitest.json' }]],
  },
});
