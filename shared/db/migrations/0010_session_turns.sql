-- Chat turns of a session in time order: the neighbour boost finds each candidate's next two
-- turns with one short index scan instead of numbering every turn of its sessions. Idempotent.
CREATE INDEX IF NOT EXISTS memories_session_turns ON memories (owner, session_id, created_at, id)
    WHERE source = 'chat_turn';
