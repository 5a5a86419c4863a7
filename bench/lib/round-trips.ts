import pg from 'pg';

/**
 * Counts the round trips every pg client of this process makes (tasklatch's store and DBOS
 * Transact both use the one `pg` package), by wrapping `pg.Client.prototype.query` once: each
 * call is one message to the server and one wait for its answer. A call may carry several
 * statements (tasklatch sends a transaction's statements as one message), so this counts
 * round trips, not statements. The wrapper only increments a number: it costs every side alike.
 */
let count = 0;
let installed = false;

/** Installs the counter (once) and returns the round trips made so far. */
export function roundTrips(): number {
  if (!installed) {
    installed = true;
    const proto = pg.Client.prototype as unknown as { query: (this: pg.Client, ...args: unknown[]) => unknown };
    const query = proto.query;
    proto.query = function (this: pg.Client, ...args: unknown[]) {
      count++;
      return query.apply(this, args);
    };
  }
  return count;
}
