-- The poison counter counts crashes a record caused, not deliveries (issue 15): a record
-- redelivered after a rebalance or a restart it did not cause keeps its budget.
-- in_flight_by: the worker incarnation whose stage is processing a record covering this row;
--   set when the stage starts it, cleared when it finishes or the worker stops cleanly, so it
--   survives only a crash while the record was in flight.
-- in_flight_alone: that record was then the only one in flight in its worker.
-- crashes: such crashes while alone (the poison counter); past TEMPR_MAX_ATTEMPTS, parked.
-- crashes_shared: crashes while it shared its worker with other records (no one's fault yet;
--   from the second on, the record runs alone so the next crash can be blamed).
ALTER TABLE messages ADD COLUMN IF NOT EXISTS in_flight_by text;
ALTER TABLE messages ADD COLUMN IF NOT EXISTS in_flight_alone boolean NOT NULL DEFAULT false;
ALTER TABLE messages ADD COLUMN IF NOT EXISTS crashes integer NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN IF NOT EXISTS crashes_shared integer NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS messages_in_flight_idx ON messages (in_flight_by) WHERE in_flight_by IS NOT NULL;
