-- Memory lifecycle (issue 19): forget, correct, retention.

-- A forgotten message: redelivery, replay, a resend and an import never bring it back.
-- Only ids and times are kept, never the content.
CREATE TABLE IF NOT EXISTS forgotten_messages (
    bank_id          text NOT NULL,
    message_id       text NOT NULL,
    conversation_id  text,
    forgotten_at     timestamptz NOT NULL DEFAULT now(),
    reason           text NOT NULL DEFAULT 'forgotten',
    PRIMARY KEY (bank_id, message_id)
);

-- A forgotten fact: its deterministic id is refused by the materializer and the importer.
CREATE TABLE IF NOT EXISTS forgotten_facts (
    bank_id       text NOT NULL,
    unit_id       uuid NOT NULL,
    forgotten_at  timestamptz NOT NULL DEFAULT now(),
    reason        text NOT NULL DEFAULT 'forgotten',
    PRIMARY KEY (bank_id, unit_id)
);

-- A correction of a fact, written by the API and applied by the pipeline (the extractor
-- re-embeds and finds entities, the resolver links, the materializer writes). `seq` orders the
-- corrections of one fact; a replay re-applies the latest one to the re-extracted fact.
CREATE TABLE IF NOT EXISTS fact_corrections (
    id              uuid PRIMARY KEY,
    seq             bigserial UNIQUE,
    bank_id         text NOT NULL,
    unit_id         uuid NOT NULL,
    text            text NOT NULL,
    occurred_start  timestamptz,
    occurred_end    timestamptz,
    tags            text[] NOT NULL DEFAULT '{}',
    reason          text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    published_at    timestamptz,
    applied_at      timestamptz
);
CREATE INDEX IF NOT EXISTS fact_corrections_unit_idx ON fact_corrections (bank_id, unit_id, seq);
CREATE INDEX IF NOT EXISTS fact_corrections_pending_idx ON fact_corrections (bank_id, seq)
    WHERE applied_at IS NULL;

-- Every earlier version of a corrected fact; the id is the correction's, so a redelivered
-- correction records its previous version once.
CREATE TABLE IF NOT EXISTS fact_history (
    id              uuid PRIMARY KEY,
    bank_id         text NOT NULL,
    unit_id         uuid NOT NULL,
    text            text NOT NULL,
    occurred_start  timestamptz,
    occurred_end    timestamptz,
    tags            text[] NOT NULL DEFAULT '{}',
    replaced_at     timestamptz NOT NULL DEFAULT now(),
    reason          text NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS fact_history_unit_idx ON fact_history (bank_id, unit_id, replaced_at);
