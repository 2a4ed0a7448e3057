"""The per-owner daily token budget and the ``llm_audit_logs`` rows it is computed from.

Every LLM call writes one audit row (tokens, status, error), whatever its outcome; the
tokens an owner used today are the sum of their rows since UTC midnight (the database
clock, so every replica agrees). The budget is checked before a call, so one call may
overshoot it by its own size, and concurrent calls of one owner may each pass the check:
it is a soft limit that stops runaway spending, not an exact meter.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from ..errors import BudgetExceeded

#: ``status`` values written to ``llm_audit_logs``.
STATUS_OK = "ok"
STATUS_BAD_REPLY = "bad_reply"
STATUS_ERROR = "error"
STATUS_BUDGET = "budget_exceeded"

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


async def check_budget(conn: asyncpg.Pool | asyncpg.Connection, owner: str, daily_budget: int) -> int:
    """Tokens used today; ``BudgetExceeded`` when they reach ``daily_budget`` (0 = unlimited)."""
    if daily_budget <= 0:
        return 0
    used = await tokens_used_today(conn, owner)
    if used >= daily_budget:
        raise BudgetExceeded(
            f"daily LLM token budget of {daily_budget} for owner {owner!r} is spent ({used} used since UTC midnight)"
        )
    return used


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
