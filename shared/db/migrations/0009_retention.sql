-- Bookkeeping rows are pruned after bookkeepingRetentionDays (ingest's cleanup). Idempotent.
-- turn_hashes had no time of its own; existing rows count from this migration.
ALTER TABLE turn_hashes ADD COLUMN IF NOT EXISTS created_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX IF NOT EXISTS turn_hashes_created ON turn_hashes (created_at);
CREATE INDEX IF NOT EXISTS events_processed ON events (processed_at);
CREATE INDEX IF NOT EXISTS extract_runs_processed ON extract_runs (processed_at);
CREATE INDEX IF NOT EXISTS llm_audit_created ON llm_audit_logs (created_at);
