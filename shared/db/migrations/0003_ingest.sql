-- Ingest bookkeeping (issue 3). Idempotent.
--
-- events.outcome: what ingest did with the event: 'stored' (turns deduplicated and
--   stored or handed to extraction), 'no_memory' (opted out), 'disabled' (the owner's
--   `enabled` setting is off).
-- events.published_at: set once the event's follow-up messages (ExtractJob, EmbedJobs,
--   activity) are published. NULL after the commit means the process stopped between the
--   commit and the publish: a redelivery republishes them (Nats-Msg-Id dedupes).
-- turn_hashes.event_id: the event whose turn was new, so that republish finds its turns.
ALTER TABLE events ADD COLUMN IF NOT EXISTS outcome text NOT NULL DEFAULT 'stored';
ALTER TABLE events ADD COLUMN IF NOT EXISTS published_at timestamptz;
ALTER TABLE turn_hashes ADD COLUMN IF NOT EXISTS event_id text;

-- A new turn's hash row names its memory before the memory row exists (one round trip
-- less per event); the reference is checked at commit.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_constraint
               WHERE conrelid = 'turn_hashes'::regclass AND conname = 'turn_hashes_memory_id_fkey'
                 AND NOT condeferrable) THEN
        ALTER TABLE turn_hashes ALTER CONSTRAINT turn_hashes_memory_id_fkey DEFERRABLE INITIALLY DEFERRED;
    END IF;
END
$$;
