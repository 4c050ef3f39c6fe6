-- Portcullis agent stores: grants (durable) and used capability-token ids.
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
