import { defineConfig } from 'vitest/config';

// `npm run chaos`: the long chaos runs, one file at a time, never part of `npm test`.
export default defineConfig({
  test: {
    include: ['test/chaos/**/*.chaos.ts'],
    testTimeout: 1_000_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
