/**
 * Agent stores on PostgreSQL through `pg`: durable grants and replay
 * protection shared by every instance. Apply the schema first with
 * `migrate(pool)` or `migration.sql`.
 *
 * @module portcullis/stores/postgres
 */

export {
  MIGRATION_FILE,
  type MigrateOptions,
  migrate,
  PostgresGrantStore,
  type PostgresQueryable,
  PostgresReplayStore,
  type PostgresStoreOptions,
} from "./postgres-stores.ts";
