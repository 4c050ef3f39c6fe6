-- Portcullis agent stores: grants (durable), used capability-token ids, authorization codes
-- and refresh tokens.
-- Apply once per database: psql -f migration.sql, or migrate(pool) from
-- portcullis/stores/postgres. Every statement can run again safely.

CREATE TABLE IF NOT EXISTS portcullis_grants (
  grant_id     text PRIMARY KEY,
  principal_id text NOT NULL,
  status       text NOT NULL CHECK (status IN ('active', 'revoked', 'expired')),
  capabilities text[] NOT NULL,
  approved_by  text NOT NULL,
  created_at   bigint NOT NULL,
  expires_at   bigint NOT NULL,
  revoked_at   bigint
);
CREATE INDEX IF NOT EXISTS portcullis_grants_principal ON portcullis_grants (principal_id, created_at DESC);
CREATE INDEX IF NOT EXISTS portcullis_grants_approver ON portcullis_grants (approved_by, created_at DESC);
CREATE INDEX IF NOT EXISTS portcullis_grants_expires ON portcullis_grants (expires_at);
-- The DPoP key a grant is bound to; added later, so a database made before gains it here.
-- Altered only when missing: ALTER TABLE takes an exclusive lock even when it changes nothing,
-- and would queue every grant query behind any open transaction at each instance's start.
DO $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM pg_attribute
    WHERE attrelid = 'portcullis_grants'::regclass AND attname = 'jkt' AND NOT attisdropped
  ) THEN
    PERFORM set_config('lock_timeout', '5s', true);
    ALTER TABLE portcullis_grants ADD COLUMN jkt text;
  END IF;
END $$;

CREATE TABLE IF NOT EXISTS portcullis_replay (
  jti        text PRIMARY KEY,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS portcullis_replay_expires ON portcullis_replay (expires_at);

-- Authorization codes by hash: `spent` once redeemed, kept until expires_at to see a replay.
CREATE TABLE IF NOT EXISTS portcullis_authorization_codes (
  code_hash  text PRIMARY KEY,
  record     text NOT NULL,
  spent      boolean NOT NULL DEFAULT false,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS portcullis_authorization_codes_expires ON portcullis_authorization_codes (expires_at);

-- Refresh-token families: current_hash is the one token that may rotate, NULL once revoked.
CREATE TABLE IF NOT EXISTS portcullis_refresh_families (
  family_id    text PRIMARY KEY,
  current_hash text,
  expires_at   bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS portcullis_refresh_families_expires ON portcullis_refresh_families (expires_at);
-- Every token of a family, spent ones included, kept until the family expires (kept_until).
CREATE TABLE IF NOT EXISTS portcullis_refresh_tokens (
  token_hash text PRIMARY KEY,
  family_id  text NOT NULL,
  record     text NOT NULL,
  kept_until bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS portcullis_refresh_tokens_kept ON portcullis_refresh_tokens (kept_until);
