"""The per-owner daily token budget and the ``llm_audit_logs`` rows it is computed from.

Every LLM call writes one audit row (tokens, status, error), whatever its outcome; the
tokens an owner used today are the sum of their rows since UTC midnight (the database
clock, so every replica agrees).

The budget is a hard limit: before a call, ``reserve`` takes a per-owner advisory lock,
checks today's tokens plus the call's worst case (its prompt estimate plus ``max_tokens``)
against the budget and writes the call's row as ``reserved`` with that worst case, all in
one transaction; concurrent calls of one owner, on any replica, queue on the lock and see
each other's reservations, so together they cannot overshoot. ``settle`` then replaces the
reservation with what the call really used; a call that timed out or was cancelled keeps
its reservation (the endpoint may have done the work), so timeouts count.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from memoryd.errors import BudgetExceeded

#: ``status`` values written to ``llm_audit_logs``.
STATUS_OK = "ok"
STATUS_BAD_REPLY = "bad_reply"
STATUS_ERROR = "error"
STATUS_BUDGET = "budget_exceeded"
STATUS_RESERVED = "reserved"
STATUS_TIMEOUT = "timeout"
STATUS_CANCELLED = "cancelled"

#: Advisory lock class of the budget (the second key is the owner's hash).
BUDGET_LOCK = 0x6C6C6D62  # "llmb"

MAX_ERROR_CHARS = 2000


@dataclass(frozen=True, slots=True)
class AuditEntry:
    owner: str
    operation: str
    model: str | None
    status: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None


async def tokens_used_today(conn: asyncpg.Pool | asyncpg.Connection, owner: str) -> int:
    """Prompt plus completion tokens the owner's LLM calls used since UTC midnight."""
    used = await conn.fetchval(
        "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM llm_audit_logs"
        " WHERE owner = $1 AND created_at >= (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')",
        owner,
    )
    return int(used or 0)


async def reserve(pool: asyncpg.Pool, entry: AuditEntry, daily_budget: int) -> int:
    """Write ``entry`` (its tokens: the call's worst case) as a ``reserved`` row; its id.

    ``BudgetExceeded`` (and a ``budget_exceeded`` row without tokens) when today's tokens
    plus this reservation would pass ``daily_budget`` (0 = unlimited).
    """
    tokens = max(0, entry.prompt_tokens) + max(0, entry.completion_tokens)
    async with pool.acquire() as conn:
        async with conn.transaction():
            used = 0
            if daily_budget > 0:
                await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", BUDGET_LOCK, entry.owner)
                used = await tokens_used_today(conn, entry.owner)
            row_id = None
            if daily_budget <= 0 or used + tokens <= daily_budget:
                row_id = await conn.fetchval(
                    "INSERT INTO llm_audit_logs (owner, operation, model, prompt_tokens, completion_tokens, status)"
                    " VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                    entry.owner,
                    entry.operation,
                    entry.model,
                    max(0, entry.prompt_tokens),
                    max(0, entry.completion_tokens),
                    STATUS_RESERVED,
                )
        if row_id is None:
            error = (
                f"daily LLM token budget of {daily_budget} for owner {entry.owner!r} is spent"
                f" ({used} used or reserved since UTC midnight, this call may use {tokens})"
            )
            await write_audit(conn, AuditEntry(entry.owner, entry.operation, entry.model, STATUS_BUDGET, error=error))
            raise BudgetExceeded(error)
    return int(row_id)


async def settle(conn: asyncpg.Pool | asyncpg.Connection, row_id: int, entry: AuditEntry) -> None:
    """Replace reservation ``row_id`` with the call's outcome (``timeout``/``cancelled``: its
    reserved tokens stay counted)."""
    keep = entry.status in (STATUS_TIMEOUT, STATUS_CANCELLED)
    await conn.execute(
        "UPDATE llm_audit_logs SET status = $2, error = $3,"
        " prompt_tokens = CASE WHEN $6 THEN prompt_tokens ELSE $4 END,"
        " completion_tokens = CASE WHEN $6 THEN completion_tokens ELSE $5 END WHERE id = $1",
        row_id,
        entry.status,
        entry.error[:MAX_ERROR_CHARS] if entry.error else None,
        max(0, entry.prompt_tokens),
        max(0, entry.completion_tokens),
        keep,
    )


async def write_audit(conn: asyncpg.Pool | asyncpg.Connection, entry: AuditEntry) -> None:
    """Append one ``llm_audit_logs`` row."""
    await conn.execute(
        "INSERT INTO llm_audit_logs (owner, operation, model, prompt_tokens, completion_tokens, status, error)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7)",
        entry.owner,
        entry.operation,
        entry.model,
        max(0, entry.prompt_tokens),
        max(0, entry.completion_tokens),
        entry.status,
        entry.error[:MAX_ERROR_CHARS] if entry.error else None,
    )
