import pg from 'pg';

/**
 * Counts the round trips every pg client of this process makes (tasklatch's store and DBOS
 * Transact both use the one `pg` package), by wrapping `pg.Client.prototype.query` once: each
 * call is one message to the server and one wait for its answer. A call may carry several
 * statements (tasklatch sends a transaction's statements as one message), so this counts
 * round trips, not statements. With no listener (`onQuery`) the wrapper only increments a
 * number: it costs every side alike.
 */
let count = 0;
let installed = false;

/** Hears one call: its text, and what pg returned (the answer's promise, or undefined for a callback). */
export type QueryListener = (text: string, returned: unknown) => void;
const listeners = new Set<QueryListener>();

function install(): void {
  if (installed) return;
  installed = true;
  const proto = pg.Client.prototype as unknown as { query: (this: pg.Client, ...args: unknown[]) => unknown };
  const query = proto.query;
  proto.query = function (this: pg.Client, ...args: unknown[]) {
    count++;
    if (listeners.size === 0) return query.apply(this, args);
    const first = args[0];
    const text = typeof first === 'string' ? first : ((first as { text?: string } | null)?.text ?? '?');
    const returned = query.apply(this, args);
    for (const listener of listeners) listener(text, returned);
    return returned;
  };
}

/** Installs the counter (once) and returns the round trips made so far. */
export function roundTrips(): number {
  install();
  return count;
}

/** Calls `listener` on every pg query call of this process from now on; returns the function that stops it. */
export function onQuery(listener: QueryListener): () => void {
  install();
  listeners.add(listener);
  return () => listeners.delete(listener);
}
