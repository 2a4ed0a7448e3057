-- A raw chat turn's context head has one definition, here: turn_context_head(content, said_at,
-- metadata) gives "[1:56 pm on 8 May, 2023] Caroline:" (when the turn was said, in UTC, and who
-- said it: metadata speaker, else its role capitalized; parts unknown are left out), NULL when the
-- content opens with such a prefix already. A trigger fills memories.context with it for a chat
-- turn written without one (by any writer: an ingest of any version, import) and derives it again
-- when the turn's content, metadata, created_at or source is edited (every other memory has none).
-- An edit that changes a context the embed service has used (it embeds context || ' ' || content,
-- the text tsv indexes) marks the memory for re-embedding. Whitespace is what Python's str.split()
-- splits on and digits are ASCII, whatever the server's locale. Idempotent.
CREATE OR REPLACE FUNCTION turn_context_head(content text, said_at timestamptz, metadata jsonb)
RETURNS text LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    ws constant text := '\t-\r\u001c- \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000';
    who text;
BEGIN
    -- a text that carries its context already: "[<something with a digit>] <speaker>:"
    IF content ~ ('^[' || ws || ']*\[(?=[^\]\n]{0,79}[0-9])[^\]\n]{1,80}\] +[^' || ws || ':\[\]][^:\n]{0,79}:') THEN
        RETURN NULL;
    END IF;
    -- the speaker's name, whitespace collapsed, at most 64 characters; else the role, capitalized
    who := btrim(left(btrim(regexp_replace(metadata->>'speaker', '[' || ws || ']+', ' ', 'g')), 64));
    IF who IS NULL OR who = '' THEN
        who := regexp_replace(metadata->>'role', '^[' || ws || ']+|[' || ws || ']+$', '', 'g');
        who := upper(left(who, 1)) || lower(substr(who, 2));
    END IF;
    RETURN nullif(concat_ws(' ',
        '[' || to_char(said_at AT TIME ZONE 'UTC', 'FMHH12:MI am "on" FMDD FMMonth, FMYYYY') || ']',
        nullif(who, '') || ':'), '');
END $$;

CREATE OR REPLACE FUNCTION memories_turn_context() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' AND NEW.context IS NOT NULL THEN
        RETURN NEW;  -- a head the writer gave (an ingest of 0015's version computes the same)
    END IF;
    NEW.context := CASE WHEN NEW.source = 'chat_turn' THEN turn_context_head(NEW.content, NEW.created_at, NEW.metadata) END;
    IF TG_OP = 'UPDATE' AND OLD.context IS NOT NULL AND NEW.context IS DISTINCT FROM OLD.context THEN
        NEW.needs_reindex := true;  -- its vector was embedded with the old head
    END IF;
    RETURN NEW;
END $$;

-- a write of context alone (an operator's repair) is kept as written
DROP TRIGGER IF EXISTS memories_turn_context ON memories;
CREATE TRIGGER memories_turn_context BEFORE INSERT OR UPDATE OF content, metadata, created_at, source
    ON memories FOR EACH ROW EXECUTE FUNCTION memories_turn_context();

-- turns written without a context since 0015 (by an ingest not yet upgraded), and a context left
-- on a memory that is no chat turn (an import over a turn). Their vectors stay: the embed service
-- embedded the first with the head rebuilt from its metadata, the second as its content alone.
UPDATE memories SET context = turn_context_head(content, created_at, metadata)
WHERE source = 'chat_turn' AND context IS NULL AND turn_context_head(content, created_at, metadata) IS NOT NULL;
UPDATE memories SET context = NULL WHERE source <> 'chat_turn' AND context IS NOT NULL;
