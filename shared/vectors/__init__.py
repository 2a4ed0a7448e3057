"""Vector stores behind one port: pgvector (tier 1, in Postgres) and Qdrant (tier 2)."""
