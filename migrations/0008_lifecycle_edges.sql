-- Memory lifecycle edges (issue 19).

-- The journal position a forgotten message held: a consistency token issued for it still
-- counts as reached once the message is gone (the bank's head is the later of the two).
ALTER TABLE forgotten_messages ADD COLUMN IF NOT EXISTS seq bigint;
CREATE INDEX IF NOT EXISTS forgotten_messages_seq_idx ON forgotten_messages (bank_id, seq);

-- The banks a bank was imported from under another id, oldest first: the extractor derives
-- fact ids as the first of them would and maps them along the chain as the import did, so a
-- replay of the copy rebuilds the imported ids (and keeps their corrections and tombstones).
ALTER TABLE banks ADD COLUMN IF NOT EXISTS id_lineage text[] NOT NULL DEFAULT '{}';
