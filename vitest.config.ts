import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two files at a time on two cores (vitest's default leaves one core idle): most files wait on
    // processes, sockets and PostgreSQL, and every test waits on events, so a busy machine slows
    // them but does not fail them.
    maxWorkers: 2,
    globalSetup: ['test/support/global-setup.ts'],
  },
});
