-- tempr schema v2: what opinions and observations rest on, and how opinions changed.

-- The facts a derived unit rests on: an opinion's evidence, an observation's sources.
ALTER TABLE memory_units ADD COLUMN IF NOT EXISTS evidence_ids uuid[] NOT NULL DEFAULT '{}';
-- A proof count is how many facts back a unit: derived from the evidence, never written.
ALTER TABLE memory_units DROP COLUMN IF EXISTS proof_count;
ALTER TABLE memory_units ADD COLUMN proof_count integer
    GENERATED ALWAYS AS (greatest(1, cardinality(evidence_ids))) STORED;

-- One row per change of an opinion. The id is derived from the opinion and the facts that
-- moved it, so a redelivered update is recorded (and applied) once.
CREATE TABLE IF NOT EXISTS opinion_history (
    id                   uuid PRIMARY KEY,
    bank_id              text NOT NULL,
    opinion_id           uuid NOT NULL REFERENCES memory_units (id) ON DELETE CASCADE,
    verdict              text NOT NULL CHECK (verdict IN ('reinforce', 'weaken', 'contradict')),
    previous_text        text NOT NULL,
    previous_confidence  real,
    new_text             text NOT NULL,
    new_confidence       real,
    evidence_ids         uuid[] NOT NULL DEFAULT '{}',
    reasoning            text NOT NULL DEFAULT '',
    created_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS opinion_history_opinion_idx ON opinion_history (opinion_id, created_at);
CREATE INDEX IF NOT EXISTS opinion_history_bank_idx ON opinion_history (bank_id);

CREATE INDEX IF NOT EXISTS memory_units_bank_type_idx ON memory_units (bank_id, fact_type);
