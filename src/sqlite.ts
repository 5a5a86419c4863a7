/**
 * `tasklatch/sqlite`: the SQLite store and its migrator. A subpath of its own so that importing
 * the root entry never loads `better-sqlite3`.
 */
export { SqliteStore, type SqliteStoreOptions } from './store/sqlite/store.js';
export { migrateSqlite } from './store/sqlite/migrate.js';
