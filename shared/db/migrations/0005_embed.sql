-- Embed service bookkeeping (issue 4). Idempotent.
--
-- memory_vec_meta.details: what the embed service resolved and did, for engine.status:
--   {"source": "local|remote", "model", "dim", "quantization", "resolution": "<why this source>",
--    "configured_signature", "reindex_started_at", "activated_at",
--    "retired": "<a previous signature whose vectors are dropped after a grace period>", "retired_at"}
--   (times are epoch seconds of the database clock).
-- Rows: store 'pgvector' always, 'qdrant' when configured. embedding_signature is the active
-- signature (what retrieval searches), pending_signature the one being backfilled.
ALTER TABLE memory_vec_meta ADD COLUMN IF NOT EXISTS details jsonb NOT NULL DEFAULT '{}'::jsonb;

