-- The retrieve service also ranks an owner's vectors from the index it holds in memory, so the
-- keyword change log (0014, 0017) also logs a memory's vector being written: the embed service
-- marks each memory it embedded (``embedding_signature`` set, ``needs_reindex`` cleared) after
-- the vector is stored, and an index behind that mark re-reads the memory and its vector.
-- Idempotent.
CREATE OR REPLACE FUNCTION keyword_log_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM keyword_log_changes(array_agg(c.owner), array_agg(c.id)) FROM (
        SELECT n.owner, n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
        WHERE (n.content, n.context, n.state, n.scope, n.session_id, n.agent_id, n.type, n.expires_at,
               n.created_at, n.owner, n.metadata, n.source, n.embedding_signature, n.needs_reindex)
            IS DISTINCT FROM (o.content, o.context, o.state, o.scope, o.session_id, o.agent_id, o.type,
                              o.expires_at, o.created_at, o.owner, o.metadata, o.source,
                              o.embedding_signature, o.needs_reindex)
        UNION ALL
        SELECT o.owner, o.id FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.owner <> n.owner
    ) c;
    RETURN NULL;
END $$;
