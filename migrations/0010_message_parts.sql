-- A message longer than a chunk is cut in parts that are materialized separately, maybe out
-- of order (issue 15's "nothing lost"). parts_done: the part numbers materialized so far; the
-- row is processed only once it holds them all, so a lost part leaves the message pending
-- and the sweeper redelivers it. Reset wherever processed_at is reset.
ALTER TABLE messages ADD COLUMN IF NOT EXISTS parts_done integer[] NOT NULL DEFAULT '{}';
