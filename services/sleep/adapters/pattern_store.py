"""Pattern memories written by the sleep worker: discovered patterns and affective traits.

Both are `pattern` memories (source `sleep`) with an upsert key (`pattern:<title>` or
`affect:<person>:<target>:<emotion>`) and their evidence ids in `metadata.evidence`.
A new one is an upsert by key (never over a global-scope memory); an existing one is
refreshed in place by id: when its text changes the old text goes to `content_history`
first, and an unchanged refresh only merges metadata (its `updated_at` stays, so the
conflict ledger does not see a change that did not happen).

Both phases read the same lookback window of the owner's memories (`window_*`): active,
not global, not imported (`source='import'`), neither `pattern` nor `summary` memories
(what sleep derived must not become its own evidence).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from services.sleep.context import RunContext
from services.sleep.logic.prompts import PoolMemory
from shared.db import memories

PATTERN_TYPE = "pattern"
SOURCE = "sleep"
_WINDOW = (
    "FROM memories WHERE owner = $1 AND state = 'active' AND scope <> 'global' AND source <> 'import'"
    " AND type NOT IN ('pattern', 'summary') AND created_at >= $2"
)


def window_start(rc: RunContext) -> datetime:
    """Start of the lookback window (`sleepPatternLookbackDays` before the run's snapshot)."""
    return rc.snapshot_at - timedelta(days=rc.settings.sleep_pattern_lookback_days)


async def window_size(rc: RunContext, since: datetime) -> int:
    """How many memories of the window (see the module docstring) were created since `since`."""
    return int(await rc.pool.fetchval(f"SELECT count(*) {_WINDOW}", rc.owner, since))


async def window_pool(rc: RunContext, since: datetime, limit: int) -> list[PoolMemory]:
    """The newest `limit` memories of that window (id, session, text) for an LLM prompt."""
    rows = await rc.pool.fetch(
        f"SELECT id, session_id, content {_WINDOW} ORDER BY created_at DESC, id LIMIT $3", rc.owner, since, limit
    )
    return [PoolMemory(id=str(r["id"]), content=r["content"], session_id=r["session_id"]) for r in rows]


async def existing_patterns(conn: asyncpg.Connection | asyncpg.Pool, owner: str, prefix: str) -> list[asyncpg.Record]:
    """The owner's (non-global) pattern memories whose key starts with `prefix`."""
    return list(
        await conn.fetch(
            "SELECT id, key, content, metadata FROM memories WHERE owner = $1 AND type = 'pattern'"
            " AND key LIKE $2 || '%' AND scope <> 'global' ORDER BY id",
            owner,
            prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_"),
        )
    )


def evidence_of(metadata: Any) -> tuple[str, ...]:
    values = (metadata or {}).get("evidence") if isinstance(metadata, dict) else None
    return tuple(str(v) for v in values) if isinstance(values, list) else ()


async def create_pattern(
    conn: asyncpg.Connection, owner: str, key: str, content: str, metadata: dict[str, Any]
) -> tuple[str, str] | None:
    """Insert (or update by key) a pattern memory; (id, content_hash), None over a global memory."""
    scope = await conn.fetchval("SELECT scope FROM memories WHERE owner = $1 AND key = $2 FOR UPDATE", owner, key)
    if scope == "global":
        return None
    record, _created, _changed = await memories.upsert_by_key(
        conn, owner=owner, key=key, memory_type=PATTERN_TYPE, content=content, source=SOURCE, metadata=metadata
    )
    return record.id, record.content_hash


async def refresh_pattern(
    conn: asyncpg.Connection,
    owner: str,
    run_id: str,
    memory_id: str,
    content: str,
    previous_content: str | None,
    metadata: dict[str, Any],
) -> str | None:
    """Refresh in place; the new content hash when the text changed, else None."""
    mid = uuid.UUID(memory_id)
    if previous_content is None:
        await conn.execute(
            "UPDATE memories SET metadata = metadata || $3::jsonb WHERE owner = $1 AND id = $2 AND scope <> 'global'",
            owner,
            mid,
            metadata,
        )
        return None
    return await memories.replace_content(
        conn,
        owner,
        mid,
        content,
        reason="sleep:refresh",
        run_id=run_id,
        metadata=metadata,
        reactivate=True,
        skip_global=True,
    )
