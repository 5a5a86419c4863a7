/**
 * `tasklatch/postgres`: the PostgreSQL store and its migration runner. A subpath of its own so
 * that importing the root entry never loads `pg`.
 */
export { PostgresStore, type PostgresStoreOptions } from './store/postgres/store.js';
export { migratePostgres, readPostgresMigrations, POSTGRES_MIGRATIONS_DIR, type MigrationFile } from './store/postgres/migrate.js';
