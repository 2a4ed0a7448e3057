-- The agent a memory belongs to, beside its owner (the user) and its session (the run):
-- retrieval, listing and deletion filter on it the way they filter on session_id. Idempotent.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS agent_id text;
CREATE INDEX IF NOT EXISTS memories_owner_agent ON memories (owner, agent_id);
