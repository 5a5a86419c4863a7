/** Stop flag and checkpoint count a looping task shares with the bench (same process). */
export interface LoopState {
  stop: boolean;
  checkpoints: number;
}

/** One side of the steps comparison, as its process drives it. */
export interface StepsSide {
  /** Runs one task of `steps` steps end to end; `worker` is the requestor's index. */
  runTask(worker: number): Promise<void>;
  /** Runs a task that checkpoints steps until `state.stop`; resolves once it has finished. */
  runLoop(state: LoopState): Promise<void>;
  close(): Promise<void>;
}
