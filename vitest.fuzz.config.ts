import { defineConfig } from 'vitest/config';

// `npm run fuzz`: the large seeded JSON-RPC fuzz run (count and seed from the environment), never part of `npm test`.
export default defineConfig({
  test: {
    include: ['test/adversarial/**/*.fuzz.ts'],
    testTimeout: 3_600_000,
    hookTimeout: 120_000,
    pool: 'forks',
    globalSetup: ['test/support/global-setup.ts'],
  },
});
