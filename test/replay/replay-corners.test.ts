import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseFixture } from '../../src/replay/fixture.js';
import { runReplay } from '../../src/replay/run-replay.js';
import { ALL_HARNESSES } from '../support/stores.js';

// The project's own contract cases, run in this process on every store (the CLI's `tasklatch
// replay` runs the same through the built binary).
describe.each(ALL_HARNESSES)('replay-corners on the $name store', (harness) => {
  it('answers every case as the fixture expects, child steps included', async () => {
    const bytes = readFileSync(new URL('../fixtures/replay-corners.json', import.meta.url));
    const fixture = parseFixture(bytes.toString('utf8'));
    expect(fixture.cases.filter((c) => c.id.startsWith('X-K'))).toHaveLength(4);
    const store = await harness.open('replay_corners');
    try {
      const report = await runReplay(fixture, bytes, store, harness.name);
      expect(report.cases.filter((c) => !c.ok).map((c) => `${c.id}: expected ${c.expect}, got ${c.actual}`)).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
