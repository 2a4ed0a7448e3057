"""PostgreSQL: the asyncpg pool and the ordered SQL migrations."""
