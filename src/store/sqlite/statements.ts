import type { SqliteDatabase, SqliteStatement } from './driver.js';
import { dispatchSql } from './dispatch-statements.js';
import { inputSql } from './input-statements.js';
import { taskSql } from './task-statements.js';

/**
 * Every statement of the SQLite store's roles by name (`sql.insertTask`, `sql.applyClaim`,
 * `sql.applyAsk`), gathered from the file of each role: task-statements.ts (records),
 * dispatch-statements.ts, input-statements.ts. The audit trail, the operator's reads and the
 * step journal keep their SQL beside the code that runs it (audit.ts, operations.ts, steps.ts).
 * Names are unique across the roles, as in the PostgreSQL store's map.
 */
const SQL = { ...taskSql, ...dispatchSql, ...inputSql } as const;

/** The store's statements, prepared once per connection. */
export type Statements = { readonly [K in keyof typeof SQL]: SqliteStatement };

export function prepareStatements(db: SqliteDatabase): Statements {
  const entries = Object.entries(SQL).map(([name, text]) => [name, db.prepare(text)] as const);
  return Object.fromEntries(entries) as Statements;
}
