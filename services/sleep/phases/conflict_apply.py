"""Applying one conflict batch: every plan plus its ledger rows in one transaction.

The pair's memories are locked (`FOR UPDATE`) and re-checked first: a plan applies only
when both are still the owner's active, non-global memories with the content hashes the
LLM judged; otherwise (or when its SQL fails, inside a savepoint) the pair's decision
failed to apply and the pair is not recorded. `keep` writes nothing but is recorded.
Content changes keep the old text in `content_history` and set `needs_reindex`; the
caller publishes their EmbedJobs after the commit.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memoryd.schemas.base import MAX_CONTENT_CHARS
from services.sleep.adapters import conflict_store as store
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
from shared.db.pool import Connection
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
    conn: Connection, rc: RunContext, memory_id: str, content: str, old: str, reason: str, meta: dict[str, Any]
) -> str:
    if len(content) > MAX_CONTENT_CHARS:
        raise _Stale(f"new content of {len(content)} characters is over {MAX_CONTENT_CHARS}")
    return await memories.replace_content(
        conn, rc.owner, memory_id, content, reason=reason, run_id=rc.run_id, metadata=meta, old_content=old
    )


async def _archive(conn: Connection, rc: RunContext, memory_id: str, meta: dict[str, Any]) -> None:
    await store.archive(conn, rc.owner, memory_id, {**meta, "archivedByRun": rc.run_id})


async def _apply(conn: Connection, rc: RunContext, decision: PairDecision, rows: dict[str, Any], out: Applied) -> None:
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
            await store.add_pending(conn, rc.owner, a, b, note, rc.run_id)
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
            await store.record_differentiated(conn, rc.owner, a, b, (hash_a, hash_b), text, rc.run_id)


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
    async with rc.pool.acquire() as conn, conn.transaction():
        rows = await store.lock_memories(conn, rc.owner, [i for d in decisions for i in d.pair.key])
        for decision in decisions:
            if isinstance(decision.plan, KeepPlan):
                continue
            mark = (len(out.embeds), len(out.archived))
            try:
                _check(decision, rows)
                async with conn.transaction():  # a savepoint: a failing plan leaves no trace
                    await _apply(conn, rc, decision, rows, out)
            except (_Stale, *store.PLAN_REFUSED) as exc:
                del out.embeds[mark[0] :], out.archived[mark[1] :]
                out.failed.add(decision.pair.key)
                log.info("sleep.conflict_apply_failed", pair=list(decision.pair.key), error=str(exc))
        entries = ledger_entries(decisions, judged_at, out.failed | set(unrecorded))
        await store.record_reviewed(
            conn, rc.owner, [(e.a_id, e.b_id, e.judged_at, e.outcome) for e in entries], rc.run_id
        )
        out.recorded = len(entries)
    return out
