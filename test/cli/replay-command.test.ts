import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../support/cli.js';

const OWN = join(ROOT, 'test/fixtures/replay-corners.json');
const PUBLIC = join(ROOT, '../shared/contract/replay-32.json');
let dir: string;
let own: { cases: Array<Record<string, unknown> & { packet: Record<string, unknown> }> };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tasklatch-cli-'));
  own = JSON.parse(await readFile(OWN, 'utf8')) as typeof own;
});

async function fixtureFile(name: string, content: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

function mutated(mutate: (f: typeof own) => void): string {
  const copy = structuredClone(own);
  mutate(copy);
  return JSON.stringify({ fixture: 'tasklatch-contract-replay', version: 1, ...copy });
}

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1);

describe('tasklatch replay', () => {
  it('replays the project fixture: every case, the SHA-256 of the bytes, the closing line', async () => {
    const run = await runCli(['replay', OWN]);
    const sha = createHash('sha256')
      .update(await readFile(OWN))
      .digest('hex');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(sha);
    expect(run.stdout).toMatch(/^X-T06 +transition +yes +BLOCK_TERMINAL_REWRITE +BLOCK_TERMINAL_REWRITE +ok$/m);
    expect(run.stdout).toMatch(/^X-S16 +step +yes +BLOCK_STALE_VERSION +BLOCK_STALE_VERSION +ok$/m);
    expect(lastLine(run.stdout)).toBe(`${own.cases.length} passed, 0 failed`);
  });

  it.skipIf(!existsSync(PUBLIC))('replays the public contract fixture as a user would', async () => {
    const run = await runCli(['replay', '../shared/contract/replay-32.json']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      createHash('sha256')
        .update(await readFile(PUBLIC))
        .digest('hex'),
    );
    expect(lastLine(run.stdout)).toBe('32 passed, 0 failed');
  });

  it('prints only JSON with --json', async () => {
    const run = await runCli(['replay', OWN, '--json']);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as {
      fixtureSha256: string;
      store: string;
      cases: Array<{ id: string; ok: boolean; taskIds?: string[] }>;
      passed: number;
      failed: number;
    };
    expect(report).toMatchObject({ store: 'memory', passed: own.cases.length, failed: 0 });
    expect(report.fixtureSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(report.cases.find((c) => c.id === 'X-L01')?.taskIds).toEqual(['t-forever', 't-a', 't-b', 't-c', 't-0']);
    expect(report.cases.find((c) => c.id === 'X-C01')).not.toHaveProperty('taskIds');
  });

  it('exits 1 and marks the case when a decision does not match', async () => {
    const file = await fixtureFile(
      'wrong.json',
      mutated((f) => {
        f.cases[0]!.expect = 'ACCEPT_TASK';
        f.cases.find((c) => c.id === 'X-L01')!.expectTaskIds = ['t-a', 't-b'];
      }),
    );
    const run = await runCli(['replay', file]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^X-C01 .* FAIL$/m);
    expect(run.stdout).toContain('X-L01: listed [t-forever, t-a, t-b, t-c, t-0], expected [t-a, t-b]');
    expect(lastLine(run.stdout)).toBe(`${own.cases.length - 2} passed, 2 failed`);
  });

  it.each([
    { name: 'not JSON', content: () => '{"fixture": ', message: /not JSON/ },
    { name: 'not an object', content: () => '[]', message: /JSON object/ },
    { name: 'wrong fixture name', content: () => JSON.stringify({ fixture: 'x', version: 1, cases: [] }), message: /field "fixture"/ },
    { name: 'wrong version', content: () => JSON.stringify({ fixture: 'tasklatch-contract-replay', version: 2, cases: [] }), message: /field "version"/ },
    { name: 'cases not an array', content: () => JSON.stringify({ fixture: 'tasklatch-contract-replay', version: 1, cases: {} }), message: /field "cases"/ },
    { name: 'no cases', content: () => JSON.stringify({ fixture: 'tasklatch-contract-replay', version: 1, cases: [] }), message: /no cases/ },
    { name: 'missing now', content: () => mutated((f) => delete f.cases[3]!.packet.now), message: /case X-C04 \(cases\[3\]\): field "packet\.now"/ },
    {
      name: 'expectedVersion as a string',
      content: () => mutated((f) => ((f.cases[12]!.packet.write as Record<string, unknown>).expectedVersion = '1')),
      message: /case X-T02 \(cases\[12\]\): field "packet\.write\.expectedVersion": .*number/,
    },
    { name: 'unknown surface', content: () => mutated((f) => (f.cases[1]!.surface = 'delete')), message: /case X-C02 \(cases\[1\]\): field "surface"/ },
    { name: 'unknown decision', content: () => mutated((f) => (f.cases[2]!.expect = 'MAYBE')), message: /case X-C03 .*field "expect"/ },
    {
      name: 'stored status outside the five',
      content: () => mutated((f) => ((f.cases[3]!.packet.prior as Record<string, unknown>).status = 'paused')),
      message: /field "packet\.prior\.status"/,
    },
    {
      name: 'bad timestamp',
      content: () => mutated((f) => (f.cases[0]!.packet.now = '23/07/2026')),
      message: /field "packet\.now": expected an RFC 3339 timestamp/,
    },
    {
      name: 'list without expectTaskIds',
      content: () => mutated((f) => delete f.cases.find((c) => c.id === 'X-L01')!.expectTaskIds),
      message: /case X-L01 .*field "expectTaskIds"/,
    },
    {
      name: 'ask case without its ask',
      content: () => mutated((f) => delete f.cases.find((c) => c.id === 'X-I01')!.packet.ask),
      message: /case X-I01 .*field "packet\.ask": required when op is ask/,
    },
    {
      name: 'answer case expecting an ask decision',
      content: () => mutated((f) => (f.cases.find((c) => c.id === 'X-I17')!.expect = 'APPLY_ASK')),
      message: /case X-I17 .*field "expect": not a decision of answer/,
    },
    {
      name: 'a step case recording a sleep completed',
      content: () => mutated((f) => ((f.cases.find((c) => c.id === 'X-S05')!.packet.record as Record<string, unknown>).status = 'completed')),
      message: /case X-S05 .*field "packet\.record\.status": a sleep step is not completed/,
    },
    {
      name: 'a step journal with one position twice',
      content: () =>
        mutated((f) => {
          const steps = f.cases.find((c) => c.id === 'X-S08')!.packet.steps as Array<Record<string, unknown>>;
          steps[1]!.position = 0;
        }),
      message: /case X-S08 .*field "packet\.steps\.1": a journal holds one row per position and per name/,
    },
    {
      name: 'a stored sleep without its wake time',
      content: () => mutated((f) => delete (f.cases.find((c) => c.id === 'X-S05')!.packet.steps as Array<Record<string, unknown>>)[0]!.wakeAt),
      message: /case X-S05 .*field "packet\.steps\.0\.wakeAt": required when status is sleeping/,
    },
    {
      name: 'a value on a failed step',
      content: () =>
        mutated((f) => Object.assign(f.cases.find((c) => c.id === 'X-S10')!.packet.record as Record<string, unknown>, { status: 'failed', valueBytes: 3 })),
      message: /case X-S10 .*field "packet\.record\.valueBytes": only a completed step \(or a waiting child: its id\) has a value/,
    },
    { name: 'duplicate ids', content: () => mutated((f) => (f.cases[1]!.id = f.cases[0]!.id)), message: /duplicate case id/ },
    { name: 'case not an object', content: () => mutated((f) => ((f.cases as unknown[])[4] = 'C05')), message: /cases\[4\]: expected an object/ },
  ])('exits 2 on a malformed fixture: $name', async (row) => {
    const run = await runCli(['replay', await fixtureFile('bad.json', row.content())]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(row.message);
    expect(run.stdout).toBe('');
  });

  it('exits 2 on an unreadable file, a bad store URL or missing arguments', async () => {
    const missing = await runCli(['replay', join(dir, 'absent.json')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read/);
    const store = await runCli(['replay', OWN, '--store', 'mysql://x']);
    expect(store.code).toBe(2);
    expect(store.stderr).toMatch(/unsupported store URL/);
    expect((await runCli(['replay'])).code).toBe(2);
    expect((await runCli(['replay', OWN, '--bogus'])).code).toBe(2);
    expect((await runCli(['frobnicate'])).code).toBe(2);
  });
});
