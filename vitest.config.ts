import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each test file starts its own local service on an ephemeral port. Three workers on two cores: much
    // of a file's time is spent waiting on servers (IRC, XMPP, Redis, the service in another process),
    // so a third keeps both cores busy (a full run: 515 s with two, 401 s with three, on 2 cores). The
    // linear-time tests' bound (4 s a shape, a linear pass takes up to ~1.4 s) leaves room for it.
    maxWorkers: 3,
  },
});
