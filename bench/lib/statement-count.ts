import pg from 'pg';

/**
 * Counts the statements every pg client of this process sends (tasklatch's store and DBOS
 * Transact share the one `pg` package), by wrapping `pg.Client.prototype.query` once. The
 * wrapper only increments a number, so it costs both sides of a comparison alike.
 */
let count = 0;
let installed = false;

/** Installs the counter (once) and returns the statements sent so far. */
export function statementsSent(): number {
  if (!installed) {
    installed = true;
    const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
    (pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown }).query = function (this: pg.Client, ...args: unknown[]) {
      count++;
      return query.apply(this, args);
    };
  }
  return count;
}
