-- tempr schema v2: what opinions and observations rest on, and how opinions changed.

-- The facts a derived unit rests on: an opinion's evidence, an observation's sources.
-- For observations proof_count = cardinality(evidence_ids).
ALTER TABLE memory_units ADD COLUMN IF NOT EXISTS evidence_ids uuid[] NOT NULL DEFAULT '{}';

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
