"""A digest of every table of a memoryd database: row count and content hash per table.

Tests that send something the system must refuse compare the digest before and after
(the fuzz suite, the authorization matrix): any changed table is a side effect.
"""

from __future__ import annotations

import asyncpg

#: Columns left out of the digest: recall heat is written asynchronously by design.
UNDIGESTED = {("memories", "last_accessed_at"), ("memories", "tsv")}

Digest = dict[str, tuple[int, str]]


async def digest_query(pool: asyncpg.Pool) -> str:
    """One query: row count and content hash of every table of the schema."""
    rows = await pool.fetch(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
    )
    columns: dict[str, list[str]] = {}
    for row in rows:
        if (row["table_name"], row["column_name"]) not in UNDIGESTED:
            columns.setdefault(row["table_name"], []).append(f'"{row["column_name"]}"')
    parts = [
        f"SELECT '{table}' AS t, count(*) AS n, md5(coalesce(string_agg(r, E'\\n' ORDER BY r), '')) AS h"
        f' FROM (SELECT ROW({", ".join(cols)})::text AS r FROM "{table}") s'
        for table, cols in sorted(columns.items())
    ]
    return " UNION ALL ".join(parts)


async def digest(pool: asyncpg.Pool, sql: str) -> Digest:
    """Run ``digest_query``'s query."""
    return {r["t"]: (r["n"], r["h"]) for r in await pool.fetch(sql)}


def changed_tables(before: Digest, after: Digest) -> list[str]:
    return sorted(t for t in before.keys() | after.keys() if before.get(t) != after.get(t))
