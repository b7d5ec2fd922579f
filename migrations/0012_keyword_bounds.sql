-- What the bounded keyword arm needs to prove its cut (store/keyword_bound.py): the most a
-- term adds to any fact's BM25 before its idf (from its count and the fact's length, at the
-- bank's average length), and that average length, now fixed per bank so that a fact scores
-- the same whichever candidates are read with it. Statistics counted before this migration
-- lack them; the maintenance step counts them again.
ALTER TABLE bank_lexemes ADD COLUMN IF NOT EXISTS max_share float8;
ALTER TABLE bank_keyword_stats ADD COLUMN IF NOT EXISTS avg_length float8;
-- A bank with keyword statistics also gets a GIN index of its own (store/keyword_indexes.py):
-- the shared one returns every bank's postings of a common word, and intersecting them
-- with the bank took most of the keyword arm's time in a 100k bank of a 1 M-fact table.
CREATE TABLE IF NOT EXISTS bank_keyword_indexes (
    bank_id     text PRIMARY KEY,
    index_name  text NOT NULL,
    built_at    timestamptz NOT NULL DEFAULT now()
);
