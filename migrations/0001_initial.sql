-- tempr schema v1: the materialized memory, the ingress journal and the dead letters.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS banks (
    id           text PRIMARY KEY,
    name         text,
    background   text NOT NULL DEFAULT '',
    disposition  jsonb NOT NULL DEFAULT '{"skepticism": 3, "literalism": 3, "empathy": 3}',
    config       jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- Tombstones: a bank deleted here is not brought back by a replay of the log.
CREATE TABLE IF NOT EXISTS deleted_banks (
    id          text PRIMARY KEY,
    deleted_at  timestamptz NOT NULL DEFAULT now()
);

-- The ingress journal: every accepted message, durable before it is published. The
-- materializer stamps processed_at; the sweeper re-publishes what stays unprocessed.
CREATE TABLE IF NOT EXISTS messages (
    id               uuid PRIMARY KEY,
    seq              bigserial UNIQUE,
    bank_id          text NOT NULL,
    message_id       text NOT NULL,
    conversation_id  text,
    document_id      text,
    payload          jsonb NOT NULL,
    received_at      timestamptz NOT NULL DEFAULT now(),
    published_at     timestamptz,
    publish_count    integer NOT NULL DEFAULT 0,
    processed_at     timestamptz
);
CREATE INDEX IF NOT EXISTS messages_pending_idx ON messages (bank_id, seq) WHERE processed_at IS NULL;
CREATE INDEX IF NOT EXISTS messages_bank_idx ON messages (bank_id, seq);

CREATE TABLE IF NOT EXISTS documents (
    bank_id       text NOT NULL,
    id            text NOT NULL,
    content_hash  text NOT NULL,
    metadata      jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id)
);

CREATE TABLE IF NOT EXISTS chunks (
    id               uuid PRIMARY KEY,
    bank_id          text NOT NULL,
    conversation_id  text,
    document_id      text,
    text             text NOT NULL,
    message_ids      text[] NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS chunks_bank_idx ON chunks (bank_id);

CREATE TABLE IF NOT EXISTS memory_units (
    id                 uuid PRIMARY KEY,
    bank_id            text NOT NULL,
    text               text NOT NULL,
    embedding          vector(384),
    search             tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    fact_type          text NOT NULL DEFAULT 'world'
                       CHECK (fact_type IN ('world', 'experience', 'opinion', 'observation')),
    occurred_start     timestamptz,
    occurred_end       timestamptz,
    mentioned_at       timestamptz,
    confidence         real,
    proof_count        integer NOT NULL DEFAULT 1,
    tags               text[] NOT NULL DEFAULT '{}',
    metadata           jsonb NOT NULL DEFAULT '{}',
    context            text,
    conversation_id    text,
    document_id        text,
    chunk_id           uuid,
    source_message_ids text[] NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
-- One HNSW index for every bank: queries filter by bank_id (thousands of banks share it).
CREATE INDEX IF NOT EXISTS memory_units_embedding_hnsw
    ON memory_units USING hnsw (embedding vector_cosine_ops);
CREATE INDEX IF NOT EXISTS memory_units_search_gin ON memory_units USING gin (search);
CREATE INDEX IF NOT EXISTS memory_units_tags_gin ON memory_units USING gin (tags);
CREATE INDEX IF NOT EXISTS memory_units_bank_created_idx ON memory_units (bank_id, created_at, id);
CREATE INDEX IF NOT EXISTS memory_units_bank_occurred_idx ON memory_units (bank_id, occurred_start, occurred_end);
CREATE INDEX IF NOT EXISTS memory_units_bank_mentioned_idx ON memory_units (bank_id, mentioned_at);
CREATE INDEX IF NOT EXISTS memory_units_bank_document_idx ON memory_units (bank_id, document_id);

CREATE TABLE IF NOT EXISTS entities (
    id              uuid PRIMARY KEY,
    bank_id         text NOT NULL,
    canonical_name  text NOT NULL,
    kind            text NOT NULL DEFAULT 'other',
    aliases         text[] NOT NULL DEFAULT '{}',
    mention_count   integer NOT NULL DEFAULT 0,
    first_seen      timestamptz,
    last_seen       timestamptz
);
CREATE INDEX IF NOT EXISTS entities_bank_name_idx ON entities (bank_id, lower(canonical_name));

CREATE TABLE IF NOT EXISTS unit_entities (
    unit_id    uuid NOT NULL REFERENCES memory_units (id) ON DELETE CASCADE,
    entity_id  uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    bank_id    text NOT NULL,
    PRIMARY KEY (unit_id, entity_id)
);
CREATE INDEX IF NOT EXISTS unit_entities_entity_idx ON unit_entities (entity_id);

CREATE TABLE IF NOT EXISTS memory_links (
    from_id    uuid NOT NULL REFERENCES memory_units (id) ON DELETE CASCADE,
    to_id      uuid NOT NULL REFERENCES memory_units (id) ON DELETE CASCADE,
    link_type  text NOT NULL CHECK (link_type IN
               ('temporal', 'semantic', 'entity', 'causes', 'caused_by', 'enables', 'prevents')),
    weight     real NOT NULL,
    bank_id    text NOT NULL,
    PRIMARY KEY (from_id, to_id, link_type)
);
CREATE INDEX IF NOT EXISTS memory_links_to_idx ON memory_links (to_id);

-- Progress of the materializer per bank and source partition (for stats and lag).
CREATE TABLE IF NOT EXISTS watermarks (
    bank_id     text NOT NULL,
    topic       text NOT NULL,
    partition   integer NOT NULL,
    "offset"    bigint NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, topic, partition)
);

CREATE TABLE IF NOT EXISTS dead_letters (
    id          uuid PRIMARY KEY,
    stage       text NOT NULL,
    topic       text NOT NULL,
    partition   integer,
    "offset"    bigint,
    key         text,
    payload     text NOT NULL,
    error       text NOT NULL,
    failed_at   timestamptz NOT NULL,
    replayed_at timestamptz
);
CREATE INDEX IF NOT EXISTS dead_letters_failed_idx ON dead_letters (failed_at);
