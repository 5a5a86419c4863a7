import { expect, it } from 'vitest';
import { postgresHarness, sqliteHarness } from '../support/stores.js';
import { runFuzz, type FuzzFigures } from './fuzz-run.js';

// `npm run fuzz`: TASKLATCH_FUZZ_COUNT messages (default 3000) per store from TASKLATCH_FUZZ_SEED.
const COUNT = Number(process.env.TASKLATCH_FUZZ_COUNT ?? 3000);
const SEED = Number(process.env.TASKLATCH_FUZZ_SEED ?? Date.now() % 1_000_000);

it(`fuzzes both generations with ${COUNT} messages per store`, async () => {
  const all: FuzzFigures[] = [];
  for (const harness of [sqliteHarness, postgresHarness]) {
    const figures = await runFuzz(await harness.open('fuzz_full'), harness.name, SEED, COUNT);
    all.push(figures);
    const { findings, byStatus, ...counts } = figures;
    console.log(`fuzz ${JSON.stringify(counts)}`);
    console.log(`fuzz ${harness.name} HTTP statuses ${JSON.stringify(byStatus)}`);
    for (const finding of findings) console.log(`fuzz ${harness.name} finding: ${finding}`);
  }
  expect(all.flatMap((f) => f.findings)).toEqual([]);
});
