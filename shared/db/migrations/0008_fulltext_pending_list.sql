-- Full-text indexes keep a small pending list (issue 5). Idempotent.
--
-- Every write of a memory row that is not a HOT update (a retrieval touching
-- last_accessed_at is never one: memories_owner_cold indexes it) adds the row's lexemes to
-- each GIN's pending list, and every full-text search scans that list whole until a vacuum
-- or the 4 MB default limit merges it. Measured on 210k memories after 4,000 touches: pending
-- lists of 4,000 rows, keyword search p50 ~3.9 ms for 1k-memory owners against ~2.2 ms with a
-- 64 kB limit (the smallest), which cost ~20% of single-row insert speed (~10k -> ~8k rows/s);
-- fastupdate=off gave the same search time at half the insert speed.
ALTER INDEX memories_tsv SET (gin_pending_list_limit = 64);
ALTER INDEX memories_owner_tsv SET (gin_pending_list_limit = 64);
SELECT gin_clean_pending_list('memories_tsv'::regclass);
SELECT gin_clean_pending_list('memories_owner_tsv'::regclass);
