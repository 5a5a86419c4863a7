/** Stop flag and checkpoint count a looping task shares with the bench (same process). */
export interface LoopState {
  stop: boolean;
  checkpoints: number;
}

/**
 * Steps one looping task checkpoints at most: it then ends, and the loop starts the next task,
 * until told to stop. Below the journal's default bound (`maxJournalSteps`, 1000 steps a task),
 * which a window of 16 tasks at about 200 steps a second each would otherwise pass; both sides
 * loop alike.
 */
export const LOOP_STEPS = 500;

/** One side of the steps comparison, as its process drives it. */
export interface StepsSide {
  /** Runs one task of `steps` steps end to end; `worker` is the requestor's index. */
  runTask(worker: number): Promise<void>;
  /** Runs tasks of at most `LOOP_STEPS` checkpoints, one after another, until `state.stop`; resolves once the last has finished. */
  runLoop(state: LoopState): Promise<void>;
  close(): Promise<void>;
}
