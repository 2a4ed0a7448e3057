-- A raw chat turn's context on the keyword side: memories.context holds its head
-- ("[1:56 pm on 8 May, 2023] Caroline:", shared.turn_context.turn_context_head; ingest writes
-- it, NULL for every other memory and for a turn whose text carries its context already), and
-- tsv indexes it with the content, so a search for a speaker's name or a month finds a turn
-- stored as bare text. Turns stored before are filled in from metadata speaker/role and
-- created_at (UTC), as the embed service reads them. The generated column cannot be altered:
-- it is dropped and added again (a table rewrite under this transaction's lock) with its two
-- GIN indexes, same names and options (0007, 0008). The keyword change log (0014) also logs
-- a change of context. Idempotent.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS context text;

CREATE OR REPLACE FUNCTION keyword_log_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM keyword_log_changes(array_agg(c.owner), array_agg(c.id)) FROM (
        SELECT n.owner, n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
        WHERE (n.content, n.context, n.state, n.scope, n.session_id, n.agent_id, n.type, n.expires_at,
               n.created_at, n.owner)
            IS DISTINCT FROM (o.content, o.context, o.state, o.scope, o.session_id, o.agent_id, o.type,
                              o.expires_at, o.created_at, o.owner)
        UNION ALL
        SELECT o.owner, o.id FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.owner <> n.owner
    ) c;
    RETURN NULL;
END $$;

-- the head of turns stored before: "[<time> on <day> <Month>, <year>] <speaker or Role>:"
-- (shared.turn_context: speaker_label, said_on; the prefix test is its _PREFIXED pattern)
UPDATE memories m SET context = concat_ws(' ',
        '[' || to_char(m.created_at AT TIME ZONE 'UTC', 'FMHH12:MI am "on" FMDD FMMonth, FMYYYY') || ']',
        coalesce(
            nullif(btrim(left(regexp_replace(btrim(m.metadata->>'speaker'), '\s+', ' ', 'g'), 64)), ''),
            nullif(upper(left(btrim(m.metadata->>'role'), 1)) || lower(substr(btrim(m.metadata->>'role'), 2)), '')
        ) || ':')
WHERE m.source = 'chat_turn' AND m.context IS NULL
    AND m.content !~ '^\s*\[(?=[^\]\n]{0,79}\d)[^\]\n]{1,80}\] +[^\s:\[\]][^:\n]{0,79}:';

DO $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
        WHERE d.adrelid = 'memories'::regclass AND a.attname = 'tsv'
            AND pg_get_expr(d.adbin, d.adrelid) LIKE '%context%'
    ) THEN
        ALTER TABLE memories DROP COLUMN IF EXISTS tsv;
        ALTER TABLE memories ADD COLUMN tsv tsvector
            GENERATED ALWAYS AS (to_tsvector('english'::regconfig, coalesce(context || ' ', '') || content)) STORED;
    END IF;
END $$;
CREATE INDEX IF NOT EXISTS memories_tsv ON memories USING gin (tsv) WITH (gin_pending_list_limit = 64);
CREATE INDEX IF NOT EXISTS memories_owner_tsv ON memories USING gin (owner, tsv) WITH (gin_pending_list_limit = 64);
-- keyword search reads the common lexemes of tsv from pg_stats (services/retrieve/logic/lexemes.py)
ANALYZE memories;
