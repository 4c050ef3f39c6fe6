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

-- Each agent's and each approver's active grants, counted when an approval would add one.
CREATE INDEX IF NOT EXISTS portcullis_grants_active_principal
  ON portcullis_grants (principal_id, expires_at) WHERE status = 'active';
CREATE INDEX IF NOT EXISTS portcullis_grants_active_approver
  ON portcullis_grants (approved_by, expires_at) WHERE status = 'active';

-- A human's approval of an agent, in one call (GrantStore.approve): the pair's active grant takes
-- it (capabilities added, expiry extended, same id; a grant bound to a DPoP key only from that
-- key), else a new grant within the limits, and the approver's ended grants beyond their limit go.
-- Approvals by one human, and of one agent, take turns on advisory locks held until the call's
-- transaction ends, and each statement reads afresh (READ COMMITTED): two racing approvals of one
-- pair end in one grant, and no limit is passed.
CREATE OR REPLACE FUNCTION portcullis_approve_grant(
  p_grant_id text,
  p_principal_id text,
  p_capabilities text[],
  p_approved_by text,
  p_created_at bigint,
  p_expires_at bigint,
  p_jkt text,
  p_per_approver integer,
  p_per_principal integer
) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  held portcullis_grants%ROWTYPE;
  changed portcullis_grants%ROWTYPE;
BEGIN
  PERFORM pg_advisory_xact_lock(731834939, hashtext(p_approved_by));
  PERFORM pg_advisory_xact_lock(731834940, hashtext(p_principal_id));
  SELECT * INTO held FROM portcullis_grants
    WHERE principal_id = p_principal_id AND approved_by = p_approved_by
      AND status = 'active' AND expires_at > p_created_at
    ORDER BY created_at DESC LIMIT 1;
  IF FOUND THEN
    IF held.jkt IS NOT NULL AND held.jkt IS DISTINCT FROM p_jkt THEN
      RETURN jsonb_build_object('outcome', 'refused', 'reason', 'bound_to_another_key');
    END IF;
    UPDATE portcullis_grants SET
      capabilities = held.capabilities || ARRAY(
        SELECT c FROM (
          SELECT DISTINCT ON (c) c, i FROM unnest(p_capabilities) WITH ORDINALITY AS t(c, i)
          ORDER BY c, i
        ) AS asked
        WHERE NOT (c = ANY(held.capabilities)) ORDER BY i),
      expires_at = GREATEST(held.expires_at, p_expires_at),
      jkt = COALESCE(held.jkt, p_jkt)
    WHERE grant_id = held.grant_id
    RETURNING * INTO changed;
    RETURN jsonb_build_object(
      'outcome', 'extended', 'grant', to_jsonb(changed), 'previous', to_jsonb(held));
  END IF;
  IF (SELECT count(*) FROM portcullis_grants
      WHERE approved_by = p_approved_by AND status = 'active' AND expires_at > p_created_at)
      >= p_per_approver THEN
    RETURN jsonb_build_object('outcome', 'refused', 'reason', 'approver_limit');
  END IF;
  IF (SELECT count(*) FROM portcullis_grants
      WHERE principal_id = p_principal_id AND status = 'active' AND expires_at > p_created_at)
      >= p_per_principal THEN
    RETURN jsonb_build_object('outcome', 'refused', 'reason', 'principal_limit');
  END IF;
  INSERT INTO portcullis_grants
    (grant_id, principal_id, status, capabilities, approved_by, created_at, expires_at, jkt)
    VALUES (p_grant_id, p_principal_id, 'active', p_capabilities, p_approved_by, p_created_at,
            p_expires_at, p_jkt)
    RETURNING * INTO changed;
  DELETE FROM portcullis_grants WHERE grant_id IN (
    SELECT grant_id FROM portcullis_grants
    WHERE approved_by = p_approved_by AND (status <> 'active' OR expires_at <= p_created_at)
    ORDER BY created_at DESC OFFSET p_per_approver);
  RETURN jsonb_build_object('outcome', 'created', 'grant', to_jsonb(changed));
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

-- Who holds each code and each family, for the per-person quotas, and each token's place in its
-- family (generation), so a family keeps only its last spent tokens. Added later, so a database
-- made before gains them here (rows made before have no holder, and count against nobody);
-- altered only when missing, as above.
DO $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM pg_attribute
    WHERE attrelid = 'portcullis_authorization_codes'::regclass AND attname = 'approved_by'
      AND NOT attisdropped
  ) THEN
    PERFORM set_config('lock_timeout', '5s', true);
    ALTER TABLE portcullis_authorization_codes ADD COLUMN client_id text, ADD COLUMN approved_by text;
  END IF;
  IF NOT EXISTS (
    SELECT 1 FROM pg_attribute
    WHERE attrelid = 'portcullis_refresh_families'::regclass AND attname = 'approved_by'
      AND NOT attisdropped
  ) THEN
    PERFORM set_config('lock_timeout', '5s', true);
    ALTER TABLE portcullis_refresh_families ADD COLUMN client_id text, ADD COLUMN approved_by text,
      ADD COLUMN created_at bigint NOT NULL DEFAULT 0, ADD COLUMN generation integer NOT NULL DEFAULT 0;
  END IF;
  IF NOT EXISTS (
    SELECT 1 FROM pg_attribute
    WHERE attrelid = 'portcullis_refresh_tokens'::regclass AND attname = 'generation'
      AND NOT attisdropped
  ) THEN
    PERFORM set_config('lock_timeout', '5s', true);
    ALTER TABLE portcullis_refresh_tokens ADD COLUMN generation integer NOT NULL DEFAULT 0;
  END IF;
  CREATE INDEX IF NOT EXISTS portcullis_authorization_codes_person ON portcullis_authorization_codes (approved_by, client_id);
  CREATE INDEX IF NOT EXISTS portcullis_refresh_families_person ON portcullis_refresh_families (approved_by, client_id);
  CREATE INDEX IF NOT EXISTS portcullis_refresh_tokens_family ON portcullis_refresh_tokens (family_id, generation);
END $$;

-- A new code, within its person's quota, in one call: the person's codes are counted and written
-- by one transaction at a time (an advisory lock on the person), each statement seeing what the
-- one before it committed. The pair's earlier code goes first. Answers 'created', 'taken' (the
-- hash is held by an unexpired code) or 'full' with the codes the person holds.
CREATE OR REPLACE FUNCTION portcullis_create_code(
  p_hash text, p_record text, p_expires bigint, p_now bigint,
  p_client text, p_person text, p_limit integer
) RETURNS TABLE (outcome text, held integer) LANGUAGE plpgsql AS $fn$
DECLARE
  counted integer;
BEGIN
  PERFORM pg_advisory_xact_lock(1886548333, hashtext(p_person));
  IF EXISTS (SELECT 1 FROM portcullis_authorization_codes c
             WHERE c.code_hash = p_hash AND c.expires_at > p_now) THEN
    RETURN QUERY SELECT 'taken'::text, 0;
    RETURN;
  END IF;
  DELETE FROM portcullis_authorization_codes c
  WHERE c.approved_by = p_person AND (c.client_id = p_client OR c.expires_at <= p_now);
  SELECT count(*) INTO counted FROM portcullis_authorization_codes c WHERE c.approved_by = p_person;
  IF counted >= p_limit THEN
    RETURN QUERY SELECT 'full'::text, counted;
    RETURN;
  END IF;
  INSERT INTO portcullis_authorization_codes AS c
    (code_hash, record, spent, expires_at, client_id, approved_by)
  VALUES (p_hash, p_record, false, p_expires, p_client, p_person)
  ON CONFLICT (code_hash) DO UPDATE
    SET record = EXCLUDED.record, spent = false, expires_at = EXCLUDED.expires_at,
        client_id = EXCLUDED.client_id, approved_by = EXCLUDED.approved_by
    WHERE c.expires_at <= p_now;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'an authorization code with this hash is held';
  END IF;
  RETURN QUERY SELECT 'created'::text, counted + 1;
END
$fn$;

-- A new refresh family, within its person's quotas, in one call, under the same kind of lock:
-- the pair's oldest live families, then the person's ended ones, then their oldest live ones are
-- forgotten (rows and tokens) to make room. Answers 'created' or 'taken' (the family id or the
-- token hash is held by an unexpired family).
CREATE OR REPLACE FUNCTION portcullis_create_refresh_family(
  p_family text, p_hash text, p_record text, p_expires bigint, p_now bigint,
  p_client text, p_person text, p_per_pair integer, p_per_person integer
) RETURNS text LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(1886548334, hashtext(p_person));
  IF EXISTS (SELECT 1 FROM portcullis_refresh_families f
             WHERE f.family_id = p_family AND f.expires_at > p_now)
     OR EXISTS (SELECT 1 FROM portcullis_refresh_tokens t
                WHERE t.token_hash = p_hash AND t.kept_until > p_now) THEN
    RETURN 'taken';
  END IF;
  WITH gone AS (
    DELETE FROM portcullis_refresh_families f
    WHERE f.family_id IN (
      SELECT o.family_id FROM portcullis_refresh_families o
      WHERE o.approved_by = p_person AND o.client_id = p_client AND o.current_hash IS NOT NULL
        AND o.expires_at > p_now
      ORDER BY o.created_at DESC, o.family_id DESC OFFSET p_per_pair - 1)
    OR (f.approved_by = p_person AND f.expires_at <= p_now)
    RETURNING f.family_id)
  DELETE FROM portcullis_refresh_tokens t USING gone WHERE t.family_id = gone.family_id;
  WITH gone AS (
    DELETE FROM portcullis_refresh_families f
    WHERE f.family_id IN (
      SELECT o.family_id FROM portcullis_refresh_families o
      WHERE o.approved_by = p_person
      ORDER BY (o.current_hash IS NOT NULL) DESC, o.created_at DESC, o.family_id DESC
      OFFSET p_per_person - 1)
    RETURNING f.family_id)
  DELETE FROM portcullis_refresh_tokens t USING gone WHERE t.family_id = gone.family_id;
  DELETE FROM portcullis_refresh_tokens t WHERE t.family_id = p_family OR t.token_hash = p_hash;
  INSERT INTO portcullis_refresh_families AS f
    (family_id, current_hash, expires_at, client_id, approved_by, created_at, generation)
  VALUES (p_family, p_hash, p_expires, p_client, p_person, p_now, 0)
  ON CONFLICT (family_id) DO UPDATE
    SET current_hash = EXCLUDED.current_hash, expires_at = EXCLUDED.expires_at,
        client_id = EXCLUDED.client_id, approved_by = EXCLUDED.approved_by,
        created_at = EXCLUDED.created_at, generation = 0
    WHERE f.expires_at <= p_now;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'a refresh family with this id is held';
  END IF;
  INSERT INTO portcullis_refresh_tokens (token_hash, family_id, record, kept_until, generation)
  VALUES (p_hash, p_family, p_record, p_expires, 0);
  RETURN 'created';
END
$fn$;
