-- Poison parking and stage heartbeats.
-- attempts: how many times the segmenter received the message (API publish, sweeper
-- re-publish, start-up re-publish, redelivery after a crash). Past the limit it is parked:
-- dead-lettered once, no longer re-published, no longer counted as pending.
ALTER TABLE messages ADD COLUMN IF NOT EXISTS attempts integer NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN IF NOT EXISTS parked_at timestamptz;
CREATE INDEX IF NOT EXISTS messages_waiting_idx ON messages (received_at)
    WHERE processed_at IS NULL AND parked_at IS NULL;

-- Dead letters name the journal rows they cover, so recording one parks them.
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS message_event_ids uuid[] NOT NULL DEFAULT '{}';

-- One row per stage and worker process, written by the stage harness every few seconds:
-- a stale beat means a dead or frozen worker, an old busy_since a stuck stage.
CREATE TABLE IF NOT EXISTS stage_heartbeats (
    stage       text NOT NULL,
    worker      text NOT NULL,
    beat_at     timestamptz NOT NULL DEFAULT now(),
    busy_since  timestamptz,
    processed   bigint NOT NULL DEFAULT 0,
    failed      bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (stage, worker)
);
