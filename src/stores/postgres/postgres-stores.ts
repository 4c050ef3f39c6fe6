import { readFile } from "node:fs/promises";
import type {
  Grant,
  GrantApproval,
  GrantLimits,
  GrantStore,
  ReplayStore,
} from "../../agentauth/index.ts";
import { serverCutoff, withDeadline } from "../../core/deadline.ts";
import { InvalidOptionsError, StoreFullError } from "../../core/errors.ts";
import { rejectUnknownKeys, timeoutOption } from "../../core/options.ts";
import {
  CODE_QUOTA_KEYS,
  type CodeQuotaOptions,
  codeQuotas,
  REFRESH_QUOTA_KEYS,
  type RefreshQuotaOptions,
  refreshQuotas,
  SPENT_TOKENS_KEPT,
} from "../../core/store-quotas.ts";
import type {
  AuthorizationCodeRecord,
  AuthorizationCodeStore,
  CodeRedemption,
  RefreshRotation,
  RefreshTokenRecord,
  RefreshTokenStore,
} from "../../oauth2/index.ts";

/**
 * What `migrate` needs of `pg`: a `Pool` (or a client) that runs parameterised
 * queries. Typed by shape, so the stores do not pin pg's own types.
 */
export interface PostgresQueryable {
  query(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }>;
}

/** A connection lent by a pool (a `pg.PoolClient`), held for one transaction. */
export interface PostgresConnection extends PostgresQueryable {
  /** Gives the connection back; with an error, the pool closes it instead. */
  release(error?: Error): void;
  /** While lent, the pool does not listen for the connection's failure: the borrower does. */
  on(event: "error", listener: (error: Error) => void): unknown;
  removeListener(event: "error", listener: (error: Error) => void): unknown;
}

/**
 * What the stores need of `pg`: a `Pool`. Reads run on the pool; each change
 * runs in a transaction on a connection of its own, committed only in time
 * for its caller.
 */
export interface PostgresPool extends PostgresQueryable {
  connect(): Promise<PostgresConnection>;
}

/**
 * Options of the PostgreSQL stores: `PostgresGrantStore`, `PostgresReplayStore`,
 * `PostgresAuthorizationCodeStore` and `PostgresRefreshTokenStore`.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import { migrate, PostgresGrantStore, PostgresReplayStore } from "portcullis/stores/postgres";
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, query_timeout: 2000 });
 * await migrate(pool);
 * const grants = new PostgresGrantStore({ pool, timeoutMs: 2000 });
 * const replay = new PostgresReplayStore({ pool });
 * ```
 */
export interface PostgresStoreOptions {
  /** A `pg.Pool`; the store never ends it. Give it `query_timeout` and `connectionTimeoutMillis` too. */
  readonly pool: PostgresPool;
  /**
   * A query not answered within this many milliseconds rejects (the request then answers 503).
   * A change is committed only when its result is back in time for its caller
   * (within this limit and the caller's own); otherwise it is rolled back.
   *
   * @default 1000
   */
  readonly timeoutMs?: number;
}

/** The schema file the package ships, next to this module (in `src/` and in `dist/`). */
export const MIGRATION_FILE = new URL("./migration.sql", import.meta.url);

/**
 * Options of `migrate`.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import { migrate } from "portcullis/stores/postgres";
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * await migrate(pool, { timeoutMs: 60_000 }); // instances starting together take turns
 * ```
 */
export interface MigrateOptions {
  /**
   * Rejects when the migration has not finished within this many milliseconds
   * (it may be waiting for another instance's).
   *
   * @default 30_000
   */
  readonly timeoutMs?: number;
}

// Instances that start together take turns: CREATE ... IF NOT EXISTS alone is not safe when
// two sessions create the same table at once (one fails on the catalog's unique index).
const MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(7318349394477056)";

/**
 * Creates the tables and indexes the stores use (`migration.sql`); safe to run
 * again, and from several instances at once (they take turns, in one transaction each).
 */
export async function migrate(
  pool: PostgresQueryable,
  options: MigrateOptions = {},
): Promise<void> {
  rejectUnknownKeys("migrate", options, ["timeoutMs"]);
  const timeoutMs = timeoutOption("migrate", "timeoutMs", options.timeoutMs, 30_000);
  const sql = await readFile(MIGRATION_FILE, "utf8");
  // One query string of several statements runs as one transaction, which holds the lock.
  await withDeadline(pool.query(`${MIGRATION_LOCK};\n${sql}`), timeoutMs, "PostgreSQL migration");
}

abstract class PostgresStore {
  protected readonly pool: PostgresPool;
  readonly #timeoutMs: number;

  constructor(name: string, options: PostgresStoreOptions, more: readonly string[] = []) {
    rejectUnknownKeys(name, options, ["pool", "timeoutMs", ...more]);
    if (typeof options?.pool?.query !== "function" || typeof options.pool.connect !== "function")
      throw new InvalidOptionsError(`${name} needs a pg Pool`);
    this.pool = options.pool;
    this.#timeoutMs = timeoutOption(name, "timeoutMs", options.timeoutMs, 1000);
  }

  /** Runs a statement that only reads, within the time limit: a late read changes nothing. */
  protected read(text: string, values: unknown[]) {
    return withDeadline(this.pool.query(text, values), this.#timeoutMs, "PostgreSQL");
  }

  /** Runs a statement that changes rows within the time limit, kept only if in time for its caller. */
  protected change(text: string, values: unknown[]) {
    return withDeadline(
      changeBy(this.pool, text, values, serverCutoff(this.#timeoutMs)),
      this.#timeoutMs,
      "PostgreSQL",
    );
  }

  /**
   * Runs a change as one statement on the pool, within the time limit, kept
   * even when it lands after its caller gave up: for writes whose late
   * landing spends nothing another party needs, at half the round trips.
   */
  protected queryKeptIfLate(text: string, values: unknown[]) {
    return withDeadline(this.pool.query(text, values), this.#timeoutMs, "PostgreSQL");
  }
}

/**
 * Runs a changing statement in a transaction committed only when its result
 * is back before `cutoff` (a `performance.now()` time). A server that stalled
 * and resumed after the caller gave up (and answered 503) thus changes
 * nothing: the transaction is rolled back, here or by the server when the
 * connection goes.
 */
async function changeBy(pool: PostgresPool, text: string, values: unknown[], cutoff: number) {
  const connection = await pool.connect();
  let committed = false;
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken = error;
  };
  connection.on("error", onError);
  try {
    // Handed over together: the connection runs them in turn, with no wait here between.
    const [, result] = await Promise.all([
      connection.query("BEGIN"),
      connection.query(text, values),
    ]);
    if (performance.now() >= cutoff) throw late();
    await connection.query("COMMIT");
    committed = true;
    return result;
  } finally {
    if (!committed)
      await connection.query("ROLLBACK").catch((error: unknown) => {
        broken = error instanceof Error ? error : new Error("ROLLBACK failed");
      });
    connection.removeListener("error", onError);
    connection.release(broken);
  }
}

function late(): Error {
  return new Error("PostgreSQL answered after the caller gave up; the change was rolled back");
}

// Expired rows are removed on access: one delete every this many calls, no timer.
const PRUNE_EVERY = 500;

// Runs beside the call rather than before it, so the call's own statement starts within its
// caller's deadline; a prune that fails is tried again later and fails no call.
function pruneAside(prune: Promise<number>): void {
  prune.catch(() => {});
}

/**
 * `ReplayStore` on PostgreSQL: one `INSERT ... ON CONFLICT` per token id. A
 * row whose token has expired may be taken over in the same statement.
 */
export class PostgresReplayStore extends PostgresStore implements ReplayStore {
  #calls = 0;

  constructor(options: PostgresStoreOptions) {
    super("PostgresReplayStore", options);
  }

  async setIfAbsent(jti: string, expiresAt: number, now: number): Promise<boolean> {
    if (++this.#calls % PRUNE_EVERY === 0) pruneAside(this.prune(now));
    // A token id recorded after its caller answered 503 burns only that token, which its agent
    // replaces from its grant; a transaction per execute would halve the store's throughput.
    const result = await this.queryKeptIfLate(
      `INSERT INTO portcullis_replay (jti, expires_at) VALUES ($1, $2)
       ON CONFLICT (jti) DO UPDATE SET expires_at = EXCLUDED.expires_at
       WHERE portcullis_replay.expires_at <= $3
       RETURNING jti`,
      [jti, Math.ceil(expiresAt), Math.floor(now)],
    );
    return result.rowCount === 1;
  }

  /** Deletes the rows of tokens that have expired; also a maintenance call for a scheduled job. */
  async prune(now = Date.now()): Promise<number> {
    const result = await this.change("DELETE FROM portcullis_replay WHERE expires_at <= $1", [
      Math.floor(now),
    ]);
    return result.rowCount ?? 0;
  }
}

// Ended grants stay listed this long after they expire; `prune` removes older ones.
const GRANT_RETENTION_MS = 30 * 86_400_000;

/**
 * `GrantStore` on PostgreSQL: grants survive restarts; an approval is one call
 * of the migration's `portcullis_approve_grant`, revocation one conditional update.
 */
export class PostgresGrantStore extends PostgresStore implements GrantStore {
  #calls = 0;

  constructor(options: PostgresStoreOptions) {
    super("PostgresGrantStore", options);
  }

  async approve(grant: Grant, limits: GrantLimits): Promise<GrantApproval> {
    if (++this.#calls % PRUNE_EVERY === 0) pruneAside(this.prune(grant.createdAt));
    // A SELECT of a function that writes: kept only if answered in time, like any change.
    const result = await this.change(
      "SELECT portcullis_approve_grant($1, $2, $3, $4, $5, $6, $7, $8, $9) AS approval",
      [
        grant.grantId,
        grant.principalId,
        [...grant.capabilities],
        grant.approvedBy,
        Math.floor(grant.createdAt),
        Math.ceil(grant.expiresAt),
        grant.jkt ?? null,
        limits.perApprover,
        limits.perPrincipal,
      ],
    );
    const approval = result.rows[0]?.approval as
      | {
          outcome: string;
          reason?: string;
          grant?: Record<string, unknown>;
          previous?: Record<string, unknown>;
        }
      | undefined;
    if (approval?.outcome === "created" && approval.grant !== undefined)
      return { outcome: "created", grant: toGrant(approval.grant) };
    if (approval?.outcome === "extended" && approval.grant && approval.previous)
      return {
        outcome: "extended",
        grant: toGrant(approval.grant),
        previous: toGrant(approval.previous),
      };
    const reason = approval?.reason;
    if (
      approval?.outcome === "refused" &&
      (reason === "bound_to_another_key" ||
        reason === "approver_limit" ||
        reason === "principal_limit")
    )
      return { outcome: "refused", reason };
    throw new TypeError("unexpected answer from portcullis_approve_grant");
  }

  async get(grantId: string): Promise<Grant | undefined> {
    if (!storable(grantId)) return undefined;
    const result = await this.read("SELECT * FROM portcullis_grants WHERE grant_id = $1", [
      grantId,
    ]);
    const row = result.rows[0];
    return row === undefined ? undefined : toGrant(row);
  }

  async listByPrincipal(principalId: string): Promise<readonly Grant[]> {
    if (!storable(principalId)) return [];
    const result = await this.read(
      "SELECT * FROM portcullis_grants WHERE principal_id = $1 ORDER BY created_at DESC",
      [principalId],
    );
    return result.rows.map(toGrant);
  }

  async listByApprover(approvedBy: string): Promise<readonly Grant[]> {
    if (!storable(approvedBy)) return [];
    const result = await this.read(
      "SELECT * FROM portcullis_grants WHERE approved_by = $1 ORDER BY created_at DESC",
      [approvedBy],
    );
    return result.rows.map(toGrant);
  }

  async revoke(
    grantId: string,
    capabilities: readonly string[] | undefined,
    now: number,
  ): Promise<Grant | undefined> {
    if (!storable(grantId)) return undefined;
    // One statement, computed from the row as locked: when revocations race,
    // each one re-reads the row the one before it wrote, so none is lost.
    const kept = `COALESCE(ARRAY(
           SELECT c FROM unnest(capabilities) WITH ORDINALITY AS t(c, i)
           WHERE $2::text[] IS NOT NULL AND NOT (c = ANY($2::text[])) ORDER BY i), '{}')`;
    const result = await this.change(
      `UPDATE portcullis_grants SET
         capabilities = ${kept},
         status = CASE WHEN cardinality(${kept}) = 0 THEN 'revoked' ELSE status END,
         revoked_at = CASE WHEN cardinality(${kept}) = 0 THEN COALESCE(revoked_at, $3) ELSE revoked_at END
       WHERE grant_id = $1
       RETURNING *`,
      [grantId, capabilities === undefined ? null : [...capabilities], Math.floor(now)],
    );
    const row = result.rows[0];
    return row === undefined ? undefined : toGrant(row);
  }

  /** Deletes grants that ended more than 30 days ago; also a maintenance call for a scheduled job. */
  async prune(now = Date.now()): Promise<number> {
    const result = await this.change("DELETE FROM portcullis_grants WHERE expires_at <= $1", [
      Math.floor(now) - GRANT_RETENTION_MS,
    ]);
    return result.rowCount ?? 0;
  }
}

/**
 * Options of `PostgresAuthorizationCodeStore`.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import { PostgresAuthorizationCodeStore } from "portcullis/stores/postgres";
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const codes = new PostgresAuthorizationCodeStore({ pool, maxCodesPerPerson: 5 });
 * ```
 */
export interface PostgresAuthorizationCodeStoreOptions
  extends PostgresStoreOptions,
    CodeQuotaOptions {}

/**
 * `AuthorizationCodeStore` on PostgreSQL: creation is one call of
 * `portcullis_create_code` (the person's quota counted and the code written
 * under a lock on that person); redemption is one conditional `UPDATE`,
 * reading the row as locked; an expired row may be taken over by a new code.
 */
export class PostgresAuthorizationCodeStore
  extends PostgresStore
  implements AuthorizationCodeStore
{
  #calls = 0;
  readonly #perPerson: number;

  constructor(options: PostgresAuthorizationCodeStoreOptions) {
    const where = "PostgresAuthorizationCodeStore";
    super(where, options, CODE_QUOTA_KEYS);
    this.#perPerson = codeQuotas(where, options).maxCodesPerPerson;
  }

  async create(record: AuthorizationCodeRecord, now: number): Promise<void> {
    if (++this.#calls % PRUNE_EVERY === 0) pruneAside(this.prune(now));
    const result = await this.change(
      "SELECT outcome, held FROM portcullis_create_code($1, $2, $3, $4, $5, $6, $7)",
      [
        record.codeHash,
        JSON.stringify(record),
        Math.ceil(record.expiresAt),
        Math.floor(now),
        record.clientId,
        record.approvedBy,
        this.#perPerson,
      ],
    );
    const row = result.rows[0];
    if (row?.outcome === "created") return;
    if (row?.outcome === "taken") throw new Error("an authorization code with this hash is held");
    if (row?.outcome === "full")
      throw new StoreFullError({
        store: "the authorization code store",
        quota: "person",
        held: Number(row.held),
        limit: this.#perPerson,
      });
    throw new TypeError("unexpected answer from portcullis_create_code");
  }

  async redeem(codeHash: string, now: number): Promise<CodeRedemption> {
    if (!storable(codeHash)) return { outcome: "unknown" };
    // The sub-select locks the row and, behind a racing redemption, reads it as that one left it.
    const result = await this.change(
      `UPDATE portcullis_authorization_codes AS c SET spent = true
       FROM (SELECT code_hash, spent FROM portcullis_authorization_codes
             WHERE code_hash = $1 AND expires_at > $2 FOR UPDATE) AS old
       WHERE c.code_hash = old.code_hash
       RETURNING c.record, old.spent`,
      [codeHash, Math.floor(now)],
    );
    const row = result.rows[0];
    if (row === undefined) return { outcome: "unknown" };
    const record = JSON.parse(String(row.record)) as AuthorizationCodeRecord;
    return { outcome: row.spent === true ? "reused" : "redeemed", record };
  }

  /** Deletes expired codes; also a maintenance call for a scheduled job. */
  async prune(now = Date.now()): Promise<number> {
    const result = await this.change(
      "DELETE FROM portcullis_authorization_codes WHERE expires_at <= $1",
      [Math.floor(now)],
    );
    return result.rowCount ?? 0;
  }
}

/**
 * Options of `PostgresRefreshTokenStore`.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import { PostgresRefreshTokenStore } from "portcullis/stores/postgres";
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const refreshTokens = new PostgresRefreshTokenStore({ pool, maxFamiliesPerPerson: 50 });
 * ```
 */
export interface PostgresRefreshTokenStoreOptions
  extends PostgresStoreOptions,
    RefreshQuotaOptions {}

/**
 * `RefreshTokenStore` on PostgreSQL: a row per family naming its current
 * token, and a row per token; a family starts in one call of
 * `portcullis_create_refresh_family` (the person's quotas applied under a
 * lock on that person); rotation is one statement that locks the family's
 * row, so of racing rotations exactly one moves it.
 */
export class PostgresRefreshTokenStore extends PostgresStore implements RefreshTokenStore {
  #calls = 0;
  readonly #quotas: Required<RefreshQuotaOptions>;

  constructor(options: PostgresRefreshTokenStoreOptions) {
    const where = "PostgresRefreshTokenStore";
    super(where, options, REFRESH_QUOTA_KEYS);
    this.#quotas = refreshQuotas(where, options);
  }

  async create(record: RefreshTokenRecord, now: number): Promise<void> {
    if (++this.#calls % PRUNE_EVERY === 0) pruneAside(this.prune(now));
    const result = await this.change(
      "SELECT portcullis_create_refresh_family($1, $2, $3, $4, $5, $6, $7, $8, $9) AS outcome",
      [
        record.familyId,
        record.tokenHash,
        JSON.stringify(record),
        Math.ceil(record.expiresAt),
        Math.floor(now),
        record.clientId,
        record.approvedBy,
        this.#quotas.maxFamiliesPerClientAndPerson,
        this.#quotas.maxFamiliesPerPerson,
      ],
    );
    const outcome = result.rows[0]?.outcome;
    if (outcome === "taken") throw new Error("a refresh family or token with this id is held");
    if (outcome !== "created")
      throw new TypeError("unexpected answer from portcullis_create_refresh_family");
  }

  async find(tokenHash: string, now: number): Promise<RefreshTokenRecord | undefined> {
    if (!storable(tokenHash)) return undefined;
    const result = await this.read(
      `SELECT t.record FROM portcullis_refresh_tokens t
       JOIN portcullis_refresh_families f ON f.family_id = t.family_id
       WHERE t.token_hash = $1 AND t.kept_until > $2 AND f.expires_at > $2
         AND f.current_hash IS NOT NULL`,
      [tokenHash, Math.floor(now)],
    );
    const row = result.rows[0];
    return row === undefined ? undefined : (JSON.parse(String(row.record)) as RefreshTokenRecord);
  }

  async rotate(tokenHash: string, next: RefreshTokenRecord, now: number): Promise<RefreshRotation> {
    if (!storable(tokenHash) || !storable(next.familyId)) return { outcome: "unknown" };
    // `old` locks the family's row and, behind a racing rotation, reads it as that one left it;
    // the update then moves the family only from this token, the insert only if it moved.
    const result = await this.change(
      `WITH old AS (
         SELECT t.record, f.family_id, f.current_hash
         FROM portcullis_refresh_tokens t
         JOIN portcullis_refresh_families f ON f.family_id = t.family_id
         WHERE t.token_hash = $1 AND t.kept_until > $2 AND f.expires_at > $2 AND f.family_id = $4
         FOR UPDATE OF f
       ), moved AS (
         UPDATE portcullis_refresh_families f
         SET current_hash = $3, generation = f.generation + 1
         FROM old
         WHERE f.family_id = old.family_id AND old.current_hash = $1
           AND (old.record::jsonb ->> 'clientId') = $5
           AND (old.record::jsonb ->> 'expiresAt')::numeric > $2
         RETURNING f.family_id, f.expires_at, f.generation
       ), added AS (
         INSERT INTO portcullis_refresh_tokens (token_hash, family_id, record, kept_until, generation)
         SELECT $3, family_id, $6, expires_at, generation FROM moved
         RETURNING token_hash
       ), trimmed AS (
         DELETE FROM portcullis_refresh_tokens t USING moved
         WHERE t.family_id = moved.family_id AND t.generation < moved.generation - $7
       )
       SELECT old.record, old.current_hash, (SELECT count(*) FROM added)::int AS added FROM old`,
      [
        tokenHash,
        Math.floor(now),
        next.tokenHash,
        next.familyId,
        next.clientId,
        JSON.stringify(next),
        SPENT_TOKENS_KEPT,
      ],
    );
    const row = result.rows[0];
    if (row === undefined || row.current_hash === null) return { outcome: "unknown" };
    const record = JSON.parse(String(row.record)) as RefreshTokenRecord;
    if (record.clientId !== next.clientId) return { outcome: "unknown" };
    if (row.current_hash !== tokenHash) return { outcome: "reused", record };
    return row.added === 1 ? { outcome: "rotated", record } : { outcome: "unknown" };
  }

  async revokeFamily(familyId: string): Promise<void> {
    if (!storable(familyId)) return;
    // The family stays, ended, until it expires (its id cannot start again); its tokens go.
    await this.change(
      `WITH ended AS (
         UPDATE portcullis_refresh_families SET current_hash = NULL WHERE family_id = $1
         RETURNING family_id)
       DELETE FROM portcullis_refresh_tokens t USING ended WHERE t.family_id = ended.family_id`,
      [familyId],
    );
  }

  /** Deletes the families that have expired, and their tokens; also a maintenance call for a scheduled job. */
  async prune(now = Date.now()): Promise<number> {
    const result = await this.change(
      `WITH tokens AS (DELETE FROM portcullis_refresh_tokens WHERE kept_until <= $1)
       DELETE FROM portcullis_refresh_families WHERE expires_at <= $1`,
      [Math.floor(now)],
    );
    return result.rowCount ?? 0;
  }
}

/**
 * PostgreSQL's text cannot hold NUL, so no stored row has it: such an id
 * names nothing, as in the other stores, rather than failing the query (503).
 */
function storable(text: string): boolean {
  return !text.includes("\u0000");
}

function toGrant(row: Record<string, unknown>): Grant {
  return {
    grantId: String(row.grant_id),
    principalId: String(row.principal_id),
    status: row.status as Grant["status"],
    capabilities: (row.capabilities as string[]) ?? [],
    approvedBy: String(row.approved_by),
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    ...(row.revoked_at === null || row.revoked_at === undefined
      ? {}
      : { revokedAt: Number(row.revoked_at) }),
    ...(typeof row.jkt === "string" ? { jkt: row.jkt } : {}),
  };
}
