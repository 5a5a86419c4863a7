import { describe, expect, it } from 'vitest';
import { postgresHarness, sqliteHarness } from '../support/stores.js';
import { runFuzz } from './fuzz-run.js';

// A small seeded run on every `npm test`; `npm run fuzz` runs the large one and prints its figures.
const COUNT = Number(process.env.TASKLATCH_FUZZ_COUNT ?? 150);
const SEED = Number(process.env.TASKLATCH_FUZZ_SEED ?? 20261201);

describe.each([sqliteHarness, postgresHarness])('JSON-RPC fuzzer over both generations on $name', (harness) => {
  it(`${COUNT} hostile messages: no 5xx, no crash, well-formed answers, no state change for a rejected call, no breach`, async () => {
    const figures = await runFuzz(await harness.open('fuzz'), harness.name, SEED + (harness.name === 'postgres' ? 1 : 0), COUNT);
    expect(figures.findings).toEqual([]);
    expect(figures.messages).toBe(COUNT);
    // The run reached past the envelope checks: some calls were refused by the methods themselves.
    expect(Object.keys(figures.byStatus).length).toBeGreaterThan(2);
  });
});
