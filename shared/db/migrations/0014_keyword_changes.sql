-- Per-owner versions and a change log of memories, for the keyword indexes the retrieve service
-- holds in memory (runtime setting keywordIndex=memory): every statement that inserts or deletes
-- an owner's memories, or updates a column the keyword tier reads (content, state, scope,
-- session_id, agent_id, type, expires_at, created_at, owner; not last_accessed_at), bumps the
-- owner's version once and logs the changed memory ids under it, in the writer's transaction.
-- A search reads the version with its question; an index behind re-reads the logged memories.
-- A deleted memory leaves no id behind (deletion reaches every store): its rows are removed and
-- the version logs a row without an id, which makes an index behind it rebuild.
-- The log keeps at least the last 4096 versions per owner (older ones are pruned every 512):
-- an index further behind is rebuilt. Idempotent.
CREATE TABLE IF NOT EXISTS keyword_versions (
    owner   text PRIMARY KEY,
    version bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS keyword_changes (
    owner     text NOT NULL,
    version   bigint NOT NULL,
    memory_id uuid  -- NULL: memories were deleted (rebuild)
);
CREATE INDEX IF NOT EXISTS keyword_changes_owner_version ON keyword_changes (owner, version);

-- ``deleted``: the ids are gone, so their rows go too and one row without an id stands for them
CREATE OR REPLACE FUNCTION keyword_log_changes(owners text[], ids uuid[], deleted boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    o text;
    v bigint;
BEGIN
    -- owners in order, so two statements writing the same owners lock their rows in one order
    FOR o IN SELECT DISTINCT x FROM unnest(owners) AS x ORDER BY 1 LOOP
        INSERT INTO keyword_versions AS k (owner, version) VALUES (o, 1)
        ON CONFLICT (owner) DO UPDATE SET version = k.version + 1
        RETURNING k.version INTO v;
        IF deleted THEN
            DELETE FROM keyword_changes
            WHERE owner = o AND memory_id = ANY (ARRAY(SELECT u.i FROM unnest(owners, ids) AS u(w, i) WHERE u.w = o));
            INSERT INTO keyword_changes (owner, version, memory_id) VALUES (o, v, NULL);
        ELSE
            INSERT INTO keyword_changes (owner, version, memory_id)
            SELECT DISTINCT o, v, u.i FROM unnest(owners, ids) AS u(w, i) WHERE u.w = o;
        END IF;
        IF v % 512 = 0 THEN
            DELETE FROM keyword_changes WHERE owner = o AND version <= v - 4096;
        END IF;
    END LOOP;
END $$;

CREATE OR REPLACE FUNCTION keyword_log_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM keyword_log_changes(array_agg(n.owner), array_agg(n.id)) FROM new_rows n;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION keyword_log_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM keyword_log_changes(array_agg(o.owner), array_agg(o.id), true) FROM old_rows o;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION keyword_log_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM keyword_log_changes(array_agg(c.owner), array_agg(c.id)) FROM (
        SELECT n.owner, n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
        WHERE (n.content, n.state, n.scope, n.session_id, n.agent_id, n.type, n.expires_at, n.created_at, n.owner)
            IS DISTINCT FROM (o.content, o.state, o.scope, o.session_id, o.agent_id, o.type, o.expires_at,
                              o.created_at, o.owner)
        UNION ALL
        SELECT o.owner, o.id FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.owner <> n.owner
    ) c;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER memories_keyword_inserted AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION keyword_log_inserted();
CREATE OR REPLACE TRIGGER memories_keyword_deleted AFTER DELETE ON memories
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION keyword_log_deleted();
CREATE OR REPLACE TRIGGER memories_keyword_updated AFTER UPDATE ON memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION keyword_log_updated();
