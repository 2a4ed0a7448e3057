-- The retrieve service answers a search's rows (content, metadata, source, ...) from the keyword
-- index it holds in memory, so the keyword change log (0014, 0015) also logs a change of metadata
-- or source: an index behind such a change re-reads the memory as it does after a content edit.
-- Idempotent.
CREATE OR REPLACE FUNCTION keyword_log_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM keyword_log_changes(array_agg(c.owner), array_agg(c.id)) FROM (
        SELECT n.owner, n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
        WHERE (n.content, n.context, n.state, n.scope, n.session_id, n.agent_id, n.type, n.expires_at,
               n.created_at, n.owner, n.metadata, n.source)
            IS DISTINCT FROM (o.content, o.context, o.state, o.scope, o.session_id, o.agent_id, o.type,
                              o.expires_at, o.created_at, o.owner, o.metadata, o.source)
        UNION ALL
        SELECT o.owner, o.id FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.owner <> n.owner
    ) c;
    RETURN NULL;
END $$;
