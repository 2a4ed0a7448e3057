"""The `conflicts.list` and `conflicts.resolve` RPCs: the review queue sleep fills, settled by a person.

A resolution runs in one transaction: the entry and its two memories are locked, the plan
(`logic.conflict_review`) applied as a merge of the conflict phase would be (the archived side
gets `mergedInto`, replaced text goes to `content_history`), a dismissed pair is recorded in
the `conflict_reviewed` ledger (sleep skips it until a side changes), and the entry keeps its
receipt. After the commit a changed text gets its EmbedJob and an archived memory's state is
mirrored to the stores that filter on their own payload.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memoryd.errors import Conflict, DependencyDown, NotFound
from memoryd.schemas.conflicts import (
    ConflictListRequest,
    ConflictListResult,
    ConflictReceipt,
    ConflictResolveRequest,
    ConflictResolveResult,
)
from memoryd.schemas.events import EmbedJob
from services.sleep.adapters import conflict_store, review_store
from services.sleep.context import Deps
from services.sleep.logic.conflict_pairs import normalise_pair
from services.sleep.logic.conflict_review import ReviewPlan, Side, plan_resolution
from shared.bus.embed_jobs import publish_embed_jobs
from shared.db import memories
from shared.db.pool import Connection
from shared.observability.logging import get_logger

log = get_logger(__name__)
DISMISSED = "dismissed"


class ReviewApi:
    def __init__(self, deps: Deps) -> None:
        self._deps = deps

    async def list(self, req: ConflictListRequest) -> ConflictListResult:
        pool = self._deps.pool
        items = await review_store.list_entries(pool, req.owner, pending=req.status == "pending", limit=req.limit)
        return ConflictListResult(items=items, pending=await review_store.count_pending(pool, req.owner))

    async def resolve(self, req: ConflictResolveRequest) -> ConflictResolveResult:
        owner = req.owner
        async with self._deps.pool.acquire() as conn, conn.transaction():
            entry = await review_store.lock_entry(conn, owner, req.id)
            if entry is None:
                raise NotFound(f"conflict {req.id} is not in the review queue of this owner")
            if entry["resolved_at"] is not None:
                raise Conflict(f"conflict {req.id} was resolved already at {entry['resolved_at'].isoformat()}")
            pair = normalise_pair(str(entry["memory_a"]), str(entry["memory_b"]))
            rows = await conflict_store.lock_memories(conn, owner, pair)
            sides = {i: Side(id=i, state=r["state"], scope=r["scope"], content=r["content"]) for i, r in rows.items()}
            plan = plan_resolution(req.action, req.keep, req.content, pair, sides)
            entry_id = str(entry["id"])
            receipt: dict[str, Any] = {"conflict_id": entry_id, "action": plan.action, "resolved_by": req.resolved_by}
            digest = await self._apply(conn, owner, entry_id, plan, pair, sides, receipt)
            resolved_at = await review_store.settle(conn, owner, entry_id, plan.action, req.resolved_by, receipt)
            pending = await review_store.count_pending(conn, owner)
        if digest is not None and plan.keep is not None:
            await self._embed(EmbedJob(memory_id=plan.keep, owner=owner, content_hash=digest, reason="update"))
        if plan.archive is not None:
            await self._mirror_archived(owner, plan.archive)
        log.info("sleep.conflict_resolved", owner=owner, conflict=entry_id, action=plan.action)
        return ConflictResolveResult(receipt=_receipt(receipt, resolved_at), pending=pending)

    async def _apply(
        self,
        conn: Connection,
        owner: str,
        entry_id: str,
        plan: ReviewPlan,
        pair: tuple[str, str],
        sides: dict[str, Side],
        receipt: dict[str, Any],
    ) -> str | None:
        """Apply the plan; the kept memory's new content hash when its text changed."""
        if plan.action == "dismiss":
            judged_at = await conflict_store.db_clock(conn)
            await conflict_store.record_reviewed(conn, owner, [(pair[0], pair[1], judged_at, DISMISSED)], entry_id)
            return None
        assert plan.keep is not None and plan.archive is not None
        receipt |= {"kept": plan.keep, "archived": plan.archive}
        digest = None
        if plan.action == "merge" and plan.content is not None:
            before = sides[plan.keep].content
            digest = await memories.replace_content(
                conn,
                owner,
                plan.keep,
                plan.content,
                reason="review:merge",
                run_id=entry_id,
                metadata={"mergedFrom": plan.archive, "reviewConflictId": entry_id},
                old_content=before,
            )
            receipt |= {"content_before": before, "content_after": plan.content}
        meta: dict[str, object] = {"mergedInto": plan.keep, "reviewConflictId": entry_id}
        await conflict_store.archive(conn, owner, plan.archive, meta)
        return digest

    async def _embed(self, job: EmbedJob) -> None:
        try:
            await publish_embed_jobs(self._deps.js, [job])
        except DependencyDown as exc:  # the memory keeps needs_reindex: the embed sweep finds it
            log.warning("sleep.embed_publish_failed", count=1, error=exc.description)

    async def _mirror_archived(self, owner: str, memory_id: str) -> None:
        for store in self._deps.mirrors:
            try:
                await store.update_payload(owner, [memory_id], state="archived")
            except Exception as exc:  # a mirror that lags is repaired by its own reconciliation
                log.warning("sleep.mirror_failed", store=store.name, error=str(exc) or type(exc).__name__)


def _receipt(fields: dict[str, Any], resolved_at: datetime) -> ConflictReceipt:
    return ConflictReceipt(**{**fields, "resolved_at": resolved_at})
