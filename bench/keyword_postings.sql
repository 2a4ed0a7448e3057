-- The postings tables of the keyword-pruning prototype (bench/keyword_postings.py), kept by
-- triggers on memories. The benchmark installs them; they are not a migration. Idempotent.
--
-- memory_postings: one row per active memory and lexeme of its tsv (PostgreSQL's own
--   to_tsvector('english', content)) with the lexeme's count in it (tf). A memory's bucket is
--   its owner, or '' for scope='global' rows, which every owner may see.
-- memory_lexeme_df: per bucket and lexeme, how many active memories hold it (df) and the most
--   times one holds it (max_tf: an upper bound, never lowered by a delete; the pruning's bound).
-- memory_owner_docs: active memories per owner (BM25's N).
-- The statement triggers add and remove a memory's postings on insert, delete, and updates of
-- content, state, owner or scope (and empty with a truncate), in the writer's transaction, each touched bucket locked first
-- (advisory, in order) so concurrent writers of one owner queue instead of deadlocking.
CREATE TABLE IF NOT EXISTS memory_postings (
    bucket    text NOT NULL,
    lexeme    text NOT NULL,
    memory_id uuid NOT NULL,
    tf        integer NOT NULL,
    PRIMARY KEY (bucket, lexeme, memory_id) INCLUDE (tf)
);
CREATE TABLE IF NOT EXISTS memory_lexeme_df (
    bucket text NOT NULL,
    lexeme text NOT NULL,
    df     integer NOT NULL,
    max_tf integer NOT NULL,
    PRIMARY KEY (bucket, lexeme) INCLUDE (df, max_tf)
);
CREATE TABLE IF NOT EXISTS memory_owner_docs (
    owner text PRIMARY KEY,
    docs  bigint NOT NULL
);

CREATE OR REPLACE FUNCTION memory_postings_change(p_old memories[], p_new memories[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('memory_postings:' || z.bucket, 0))
    FROM (
        SELECT DISTINCT CASE WHEN r.scope = 'global' THEN '' ELSE r.owner END AS bucket
        FROM (SELECT * FROM unnest(p_old) UNION ALL SELECT * FROM unnest(p_new)) r
        WHERE r.state = 'active' ORDER BY 1
    ) z;

    WITH o AS (
        SELECT CASE WHEN r.scope = 'global' THEN '' ELSE r.owner END AS bucket, r.id, x.lexeme
        FROM unnest(p_old) r, unnest(r.tsv) x WHERE r.state = 'active'
    ), gone AS (
        DELETE FROM memory_postings p USING o
        WHERE p.bucket = o.bucket AND p.lexeme = o.lexeme AND p.memory_id = o.id
    )
    UPDATE memory_lexeme_df d SET df = d.df - c.n
    FROM (SELECT bucket, lexeme, count(*) AS n FROM o GROUP BY 1, 2) c
    WHERE d.bucket = c.bucket AND d.lexeme = c.lexeme;

    UPDATE memory_owner_docs d SET docs = d.docs - c.n
    FROM (SELECT r.owner, count(*) AS n FROM unnest(p_old) r WHERE r.state = 'active' GROUP BY 1) c
    WHERE d.owner = c.owner;

    WITH n AS (
        SELECT CASE WHEN r.scope = 'global' THEN '' ELSE r.owner END AS bucket, r.id, x.lexeme,
               coalesce(cardinality(x.positions), 1) AS tf
        FROM unnest(p_new) r, unnest(r.tsv) x WHERE r.state = 'active'
    ), added AS (
        INSERT INTO memory_postings (bucket, lexeme, memory_id, tf) SELECT bucket, lexeme, id, tf FROM n
    )
    INSERT INTO memory_lexeme_df AS d (bucket, lexeme, df, max_tf)
    SELECT bucket, lexeme, count(*), max(tf) FROM n GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (bucket, lexeme) DO UPDATE SET df = d.df + excluded.df, max_tf = greatest(d.max_tf, excluded.max_tf);

    INSERT INTO memory_owner_docs AS d (owner, docs)
    SELECT r.owner, count(*) FROM unnest(p_new) r WHERE r.state = 'active' GROUP BY 1 ORDER BY 1
    ON CONFLICT (owner) DO UPDATE SET docs = d.docs + excluded.docs;
END
$$;

CREATE OR REPLACE FUNCTION memory_postings_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM memory_postings_change('{}'::memories[], (SELECT coalesce(array_agg(n::memories), '{}') FROM new_rows n));
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION memory_postings_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM memory_postings_change((SELECT coalesce(array_agg(o::memories), '{}') FROM old_rows o), '{}'::memories[]);
    RETURN NULL;
END
$$;

-- an update touches the postings only where what they are made of changed (a recall's
-- last_accessed_at does not)
CREATE OR REPLACE FUNCTION memory_postings_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before memories[];
    after memories[];
BEGIN
    SELECT coalesce(array_agg(o::memories), '{}'), coalesce(array_agg(n::memories), '{}') INTO before, after
    FROM old_rows o JOIN new_rows n ON n.id = o.id
    WHERE o.content IS DISTINCT FROM n.content OR o.state IS DISTINCT FROM n.state
       OR o.owner IS DISTINCT FROM n.owner OR o.scope IS DISTINCT FROM n.scope;
    IF cardinality(before) > 0 THEN
        PERFORM memory_postings_change(before, after);
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION memory_postings_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE memory_postings, memory_lexeme_df, memory_owner_docs;
    RETURN NULL;
END
$$;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'memory_postings_insert'
                   AND tgrelid = 'memories'::regclass) THEN
        LOCK TABLE memories IN SHARE ROW EXCLUSIVE MODE;
        TRUNCATE memory_postings, memory_lexeme_df, memory_owner_docs;
        INSERT INTO memory_postings (bucket, lexeme, memory_id, tf)
        SELECT CASE WHEN m.scope = 'global' THEN '' ELSE m.owner END, x.lexeme, m.id,
               coalesce(cardinality(x.positions), 1)
        FROM memories m, unnest(m.tsv) x WHERE m.state = 'active';
        INSERT INTO memory_lexeme_df (bucket, lexeme, df, max_tf)
        SELECT bucket, lexeme, count(*), max(tf) FROM memory_postings GROUP BY 1, 2;
        INSERT INTO memory_owner_docs (owner, docs)
        SELECT owner, count(*) FROM memories WHERE state = 'active' GROUP BY 1;
        CREATE TRIGGER memory_postings_insert AFTER INSERT ON memories
            REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_postings_inserted();
        CREATE TRIGGER memory_postings_delete AFTER DELETE ON memories
            REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_postings_deleted();
        CREATE TRIGGER memory_postings_update AFTER UPDATE ON memories
            REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION memory_postings_updated();
        CREATE TRIGGER memory_postings_truncate AFTER TRUNCATE ON memories
            FOR EACH STATEMENT EXECUTE FUNCTION memory_postings_truncated();
    END IF;
END
$$;
