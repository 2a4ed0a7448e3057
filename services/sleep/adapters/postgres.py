"""Sleep-specific SQL outside the phases: settings, the `dream_runs` rows, owners, the signature.

A run's row goes `queued` (published, by the RPC or the scheduler) -> `running` (the
worker holds the owner's run lock; `started_at` set) -> a final status with `finished_at`,
the per-phase JSON, run counters and the receipt. Every statement names its owner; the
row of a run belongs to the owner that queued it.

Sleep settings share the `settings` rows with the memory settings (one jsonb per owner,
`*` = global); `shared.settings.memory.effective_sleep` takes the sleep half.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

import asyncpg

from memoryd.errors import ValidationFailed
from memoryd.schemas.ops import SleepRunRecord
from services.sleep.logic.schedule import INTERRUPTED, RunMark
from services.sleep.logic.settings import SleepSettings
from services.sleep.receipt import RUN_STATUSES
from shared.db.memories import Conn
from shared.settings.memory import GLOBAL_OWNER, effective_sleep
from shared.settings.store import read_values

FINAL_STATUSES: Final = frozenset(RUN_STATUSES)
RUN_COLUMNS: Final = "id, owner, status, reason, started_at, finished_at, phases, counters, receipt"


def settings_from_rows(global_values: Mapping[str, Any], owner_values: Mapping[str, Any], owner: str) -> SleepSettings:
    """Defaults < global < owner (the rows hold memory settings too); bad values name the field."""
    try:
        return effective_sleep(global_values, owner_values)
    except ValidationFailed as exc:
        raise ValidationFailed(f"owner {owner!r}: {exc.description}") from exc


async def sleep_settings(conn: Conn, owner: str) -> SleepSettings:
    """The effective sleep settings of `owner`."""
    global_values = await read_values(conn, GLOBAL_OWNER)
    owner_values = await read_values(conn, owner) if owner != GLOBAL_OWNER else {}
    return settings_from_rows(global_values, owner_values, owner)


async def settings_rows(conn: Conn) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The global row and every owner row, for the scheduler's tick."""
    rows = await conn.fetch('SELECT owner, "values" FROM settings')
    by_owner = {r["owner"]: dict(r["values"] or {}) for r in rows}
    return by_owner.pop(GLOBAL_OWNER, {}), by_owner


async def known_owners(conn: Conn) -> set[str]:
    """Owners with memories (a loose index scan over `memories (owner, ...)`) or settings rows."""
    rows = await conn.fetch(
        """
        WITH RECURSIVE o(owner) AS (
            (SELECT owner FROM memories ORDER BY owner LIMIT 1)
            UNION ALL
            SELECT (SELECT m.owner FROM memories m WHERE m.owner > o.owner ORDER BY m.owner LIMIT 1)
            FROM o WHERE o.owner IS NOT NULL
        )
        SELECT owner FROM o WHERE owner IS NOT NULL
        UNION SELECT owner FROM settings WHERE owner <> '*'
        """
    )
    return {r["owner"] for r in rows}


async def active_signature(conn: Conn) -> str | None:
    """The embedding signature pgvector serves now (None before the first vectors)."""
    value = await conn.fetchval("SELECT embedding_signature FROM memory_vec_meta WHERE store = 'pgvector'")
    return str(value) if value else None


# --- dream_runs ------------------------------------------------------------------------------


async def queue_run(conn: Conn, run_id: uuid.UUID, owner: str, reason: str) -> bool:
    """Record a published run as `queued`; False when the row already exists (a duplicate)."""
    status = await conn.execute(
        "INSERT INTO dream_runs (id, owner, run_type, status, reason) VALUES ($1, $2, 'sleep', 'queued', $3)"
        " ON CONFLICT (id) DO NOTHING",
        run_id,
        owner,
        reason,
    )
    return status.endswith(" 1")


async def run_row(conn: Conn, run_id: uuid.UUID) -> asyncpg.Record | None:
    return await conn.fetchrow(f"SELECT {RUN_COLUMNS} FROM dream_runs WHERE id = $1", run_id)


async def start_run(conn: Conn, run_id: uuid.UUID, owner: str, reason: str, worker: str = "") -> datetime | None:
    """Mark the run `running` now (a rerun of an interrupted one starts over); its start time.

    `counters.worker` names the process running it. None when the id belongs to another
    owner's run (a forged job).
    """
    started = await conn.fetchval(
        """
        INSERT INTO dream_runs (id, owner, run_type, status, reason, started_at, counters)
        VALUES ($1, $2, 'sleep', 'running', $3, clock_timestamp(), jsonb_build_object('worker', $4::text))
        ON CONFLICT (id) DO UPDATE SET status = 'running', started_at = clock_timestamp(), finished_at = NULL,
            phases = '{}'::jsonb, counters = EXCLUDED.counters, receipt = NULL
        WHERE dream_runs.owner = EXCLUDED.owner
        RETURNING started_at
        """,
        run_id,
        owner,
        reason,
        worker,
    )
    return started


async def finish_run(
    conn: Conn,
    run_id: uuid.UUID,
    status: str,
    phases: dict[str, Any],
    counters: dict[str, Any],
    receipt: str,
) -> datetime:
    finished = await conn.fetchval(
        "UPDATE dream_runs SET status = $2, finished_at = clock_timestamp(), phases = $3::jsonb,"
        " counters = $4::jsonb, receipt = $5 WHERE id = $1 RETURNING finished_at",
        run_id,
        status,
        phases,
        counters,
        receipt,
    )
    return finished


async def requeue_run(conn: Conn, run_id: uuid.UUID) -> None:
    """A run cut by a stopping worker goes back to `queued` (its message is redelivered)."""
    await conn.execute(
        "UPDATE dream_runs SET status = 'queued', started_at = NULL WHERE id = $1 AND status = 'running'", run_id
    )


async def drop_queued(conn: Conn, run_id: uuid.UUID) -> None:
    """Forget the `queued` row of a job that will not run (stale slot)."""
    await conn.execute("DELETE FROM dream_runs WHERE id = $1 AND status = 'queued'", run_id)


async def fail_orphans(conn: Conn, owner: str, current: uuid.UUID) -> int:
    """The owner's rows left `running` by a worker that died -> failed, reason `interrupted`.

    Only callable under the owner's run lock: no other run of the owner is alive then.
    """
    status = await conn.execute(
        "UPDATE dream_runs SET status = 'failed', reason = $3, finished_at = clock_timestamp()"
        " WHERE owner = $1 AND status = 'running' AND id <> $2",
        owner,
        current,
        INTERRUPTED,
    )
    return int(status.rsplit(" ", 1)[-1])


async def run_history(conn: Conn, owner: str, limit: int = 32, *, exclude: uuid.UUID | None = None) -> list[RunMark]:
    """The owner's started runs, newest first (running ones included)."""
    rows = await conn.fetch(
        "SELECT status, started_at, reason FROM dream_runs WHERE owner = $1 AND started_at IS NOT NULL"
        " AND id IS DISTINCT FROM $3 ORDER BY started_at DESC NULLS LAST LIMIT $2",
        owner,
        limit,
        exclude,
    )
    return [RunMark(r["status"], r["started_at"], r["reason"]) for r in rows]


def to_record(row: asyncpg.Record) -> SleepRunRecord:
    return SleepRunRecord(
        run_id=str(row["id"]),
        owner=row["owner"],
        status=row["status"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        receipt=row["receipt"],
        phases=dict(row["phases"] or {}),
        counters=dict(row["counters"] or {}),
    )


async def list_runs(conn: Conn, owner: str | None, limit: int) -> list[SleepRunRecord]:
    """Runs newest first (queued ones by their creation), of one owner or of all."""
    order = "ORDER BY coalesce(started_at, created_at) DESC, id LIMIT"
    if owner is None:
        rows = await conn.fetch(f"SELECT {RUN_COLUMNS} FROM dream_runs {order} $1", limit)
    else:
        rows = await conn.fetch(f"SELECT {RUN_COLUMNS} FROM dream_runs WHERE owner = $1 {order} $2", owner, limit)
    return [to_record(r) for r in rows]
