/**
 * Polls `probe` every 10 ms until it returns something other than undefined. Tests wait on the
 * condition, never on the clock: `ms` is only a safety net so that a condition that never comes
 * fails the test with a clear message instead of its timeout, and it is generous on purpose (a busy
 * machine may take seconds for what takes milliseconds on an idle one). A test that means "not
 * before the poll" makes the poll longer than this, not this shorter.
 */
export async function until<T>(probe: () => Promise<T | undefined> | T | undefined, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`condition not reached in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
