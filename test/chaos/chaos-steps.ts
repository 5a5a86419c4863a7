import { readFile } from 'node:fs/promises';
import type { TaskStore } from '../../src/store/types.js';

/** One line of the steps log: an execution of a step's function (chaos-tools.mjs). */
interface Execution {
  taskId: string;
  step: string;
  token: string;
}

/**
 * The durable-steps invariant of the chaos run: every step recorded `completed` has its
 * execution in the log (its value is the token that execution wrote), and no execution of it
 * comes after that one: a recorded step never runs again, whatever was killed. Executions before
 * the recorded one are allowed (a run killed inside the step, a failed attempt) and counted.
 */
export async function checkSteps(
  store: TaskStore,
  tasks: ReadonlyArray<{ taskId: string; authKey: string; status?: string }>,
  logFile: string,
  violations: string[],
): Promise<Record<string, number>> {
  const executions = new Map<string, Execution[]>();
  for (const line of (await readFile(logFile, 'utf8')).split('\n')) {
    if (line === '') continue;
    const e = JSON.parse(line) as Execution;
    const key = `${e.taskId}\n${e.step}`;
    executions.set(key, [...(executions.get(key) ?? []), e]);
  }
  let recorded = 0;
  let reexecuted = 0;
  let unrecorded = 0;
  for (const task of tasks) {
    const journal = (await store.steps({ authKey: task.authKey, taskId: task.taskId, now: Date.now() })).steps ?? [];
    const done = journal.filter((s) => s.kind === 'do' && s.status === 'completed');
    if (task.status === 'completed' && done.length !== 4) violations.push(`steps task ${task.taskId} completed with ${done.length} of 4 steps recorded`);
    for (const row of done) {
      recorded++;
      const lines = executions.get(`${task.taskId}\n${row.name}`) ?? [];
      const at = lines.findIndex((e) => e.token === row.value);
      if (at < 0) {
        violations.push(`step ${row.name} of ${task.taskId}: its recorded value is no execution's`);
        continue;
      }
      unrecorded += at;
      reexecuted += lines.length - at - 1;
    }
  }
  if (reexecuted > 0) violations.push(`${reexecuted} recorded steps ran again after their record`);
  return {
    stepTasks: tasks.length,
    stepTasksCompleted: tasks.filter((t) => t.status === 'completed').length,
    recordedSteps: recorded,
    unrecordedStepAttempts: unrecorded,
    reexecutedRecordedSteps: reexecuted,
  };
}
