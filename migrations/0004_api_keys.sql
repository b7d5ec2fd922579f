-- API keys (issue 18): only an HMAC of each secret is kept, never the secret itself.
-- `id` is the public part of a key (`tmpr_<id>_<secret>`), so a request finds its row by
-- primary key and compares one digest in constant time.
CREATE TABLE IF NOT EXISTS api_keys (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    secret_hash bytea NOT NULL,
    scopes      text[] NOT NULL,
    banks       text[] NOT NULL,
    rate_limit_per_min double precision,
    created_at  timestamptz NOT NULL DEFAULT now(),
    created_by  text NOT NULL,
    expires_at  timestamptz,
    revoked_at  timestamptz
);
-- A name names one live key; a revoked key's name can be used again.
CREATE UNIQUE INDEX IF NOT EXISTS api_keys_live_name_idx ON api_keys (name) WHERE revoked_at IS NULL;

-- Every admin action: who (key name), what, when, which bank, and how it ended.
CREATE TABLE IF NOT EXISTS audit_log (
    id      bigserial PRIMARY KEY,
    at      timestamptz NOT NULL DEFAULT now(),
    actor   text NOT NULL,
    action  text NOT NULL,
    bank_id text,
    status  integer,
    detail  jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX IF NOT EXISTS audit_log_at_idx ON audit_log (at DESC, id DESC);
CREATE INDEX IF NOT EXISTS audit_log_bank_idx ON audit_log (bank_id, at DESC);
