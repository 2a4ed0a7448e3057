-- The conflict review queue's resolutions. Idempotent.
--
-- A resolved `conflict_pending` row keeps what was done: `resolution` (accept|merge|dismiss),
-- `resolved_by` (as the caller named itself) and `receipt` (what changed: kept, archived,
-- the text before and after a merge), so resolutions stay queryable per owner.
ALTER TABLE conflict_pending ADD COLUMN IF NOT EXISTS resolution text;
ALTER TABLE conflict_pending ADD COLUMN IF NOT EXISTS resolved_by text;
ALTER TABLE conflict_pending ADD COLUMN IF NOT EXISTS receipt jsonb;
CREATE INDEX IF NOT EXISTS conflict_pending_owner_resolved ON conflict_pending (owner, resolved_at DESC)
    WHERE resolved_at IS NOT NULL;
