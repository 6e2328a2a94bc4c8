import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each test file starts its own local service on an ephemeral port; two cores, so keep it modest.
    maxWorkers: 2,
  },
});
