import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { runCli, runMain } from '../support/cli.js';
import { record } from '../support/records.js';

const DAY = 86_400_000;
const A = 'tenant-a/alice';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-prune-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A store with an old finished task, a task expired long ago, a live one polled 40 times, and a caller's misses. */
async function filled(): Promise<string> {
  const path = join(dir, 'tasks.db');
  const store = await SqliteStore.open(path);
  const now = Date.now();
  await store.seed([
    record({ taskId: 'old-done', status: 'completed', version: 2, ttl: null, expiresAt: null, createdAt: now - 3 * DAY, lastUpdatedAt: now - 3 * DAY }),
    record({ taskId: 'old-expired', createdAt: now - 4 * DAY, lastUpdatedAt: now - 4 * DAY, ttl: DAY, expiresAt: now - 3 * DAY }),
    record({ taskId: 'live', createdAt: now, lastUpdatedAt: now, ttl: DAY, expiresAt: now + DAY }),
  ]);
  for (let i = 0; i < 40; i++) {
    await store.recordDecision({
      at: now + i,
      surface: 'read',
      decision: 'RETURN_STATUS',
      authKey: A,
      taskId: 'live',
      correlationId: `c${i}`,
      status: 'working',
      version: 1,
    });
  }
  for (let i = 0; i < 5; i++)
    await store.recordDecision({ at: now - 2 * DAY, surface: 'read', decision: 'NOT_FOUND', authKey: A, taskId: `guess-${i}`, correlationId: 'm' });
  await store.recordDecision({ at: now - 3 * DAY, surface: 'read', decision: 'RETURN_STATUS', authKey: A, taskId: 'old-done', correlationId: 'r' });
  await store.close();
  return `sqlite:${path}`;
}

describe('tasklatch prune', () => {
  it('refuses bad input in one line with exit 2 and changes nothing; counts in a dry run; then removes', async () => {
    const url = await filled();
    // Most runs through the CLI's entry point in this process; the first refusal, the removal and the
    // table through the built binary.
    for (const [i, bad] of [['--retention', '7 days'], ['--retention=-1d'], ['--retention', '1w'], ['--bogus']].entries()) {
      const run = await (i === 0 ? runCli : runMain)(['prune', '--store', url, ...bad]);
      expect(run.code, bad.join(' ')).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stdout).toBe('');
    }
    expect((await runMain(['prune', '--store', 'memory'])).code).toBe(2);

    const dry = await runMain(['prune', '--store', url, '--retention', '36h', '--dry-run']);
    expect(dry.stdout.trim()).toMatch(/would remove 2 task\(s\) and 2 audit row\(s\) \(dry run: nothing removed\)$/);
    const again = await runMain(['prune', '--store', url, '--retention', '36h', '--dry-run']);
    expect(again.stdout).toBe(dry.stdout);

    const pruned = await runCli(['prune', '--store', url, '--retention', '36h']);
    expect(pruned.code).toBe(0);
    expect(pruned.stdout.trim()).toMatch(/removed 2 task\(s\) and 2 audit row\(s\)$/);
    expect((await runMain(['prune', '--store', url, '--retention', String(36 * 3_600_000)])).stdout.trim()).toMatch(
      /removed 0 task\(s\) and 0 audit row\(s\)$/,
    );

    const shown = await runMain(['tasks', 'audit', 'live', '--store', url, '--json']);
    const audit = (JSON.parse(shown.stdout) as { audit: Array<Record<string, unknown>> }).audit;
    expect(audit).toEqual([expect.objectContaining({ decision: 'RETURN_STATUS', authKey: A, count: 40, correlationId: 'c39' })]);
    const table = await runCli(['tasks', 'audit', 'live', '--store', url]);
    expect(table.stdout.split('\n')[0]).toMatch(/^AT \(UTC\)\s+LAST \(UTC\)\s+TIMES\s+SURFACE\s+DECISION/);
    expect(table.stdout.split('\n')[1]).toMatch(/\s40\s+read\s+RETURN_STATUS\s+tenant-a\/alice\s+c39/);
    expect((await runMain(['tasks', 'audit', 'old-done', '--store', url])).code).toBe(2);
  });

  it('serve and worker refuse a bad --retention before they start', async () => {
    for (const command of ['serve', 'worker']) {
      const run = await (command === 'serve' ? runCli : runMain)([command, '--store', 'memory', '--retention', 'soon']);
      expect(run.code).toBe(2);
      expect(run.stderr.trim()).toBe(`tasklatch ${command}: --retention takes a duration (7d, 36h, 90m, 30s) or milliseconds, got "soon"`);
    }
  });
});
