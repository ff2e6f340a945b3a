import { defineConfig, mergeConfig } from 'vitest/config';
import shared from '../vitest.shared';

// e2e tests live at the top of this folder, grouped by scenario, and may take longer than unit tests.
export default mergeConfig(
  shared,
  defineConfig({ test: { include: ['**/*.test.ts'], exclude: ['**/node_modules/**'], testTimeout: 120_000 } }),
);
