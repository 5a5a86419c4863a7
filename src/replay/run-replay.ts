import { createHash, randomBytes } from 'node:crypto';
import { parseTimestamp } from '../core/time.js';
import type { TaskCapabilities } from '../core/types.js';
import { createTask } from '../runtime/requests/create-task.js';
import { openGuard } from '../service/guard.js';
import type { TaskStore } from '../store/types.js';
import type { ReplayCase, ReplayFixture } from './fixture.js';
import { performInput } from './perform-input.js';
import { performStep } from './perform-step.js';
import { toRecord } from './to-record.js';

export { toRecord } from './to-record.js';

export interface CaseOutcome {
  id: string;
  surface: ReplayCase['surface'];
  hostile: boolean;
  title: string;
  expect: string;
  actual: string;
  ok: boolean;
  /** List cases: the ids the store listed, in order. */
  taskIds?: string[];
  expectTaskIds?: string[];
}

export interface ReplayReport {
  fixtureSha256: string;
  store: string;
  cases: CaseOutcome[];
  passed: number;
  failed: number;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Replays every case through `store`: seeds the case's stored records, performs the operation
 * through the guard (`openGuard`: the path the wire uses; input cases through the store, which
 * decides them: `performInput`; step cases, which the guard does not serve, through the
 * store too: `performStep`), and compares decisions.
 *
 * Cases share one store, so each case's ids and auth keys live under a namespace of their own
 * (`replay-<run>/<case>/`); the prefix is the same for every record of a case, so equality and
 * list order are those of the packet.
 */
export async function runReplay(fixture: ReplayFixture, fixtureBytes: Uint8Array, store: TaskStore, storeLabel: string): Promise<ReplayReport> {
  const run = randomBytes(6).toString('hex');
  const cases: CaseOutcome[] = [];
  for (const replayCase of fixture.cases) {
    cases.push(await runCase(replayCase, store, `replay-${run}/${replayCase.id}/`));
  }
  const passed = cases.filter((c) => c.ok).length;
  return { fixtureSha256: sha256Hex(fixtureBytes), store: storeLabel, cases, passed, failed: cases.length - passed };
}

async function runCase(replayCase: ReplayCase, store: TaskStore, ns: string): Promise<CaseOutcome> {
  const base = {
    id: replayCase.id,
    surface: replayCase.surface,
    hostile: replayCase.hostile ?? false,
    title: replayCase.title ?? '',
    expect: replayCase.expect,
  };
  try {
    const { actual, taskIds } = await perform(replayCase, store, ns);
    if (replayCase.surface === 'list') {
      const listed = taskIds ?? [];
      const idsOk = actual !== 'LIST_FILTERED' || sameList(listed, replayCase.expectTaskIds ?? []);
      return { ...base, actual, ok: actual === replayCase.expect && idsOk, taskIds: listed, expectTaskIds: replayCase.expectTaskIds };
    }
    return { ...base, actual, ok: actual === replayCase.expect };
  } catch (error) {
    return { ...base, actual: `ERROR: ${(error as Error).message}`, ok: false };
  }
}

async function perform(replayCase: ReplayCase, store: TaskStore, ns: string): Promise<{ actual: string; taskIds?: string[] }> {
  const { packet } = replayCase;
  const auth = ns + packet.auth;
  const capabilities: TaskCapabilities =
    'capabilities' in packet ? (packet.capabilities as TaskCapabilities) : { list: {}, cancel: {}, requests: { tools: { call: {} } } };
  // The contract has no bounds on a caller's tasks; a case that names tasklatch's own sets them.
  const bounds = { maxActiveTasks: null, maxStoredTasks: null, ...(replayCase.surface === 'create' ? replayCase.packet.limits : undefined) };
  const guard = openGuard({ store, capabilities, clock: () => parseTimestamp(packet.now), limits: bounds });
  switch (replayCase.surface) {
    case 'create': {
      const p = replayCase.packet;
      if (p.prior !== null) await store.seed([toRecord(p.prior, ns)]);
      const outcome = await createTask(guard, { auth, tool: p.tool, request: p.request });
      return { actual: outcome.decision };
    }
    case 'transition': {
      const p = replayCase.packet;
      if (p.task !== null) await store.seed([toRecord(p.task, ns)]);
      const taskId = ns + (p.task?.taskId ?? 'absent');
      const outcome = await guard.worker.transition({ auth, taskId, write: p.write });
      return { actual: outcome.decision };
    }
    case 'read': {
      const p = replayCase.packet;
      if (p.task !== null) await store.seed([toRecord(p.task, ns)]);
      const taskId = ns + p.params.taskId;
      const outcome =
        p.method === 'tasks/cancel' ? await guard.requestor.cancel({ auth, taskId }) : await guard.requestor.read({ auth, method: p.method, taskId });
      return { actual: outcome.decision };
    }
    case 'list': {
      const p = replayCase.packet;
      await store.seed(p.tasks.map((t) => toRecord(t, ns)));
      const taskIds: string[] = [];
      let cursor: string | undefined;
      // Follow every page: the expectation is the whole filtered listing.
      for (;;) {
        const outcome = await guard.requestor.list({ auth, cursor });
        if (outcome.decision !== 'LIST_FILTERED') return { actual: outcome.decision };
        taskIds.push(...outcome.records.map((r) => r.taskId.slice(ns.length)));
        if (outcome.nextCursor === null) return { actual: outcome.decision, taskIds };
        cursor = outcome.nextCursor;
      }
    }
    case 'input':
      return { actual: await performInput(replayCase, store, ns) };
    case 'step':
      return { actual: await performStep(replayCase, store, ns) };
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
