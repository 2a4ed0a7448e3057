"""Pruning of bookkeeping tables past ``bookkeepingRetentionDays`` (run by ingest's cleanup).

What is kept on purpose: an event whose follow-ups were never published (a redelivery
still needs its row), each owner's latest sleep run (the scheduler counts from it), and
today's LLM audit rows (the budget is summed from them). Rows go in batches so no delete
holds locks for long. Pruning ``turn_hashes`` means a conversation resent after the
retention is stored again; pruning ``conflict_reviewed``/``differentiated_pairs`` means
such a pair may be judged again.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

BATCH = 5_000

#: table -> the rows of it past the cutoff ($1) that may go, as ``ctid`` (batched by $2)
_PRUNABLE: dict[str, str] = {
    "events": "SELECT ctid FROM events WHERE processed_at < $1 AND published_at IS NOT NULL LIMIT $2",
    "turn_hashes": "SELECT ctid FROM turn_hashes WHERE created_at < $1 LIMIT $2",
    "extract_runs": "SELECT ctid FROM extract_runs WHERE processed_at < $1 LIMIT $2",
    "llm_audit_logs": "SELECT ctid FROM llm_audit_logs WHERE created_at < $1"
    " AND created_at < (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') LIMIT $2",
    "dream_runs": "SELECT d.ctid FROM dream_runs d WHERE d.created_at < $1 AND EXISTS"
    " (SELECT 1 FROM dream_runs n WHERE n.owner = d.owner AND n.created_at > d.created_at) LIMIT $2",
    "conflict_reviewed": "SELECT ctid FROM conflict_reviewed WHERE judged_at < $1 LIMIT $2",
    "differentiated_pairs": "SELECT ctid FROM differentiated_pairs WHERE created_at < $1 LIMIT $2",
}
TABLES = tuple(_PRUNABLE)


async def prune(pool: asyncpg.Pool, cutoff: datetime, *, dry_run: bool = False) -> dict[str, int]:
    """Rows removed per table (on a dry run: rows that would be)."""
    out: dict[str, int] = {}
    for table, select in _PRUNABLE.items():
        if dry_run:
            out[table] = int(await pool.fetchval(f"SELECT count(*) FROM ({select}) AS t", cutoff, 2**62))
            continue
        total = 0
        while True:
            done = await pool.execute(f"DELETE FROM {table} WHERE ctid = ANY(ARRAY({select}))", cutoff, BATCH)
            n = int(done.split()[-1])
            total += n
            if n < BATCH:
                break
        out[table] = total
    return out
