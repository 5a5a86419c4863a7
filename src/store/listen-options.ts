/** What a store's `listen` is told besides where to report. */
export interface ListenOptions {
  /**
   * Whether the listener's owner knows of this change already (its own write coming back): such
   * a change need not be reported, nor the record sent with it opened.
   */
  knows?: (taskId: string, version: number) => boolean;
  /**
   * Whether a change of this task is awaited in the listener's process now (a result wait, a
   * status watch): a terminal write made there then tells the other processes of its change
   * without the record. Its requestor is most likely the one waiting there, woken with the record
   * by the write itself; a waiter elsewhere reads the task once instead.
   */
  waitedHere?: (taskId: string) => boolean;
}
