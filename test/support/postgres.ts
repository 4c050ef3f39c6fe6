import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { migrate } from "../../src/stores/postgres/index.ts";

/**
 * A pool on the real PostgreSQL the suite needs (scripts/ensure-services.sh
 * starts it), in a schema of its own made and migrated before the file's
 * tests and dropped after them. No skip: an unreachable server fails the tests.
 */
export function postgresForTests(label: string, options: { readonly max?: number } = {}) {
  const schema = `portcullis_${label}_${crypto.randomUUID().replace(/-/g, "")}`;
  const pool = new pg.Pool({
    connectionString: process.env.PORTCULLIS_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test",
    options: `-c search_path=${schema}`,
    ...(options.max === undefined ? {} : { max: options.max }),
  });
  beforeAll(async () => {
    await pool.query(`CREATE SCHEMA ${schema}`);
    await migrate(pool);
    await migrate(pool); // a second run changes nothing, and must not fail
  });
  afterAll(async () => {
    await pool.query(`DROP SCHEMA ${schema} CASCADE`);
    await pool.end();
  });
  return { pool, schema };
}
