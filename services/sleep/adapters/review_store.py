"""The conflict review queue in PostgreSQL: list, count, lock and settle `conflict_pending` rows.

Every statement is scoped to one owner. A resolved row keeps its receipt (`resolution`,
`resolved_by`, `resolved_at`, `receipt`): resolutions stay queryable with the entries.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import asyncpg
import msgspec

from memoryd.schemas.conflicts import ConflictItem, ConflictReceipt, ConflictSide
from shared.db.memories import Conn

_SIDE = ", ".join(f"{{m}}.{c} AS {{m}}_{c}" for c in ("id", "content", "state", "scope", "updated_at"))
_LIST = (
    "SELECT p.id, p.owner, p.reason, p.run_id, p.created_at, p.receipt, "
    + _SIDE.format(m="ma")
    + ", "
    + _SIDE.format(m="mb")
    + " FROM conflict_pending p JOIN memories ma ON ma.id = p.memory_a JOIN memories mb ON mb.id = p.memory_b"
    " WHERE p.owner = $1 AND (p.resolved_at IS NULL) = $2"
    " ORDER BY coalesce(p.resolved_at, p.created_at) DESC, p.id LIMIT $3"
)


def _side(row: asyncpg.Record, m: str) -> ConflictSide:
    return ConflictSide(
        id=str(row[f"{m}_id"]),
        content=row[f"{m}_content"],
        state=row[f"{m}_state"],
        scope=row[f"{m}_scope"],
        updated_at=row[f"{m}_updated_at"],
    )


def _item(row: asyncpg.Record) -> ConflictItem:
    receipt = msgspec.convert(row["receipt"], ConflictReceipt) if row["receipt"] else None
    return ConflictItem(
        id=str(row["id"]),
        owner=row["owner"],
        reason=row["reason"],
        created_at=row["created_at"],
        run_id=str(row["run_id"]) if row["run_id"] else None,
        a=_side(row, "ma"),
        b=_side(row, "mb"),
        receipt=receipt,
    )


async def list_entries(conn: Conn, owner: str, *, pending: bool, limit: int) -> list[ConflictItem]:
    """The owner's pending (newest first) or resolved (most recently resolved first) entries."""
    return [_item(r) for r in await conn.fetch(_LIST, owner, pending, limit)]


async def count_pending(conn: Conn, owner: str) -> int:
    count: int = await conn.fetchval(
        "SELECT count(*) FROM conflict_pending WHERE owner = $1 AND resolved_at IS NULL", owner
    )
    return count


async def lock_entry(conn: asyncpg.Connection, owner: str, entry_id: str) -> asyncpg.Record | None:
    """The owner's entry (``memory_a``, ``memory_b``, ``resolved_at``), locked until the transaction ends."""
    row: asyncpg.Record | None = await conn.fetchrow(
        "SELECT id, memory_a, memory_b, resolved_at FROM conflict_pending WHERE owner = $1 AND id = $2 FOR UPDATE",
        owner,
        uuid.UUID(entry_id),
    )
    return row


async def settle(
    conn: asyncpg.Connection, owner: str, entry_id: str, action: str, by: str, receipt: dict[str, Any]
) -> datetime:
    """Mark the entry resolved with its receipt; the time it was resolved (the database's clock)."""
    at: datetime = await conn.fetchval(
        "WITH now AS (SELECT clock_timestamp() AS at) UPDATE conflict_pending p SET resolved_at = now.at,"
        " resolution = $3, resolved_by = $4, receipt = $5::jsonb || jsonb_build_object('resolved_at', now.at)"
        " FROM now WHERE p.owner = $1 AND p.id = $2 RETURNING p.resolved_at",
        owner,
        uuid.UUID(entry_id),
        action,
        by,
        receipt,
    )
    return at
