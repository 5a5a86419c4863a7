import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { isTasklatchError } from '../core/errors.js';
import { parseFixture } from '../replay/fixture.js';
import { runReplay, type ReplayReport } from '../replay/run-replay.js';
import { describeStoreUrl, openStore } from '../store/open-store.js';
import { renderTable } from './table.js';
import type { CliIo } from './io.js';

export const REPLAY_USAGE = `Usage: tasklatch replay FILE [--store URL] [--json]

Replays a contract fixture through a store and compares every decision.
  --store URL   memory (default), sqlite:PATH or postgres://…
  --json        print one JSON report on stdout and nothing else
Exit status: 0 all cases match, 1 a mismatch, 2 unreadable or malformed fixture.`;

export async function replayCommand(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { store: { type: 'string', default: 'memory' }, json: { type: 'boolean', default: false }, help: { type: 'boolean' } },
  });
  if (values.help === true) {
    io.out(REPLAY_USAGE);
    return 0;
  }
  const file = positionals[0];
  if (file === undefined || positionals.length > 1) {
    io.err(REPLAY_USAGE);
    return 2;
  }
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    io.err(`tasklatch replay: cannot read ${file}: ${(error as Error).message}`);
    return 2;
  }
  let fixture;
  try {
    fixture = parseFixture(bytes.toString('utf8'));
  } catch (error) {
    if (!isTasklatchError(error)) throw error;
    io.err(`tasklatch replay: malformed fixture ${file}: ${error.message}`);
    return 2;
  }
  const store = await openStore(values.store);
  let report: ReplayReport;
  try {
    report = await runReplay(fixture, bytes, store, describeStoreUrl(values.store));
  } finally {
    await store.close();
  }
  if (values.json === true) {
    io.out(JSON.stringify(jsonReport(report)));
  } else {
    printHuman(report, file, io);
  }
  return report.failed === 0 ? 0 : 1;
}

function jsonReport(report: ReplayReport): unknown {
  return {
    fixtureSha256: report.fixtureSha256,
    store: report.store,
    cases: report.cases.map((c) => ({
      id: c.id,
      expect: c.expect,
      actual: c.actual,
      ok: c.ok,
      ...(c.taskIds === undefined ? {} : { taskIds: c.taskIds }),
    })),
    passed: report.passed,
    failed: report.failed,
  };
}

function printHuman(report: ReplayReport, file: string, io: CliIo): void {
  io.out(`fixture  ${file}`);
  io.out(`sha256   ${report.fixtureSha256}`);
  io.out(`store    ${report.store}`);
  io.out('');
  const rows = report.cases.map((c) => [c.id, c.surface, c.hostile ? 'yes' : 'no', c.expect, c.actual, c.ok ? 'ok' : 'FAIL']);
  io.out(renderTable(['id', 'surface', 'hostile', 'expected', 'actual', 'ok'], rows));
  for (const c of report.cases) {
    if (!c.ok && c.expectTaskIds !== undefined) {
      io.out(`${c.id}: listed [${(c.taskIds ?? []).join(', ')}], expected [${c.expectTaskIds.join(', ')}]`);
    }
  }
  io.out('');
  io.out(`${report.passed} passed, ${report.failed} failed`);
}
