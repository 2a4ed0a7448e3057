"""Embedding signatures over time: start, backfill, switch, retire.

`prepare` (every worker, at start and on `reconfigure`): per store, its `memory_vec_meta` row names
the active signature; a different configured one becomes `pending_signature` and every memory is
marked `needs_reindex`, once, under the row lock. Retrieval keeps searching the active signature.
`reindex` queues an `EmbedJob` per memory without a current vector, in pages, deduplicated by
`Nats-Msg-Id`. When every memory that existed at the change's start has a new vector
(`try_complete`, polled by every worker), each store activates it (Qdrant: the alias swap) and the
old signature is `retired`, its vectors dropped `retire_grace_s` later. A store taken out of use
(`detach`) is marked `detached`; used again, or found at another location, it starts afresh with
every memory backfilled, so it never serves vectors that missed writes or deletions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from nats.js import JetStreamContext

from memoryd.errors import Conflict
from memoryd.schemas import EmbedJob
from memoryd.schemas.ops import ReindexRequest, ReindexResult
from services.embed.adapters import postgres as db
from shared.bus.embed_jobs import publish_embed_jobs
from shared.observability.logging import get_logger
from shared.periodic import every
from shared.settings.engine import reattached
from shared.vectors.port import VectorStore

from .logic import MetaAction, meta_action, reindex_msg_id

log = get_logger(__name__)


class Signatures:
    """The configured signature against what `memory_vec_meta` says, for one worker process."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        js: JetStreamContext,
        stores: Sequence[VectorStore],
        signature: str,
        dim: int,
        info: dict[str, Any],
        *,
        retire_grace_s: float = 60.0,
        locations: Mapping[str, str] | None = None,
    ) -> None:
        self.pool = pool
        self.js = js
        self.stores = {s.name: s for s in stores}
        self.signature = signature
        self.dim = dim
        self.info = info  # source, model, dim, quantization, resolution: for engine.status
        self.retire_grace_s = retire_grace_s
        self.locations = dict(locations or {})  # store name -> where it is (Qdrant: url#collection)
        self.meta: dict[str, db.MetaRow] = {}
        self.lock = asyncio.Lock()  # one of: prepare / reconfigure / a watch round

    @property
    def active(self) -> str | None:
        """The signature retrieval searches in pgvector now."""
        return self.active_of("pgvector")

    def active_of(self, store: str) -> str | None:
        """The signature retrieval searches in ``store`` now."""
        row = self.meta.get(store)
        return row.active if row else None

    @property
    def changing(self) -> bool:
        return any(m.pending == self.signature for m in self.meta.values())

    async def prepare(self) -> dict[str, MetaAction]:
        """Record the configured signature; start a change (mark every memory) if it is new."""
        async with self.lock:
            return await self._prepare()

    async def reconfigure(
        self,
        stores: Sequence[VectorStore],
        signature: str,
        dim: int,
        info: dict[str, Any],
        locations: Mapping[str, str],
    ) -> dict[str, MetaAction]:
        """Switch to another source and/or stores at run time, then prepare them like a start
        (on failure, e.g. a store that cannot be reached, nothing changes here)."""
        async with self.lock:
            before = (self.stores, self.signature, self.dim, self.info, self.locations)
            self.stores = {s.name: s for s in stores}
            self.signature, self.dim, self.info, self.locations = signature, dim, info, dict(locations)
            try:
                return await self._prepare()
            except BaseException:
                self.stores, self.signature, self.dim, self.info, self.locations = before
                raise

    async def detach(self, name: str) -> None:
        """Stop using store `name`: drop its collections of known signatures (best effort: a
        store out of use must not keep vectors that later deletions would miss) and mark its
        row `detached`, so using it again starts from empty with a full backfill."""
        async with self.lock:
            store = self.stores.get(name)
            row = (await db.read_meta(self.pool, [name])).get(name)
            if store is None or row is None:
                return
            for sig in self._held(row):
                try:
                    await store.drop(sig)
                except Exception as exc:  # down: its data is dropped when it is attached again
                    log.warning("embed.detach_drop_failed", store=name, signature=sig, error=str(exc))
            await db.mark_detached(self.pool, name)
            log.info("embed.store_detached", store=name)

    async def _prepare(self) -> dict[str, MetaAction]:
        for store in self.stores.values():
            # Outside any transaction of ours: pgvector builds its index CONCURRENTLY, which
            # waits for every older transaction.
            await store.ensure(self.signature, self.dim)
        actions: dict[str, MetaAction] = {}
        async with self.pool.acquire() as conn, conn.transaction():
            meta = await db.lock_meta(conn, list(self.stores))
            embedded = await db.memories_embedded(conn)
            now = await db.db_now(conn)
            for name, row in meta.items():
                row = await self._start_afresh(name, row)
                action = meta_action(row.active, row.pending, self.signature, memories_embedded=embedded)
                actions[name] = action
                details = {**row.details, **self.info}
                active, dim, pending = row.active, row.active_dim, row.pending
                if action == "init":
                    await self.stores[name].activate(self.signature)  # Qdrant: point the alias at it
                    active, dim, pending = self.signature, self.dim, None
                    details["activated_at"] = now
                elif action == "cancel_change":  # the abandoned signature's vectors are dropped later
                    details |= {"retired": row.pending, "retired_at": now}
                    pending = None
                elif action == "start_change":
                    pending = self.signature
                    details["reindex_started_at"] = now
                await db.write_meta(conn, name, active=active, active_dim=dim, pending=pending, details=details)
            marked = await db.mark_all_for_reindex(conn) if "start_change" in actions.values() else 0
        await self.refresh()
        log.info("embed.signature", signature=self.signature, actions=actions, marked_for_reindex=marked)
        return actions

    async def _start_afresh(self, name: str, row: db.MetaRow) -> db.MetaRow:
        """A store used again after `detach`, or now at another location: drop what it holds of
        our signatures and forget them (the row lock is held by the caller)."""
        location = self.locations.get(name)
        if location is None:
            return row
        if not reattached(row.details, location):
            return dataclasses.replace(row, details={**row.details, "location": location})
        store = self.stores[name]
        for sig in self._held(row):
            await store.drop(sig)
        await store.ensure(self.signature, self.dim)
        log.info("embed.store_starts_afresh", store=name, location=location, was=row.details.get("location"))
        kept = {k: v for k, v in row.details.items() if k not in ("detached", "retired", "retired_at")}
        return db.MetaRow(name, None, None, None, {**kept, "location": location})

    def _held(self, row: db.MetaRow) -> set[str]:
        """The signatures a store may hold vectors of: its active, its pending and ours."""
        return {s for s in (row.active, row.pending, self.signature) if s}

    async def refresh(self) -> None:
        self.meta = await db.read_meta(self.pool, list(self.stores))

    async def try_complete(self) -> list[str]:
        """Switch the stores whose pending signature is fully backfilled; return their names."""
        await self.refresh()
        if not self.changing:
            return []
        switched: list[str] = []
        async with self.pool.acquire() as conn, conn.transaction():
            meta = await db.lock_meta(conn, list(self.stores))
            todo = [m for m in meta.values() if m.pending == self.signature]
            now = await db.db_now(conn)
            started = min(_epoch(m.details.get("reindex_started_at"), now) for m in todo) if todo else now
            if not todo or await db.backfill_pending(conn, self.signature, started):
                return []
            for row in todo:
                await self.stores[row.store].activate(self.signature)
                details = {**row.details, "activated_at": now}
                if row.active and row.active != self.signature:
                    details |= {"retired": row.active, "retired_at": now}
                await db.write_meta(
                    conn, row.store, active=self.signature, active_dim=self.dim, pending=None, details=details
                )
                switched.append(row.store)
        log.info("embed.signature_switched", signature=self.signature, stores=switched)
        await self.refresh()
        return switched

    async def retire_due(self) -> int:
        """Drop the vectors of signatures retired more than `retire_grace_s` ago (database clock)."""
        retired = [(row, str(row.details["retired"])) for row in self.meta.values() if row.details.get("retired")]
        if not retired:
            return 0
        now = await db.db_now(self.pool)
        dropped = 0
        for row, old in retired:
            if now - _epoch(row.details.get("retired_at"), now) < self.retire_grace_s:
                continue
            if old not in (row.active, row.pending):
                dropped += await self.stores[row.store].drop(old)  # idempotent: two workers may race here
            await db.clear_retired(self.pool, row.store, old)
            log.info("embed.signature_retired", store=row.store, signature=old, vectors=dropped)
        await self.refresh()
        return dropped

    async def watch(
        self, stop: asyncio.Event, period_s: float, on_tick: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """Every `period_s`: follow the meta rows, switch when a backfill is done, drop retired vectors."""

        async def round_() -> None:
            async with self.lock:
                await self.try_complete()
            if on_tick is not None:  # queries and job batches leave a switched-off signature ...
                await on_tick()
            async with self.lock:  # ... before its vectors are dropped
                await self.retire_due()

        await every(period_s, stop, round_, failed="embed.signature_watch_failed")

    # --- the reindex RPC ------------------------------------------------------------------
    async def reindex(self, req: ReindexRequest) -> ReindexResult:
        await self.refresh()
        for row in self.meta.values():
            if row.pending and row.pending != self.signature:
                raise Conflict(
                    f"store {row.store} is changing to {row.pending}, but this embed worker is configured "
                    f"for {self.signature}: give every embed replica the same settings"
                )
        queued = 0 if req.dry_run else await self.queue(req.owner, req.batch_size)
        if not req.dry_run or self.changing:
            await self.try_complete()
        pending = await db.pending_count(self.pool, self.signature, req.owner)
        return ReindexResult(signature=self.signature, queued=queued, pending=pending, active_signature=self.active)

    async def queue(self, owner: str | None, batch_size: int, updated_before: datetime | None = None) -> int:
        """Publish a reindex job for every memory needing this signature (last changed before
        `updated_before`, when given); return how many were new."""
        queued = 0
        after: uuid.UUID | None = None
        while True:
            page = await db.needing_page(self.pool, self.signature, owner, after, batch_size, updated_before)
            if not page:
                return queued
            ids = {
                EmbedJob(memory_id=str(mid), owner=own, content_hash=digest, reason="reindex"): reindex_msg_id(
                    str(mid), digest, self.signature, current
                )
                for mid, own, digest, current in page
            }
            acks = await publish_embed_jobs(self.js, list(ids), msg_id=ids.__getitem__)
            queued += sum(1 for ack in acks if not ack.duplicate)
            after = page[-1][0]

    async def sweep(self, min_age_s: float, batch_size: int) -> int:
        """Queue jobs for memories that have needed a vector for over `min_age_s` (their job was
        lost: e.g. its publish met a full jobs stream). Not during a signature change: that
        backfill is `reindex`'s. The caller runs it only while the embed queue is empty, so a
        memory whose job is merely waiting is never queued twice."""
        if self.changing:
            return 0
        return await self.queue(None, batch_size, datetime.now(UTC) - timedelta(seconds=min_age_s))


def _epoch(value: object, default: float) -> float:
    """An epoch-seconds value from `details` (written by us), or `default` when absent."""
    return float(value) if isinstance(value, int | float) else default
