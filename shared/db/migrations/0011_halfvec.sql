-- Half-precision vectors: a signature ending in ':half' stores its vectors in embedding_half
-- (halfvec, 2 bytes per dimension) instead of embedding (vector, 4 bytes); each row holds
-- exactly one of the two. Idempotent.
ALTER TABLE memory_embeddings ADD COLUMN IF NOT EXISTS embedding_half halfvec;
ALTER TABLE memory_embeddings ALTER COLUMN embedding DROP NOT NULL;
ALTER TABLE memory_embeddings DROP CONSTRAINT IF EXISTS memory_embeddings_one_vector;
ALTER TABLE memory_embeddings
    ADD CONSTRAINT memory_embeddings_one_vector CHECK (num_nonnulls(embedding, embedding_half) = 1);
