-- Sleep worker (issue 6): indexes for the scheduler and the phases, and the conflict backlog. Idempotent.
--
-- dream_runs_owner_started: the scheduler reads each owner's newest runs by start time
--   (last run, consecutive failures) and the run list of `sleep.status`.
-- entity_mentions_memory: relation completion joins mentions on the same memory
--   (co-occurrence); the primary key starts with entity_id.
-- memories_owner_cold: archival demotion scans an owner's cold memories.
-- memories_owner_type_key: pattern phases read an owner's pattern memories by key prefix.
CREATE INDEX IF NOT EXISTS dream_runs_owner_started ON dream_runs (owner, started_at DESC NULLS LAST);
CREATE INDEX IF NOT EXISTS dream_runs_status ON dream_runs (status) WHERE status IN ('queued', 'running');
CREATE INDEX IF NOT EXISTS entity_mentions_memory ON entity_mentions (memory_id);
CREATE INDEX IF NOT EXISTS entities_owner ON entities (owner);
CREATE INDEX IF NOT EXISTS memories_owner_cold
    ON memories (owner, (coalesce(last_accessed_at, created_at)), id)
    WHERE state IN ('active', 'summary');
CREATE INDEX IF NOT EXISTS memories_owner_type_key ON memories (owner, type, key text_pattern_ops)
    WHERE type = 'pattern';

-- conflict_backlog: candidate pairs a conflict scan found but did not judge (one pair per
--   memory, the per-run cap, a broken batch, a plan that failed to apply); the next run
--   judges them without scanning for them again (its scan only probes changed memories).
--   `found_at` is the scan's snapshot: a pair whose memory changed after it is dropped.
CREATE TABLE IF NOT EXISTS conflict_backlog (
    owner      text NOT NULL,
    memory_a   uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    memory_b   uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    similarity real NOT NULL,
    found_at   timestamptz NOT NULL,
    PRIMARY KEY (owner, memory_a, memory_b),
    CHECK (memory_a < memory_b)
);
CREATE INDEX IF NOT EXISTS conflict_backlog_a ON conflict_backlog (memory_a);
CREATE INDEX IF NOT EXISTS conflict_backlog_b ON conflict_backlog (memory_b);
