/**
 * Agent stores on PostgreSQL through `pg`: durable grants, replay
 * protection, authorization codes and refresh tokens shared by every instance. Apply the schema first with
 * `migrate(pool)` or `migration.sql`.
 *
 * Needs the optional peer `pg` 8: `npm install pg` (and `@types/pg` for TypeScript).
 *
 * @module portcullis/stores/postgres
 */

export {
  MIGRATION_FILE,
  type MigrateOptions,
  migrate,
  PostgresAuthorizationCodeStore,
  type PostgresAuthorizationCodeStoreOptions,
  type PostgresConnection,
  PostgresGrantStore,
  type PostgresPool,
  type PostgresQueryable,
  PostgresRefreshTokenStore,
  type PostgresRefreshTokenStoreOptions,
  PostgresReplayStore,
  type PostgresStoreOptions,
} from "./postgres-stores.ts";
