"""Applying one conflict batch: every plan plus its ledger rows in one transaction.

The pair's memories are locked (`FOR UPDATE`) and re-checked first: a plan applies only
when both are still the owner's active, non-global memories with the content hashes the
LLM judged; otherwise (or when its SQL fails, inside a savepoint) the pair's decision
failed to apply and the pair is not recorded. `keep` writes nothing but is recorded.
Content changes keep the old text in `content_history` and set `needs_reindex`; the
caller publishes their EmbedJobs after the commit.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg

from memoryd.schemas.base import MAX_CONTENT_CHARS
from services.sleep.context import Embed, RunContext
from services.sleep.logic.conflict_decisions import (
    ArchivePlan,
    ConflictPendingPlan,
    CreatePlan,
    DifferentiatePlan,
    KeepPlan,
    MergePlan,
    PairDecision,
    SupersedePlan,
    UpdatePlan,
    ledger_entries,
)
from services.sleep.logic.conflict_pairs import PairKey
from shared.db import memories
from shared.observability.logging import get_logger

log = get_logger(__name__)


@dataclass
class Applied:
    failed: set[PairKey] = field(default_factory=set)
    embeds: list[Embed] = field(default_factory=list)  # (memory_id, hash, reason)
    archived: list[str] = field(default_factory=list)
    recorded: int = 0


class _Stale(Exception):
    """The memories changed since the LLM judged them."""


async def _set_content(
    conn: asyncpg.Connection, rc: RunContext, memory_id: str, content: str, old: str, reason: str, meta: dict[str, Any]
) -> str:
    if len(content) > MAX_CONTENT_CHARS:
        raise _Stale(f"new content of {len(content)} characters is over {MAX_CONTENT_CHARS}")
    return await memories.replace_content(
        conn, rc.owner, memory_id, content, reason=reason, run_id=rc.run_id, metadata=meta, old_content=old
    )


async def _archive(conn: asyncpg.Connection, rc: RunContext, memory_id: str, meta: dict[str, Any]) -> None:
    await conn.execute(
        "UPDATE memories SET state = 'archived', metadata = metadata || $3::jsonb, updated_at = now()"
        " WHERE owner = $1 AND id = $2",
        rc.owner,
        uuid.UUID(memory_id),
        {**meta, "archivedByRun": rc.run_id},
    )


async def _apply(
    conn: asyncpg.Connection, rc: RunContext, decision: PairDecision, rows: dict[str, Any], out: Applied
) -> None:
    plan = decision.plan
    run = {"sleepRunId": rc.run_id}
    match plan:
        case KeepPlan():
            return
        case MergePlan(keep_id=keep, archive_id=gone, content=content):
            meta = {**run, "mergedFrom": gone}
            digest = await _set_content(conn, rc, keep, content, rows[keep]["content"], "sleep:merge", meta)
            out.embeds.append((keep, digest, "update"))
            await _archive(conn, rc, gone, {"mergedInto": keep})
            out.archived.append(gone)
        case UpdatePlan(memory_id=target, content=content):
            digest = await _set_content(conn, rc, target, content, rows[target]["content"], "sleep:update", run)
            out.embeds.append((target, digest, "update"))
        case ArchivePlan(memory_id=target):
            await _archive(conn, rc, target, {})
            out.archived.append(target)
        case SupersedePlan(newer_id=newer, older_id=older):
            await _archive(conn, rc, older, {"supersededBy": newer})
            out.archived.append(older)
        case ConflictPendingPlan(a_id=a, b_id=b, note=note):
            await conn.execute(
                "INSERT INTO conflict_pending (id, owner, memory_a, memory_b, reason, run_id)"
                " SELECT $1, $2, $3, $4, $5, $6 WHERE NOT EXISTS (SELECT 1 FROM conflict_pending"
                " WHERE owner = $2 AND memory_a = $3 AND memory_b = $4 AND resolved_at IS NULL)",
                uuid.uuid4(),
                rc.owner,
                uuid.UUID(a),
                uuid.UUID(b),
                note,
                uuid.UUID(rc.run_id),
            )
        case CreatePlan(content=content, source_ids=sources):
            if len(content) > MAX_CONTENT_CHARS:
                raise _Stale(f"new content of {len(content)} characters is over {MAX_CONTENT_CHARS}")
            created = await memories.insert(
                conn,
                owner=rc.owner,
                memory_type="semantic",
                content=content,
                source="sleep",
                metadata={**run, "derivedFrom": list(sources)},
            )
            out.embeds.append((created.id, created.content_hash, "new"))
        case DifferentiatePlan(a_id=a, b_id=b, hash_a=hash_a, hash_b=hash_b, distinctions=text):
            await conn.execute(
                "INSERT INTO differentiated_pairs (owner, memory_a, memory_b, hash_a, hash_b, distinctions, run_id)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (owner, memory_a, memory_b) DO UPDATE SET"
                " hash_a = EXCLUDED.hash_a, hash_b = EXCLUDED.hash_b, distinctions = EXCLUDED.distinctions,"
                " run_id = EXCLUDED.run_id, created_at = now()",
                rc.owner,
                uuid.UUID(a),
                uuid.UUID(b),
                hash_a,
                hash_b,
                text,
                uuid.UUID(rc.run_id),
            )


def _check(decision: PairDecision, rows: dict[str, Any]) -> None:
    pair = decision.pair
    for memory_id, digest in ((pair.a_id, pair.a_hash), (pair.b_id, pair.b_hash)):
        row = rows.get(memory_id)
        if row is None or row["state"] != "active" or row["scope"] == "global":
            raise _Stale(f"memory {memory_id} is gone, no longer active or global")
        if row["content_hash"] != digest:
            raise _Stale(f"memory {memory_id} changed since it was judged")


async def apply_batch(
    rc: RunContext, decisions: Sequence[PairDecision], judged_at: datetime, unrecorded: Collection[PairKey] = ()
) -> Applied:
    """Apply the plans of one batch and record its ledger rows (not `unrecorded`'s), in one transaction."""
    out = Applied()
    ids = [uuid.UUID(i) for d in decisions for i in d.pair.key]
    async with rc.pool.acquire() as conn, conn.transaction():
        locked = await conn.fetch(
            "SELECT id, content, content_hash, state, scope FROM memories WHERE owner = $1 AND id = ANY($2::uuid[])"
            " ORDER BY id FOR UPDATE",
            rc.owner,
            ids,
        )
        rows = {str(r["id"]): r for r in locked}
        for decision in decisions:
            if isinstance(decision.plan, KeepPlan):
                continue
            mark = (len(out.embeds), len(out.archived))
            try:
                _check(decision, rows)
                async with conn.transaction():  # a savepoint: a failing plan leaves no trace
                    await _apply(conn, rc, decision, rows, out)
            except (_Stale, asyncpg.DataError, asyncpg.IntegrityConstraintViolationError) as exc:
                del out.embeds[mark[0] :], out.archived[mark[1] :]
                out.failed.add(decision.pair.key)
                log.info("sleep.conflict_apply_failed", pair=list(decision.pair.key), error=str(exc))
        entries = ledger_entries(decisions, judged_at, out.failed | set(unrecorded))
        await conn.executemany(
            "INSERT INTO conflict_reviewed (owner, memory_a, memory_b, judged_at, outcome, run_id)"
            " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (owner, memory_a, memory_b) DO UPDATE SET"
            " judged_at = EXCLUDED.judged_at, outcome = EXCLUDED.outcome, run_id = EXCLUDED.run_id",
            [
                (rc.owner, uuid.UUID(e.a_id), uuid.UUID(e.b_id), e.judged_at, e.outcome, uuid.UUID(rc.run_id))
                for e in entries
            ],
        )
        out.recorded = len(entries)
    return out
