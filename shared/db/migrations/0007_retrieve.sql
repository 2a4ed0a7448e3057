-- Retrieve service (issue 5): full-text search per owner. Idempotent.
--
-- memories_owner_tsv: one GIN over (owner, tsv) (btree_gin gives text a GIN operator class),
--   so a keyword search reads only its owner's postings. With only the GIN on tsv, a common
--   word is intersected with every owner's rows and filtered afterwards: measured on 100 owners
--   of 1k rows plus one of 100k, a small owner's full-text query went from ~6 ms to ~2.6 ms
--   (2-vCPU VM under load). Global-scope rows are still found through memories_tsv.
CREATE EXTENSION IF NOT EXISTS btree_gin;
CREATE INDEX IF NOT EXISTS memories_owner_tsv ON memories USING gin (owner, tsv);
