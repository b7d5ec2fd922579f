-- The model the stored vectors were made with, so a switch to another model of the same
-- dimension (which the column's type cannot see) is refused at start-up instead of mixing
-- two vector spaces in one index. One row; `tempr migrate --embedding-model` rewrites it.
CREATE TABLE IF NOT EXISTS embedding_model (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    name        text NOT NULL,
    dimension   integer NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
