-- The temporal arm reads the facts whose time overlaps the question's window
-- (store/recall.temporal_search). Without an index on the times it read every fact of the bank:
-- 184 ms for a month's 1,829 facts in a 100k bank of a 1 M-fact table (docs/benchmarks.md,
-- "Stop 26"). Facts that start inside the window come from the first index; facts that started
-- before it and still run (intervals, a small share) from the second, which holds only those.
CREATE INDEX IF NOT EXISTS memory_units_bank_time_start_idx
    ON memory_units (bank_id, (coalesce(occurred_start, mentioned_at)));
CREATE INDEX IF NOT EXISTS memory_units_bank_interval_end_idx
    ON memory_units (bank_id, (coalesce(occurred_end, occurred_start, mentioned_at)))
    WHERE coalesce(occurred_end, occurred_start, mentioned_at) > coalesce(occurred_start, mentioned_at);
