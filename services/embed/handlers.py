"""The embed service's handlers: embed jobs (batched, written to the stores) and query embeddings.

`Jobs.handle` hands its job to a `MicroBatcher` and returns when the batch holding it is written,
so the consumer acks only after the write. A batch (`Jobs.flush`) reads the memories as they are
now, embeds those needing it (a chat turn with its day and speaker) in one inference call,
writes every configured store, then `mark_embedded`, and notes its owners for `OwnerIndexes`
(large owners' own HNSW indexes). A memory deleted meanwhile is acked and counted; one changed
while embedded is flagged and requeued. During a signature change a batch also writes vectors of
the signature retrieval still searches (`Searched`, `logic.searched_too`), so memories created or
edited meanwhile are found by vector search before the switch. `Queries.embed` serves
`mem.v1.rpc.embed`: cache first (`{signature}:{sha256(text)}`), then the misses, batched while
every inference slot is busy. A batch keeps the source and stores it started with (`SwapGate`):
an engine change swaps them between batches, never inside one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from nats.js import JetStreamContext

from memoryd.schemas import EmbedJob
from memoryd.schemas.retrieval import EmbedRequest, EmbedResult
from services.embed.adapters import postgres as db
from shared.bus.consumer import JobContext
from shared.bus.embed_jobs import no_msg_id, publish_embed_jobs
from shared.db.pool import Pool
from shared.observability.logging import get_logger
from shared.observability.metrics import EMBED_CACHE, EMBED_SKIPPED, EMBED_TEXTS
from shared.vectors.cache import Vector, VectorCache
from shared.vectors.pgvector import mark_embedded
from shared.vectors.port import VectorItem, VectorStore

from .batcher import MicroBatcher
from .gate import SwapGate
from .logic import JobOutcome, cache_key, embed_text, same_vectors, searched_too, triage, unique_by_id
from .owner_index import OwnerIndexes
from .sources import EmbedSource

log = get_logger(__name__)


@dataclass(frozen=True)
class Searched:
    """The signature retrieval searches while another is pending: its source and the stores that
    search it (a batch writes their vectors beside the new signature's)."""

    source: EmbedSource
    stores: tuple[VectorStore, ...]


class Jobs:
    """Embed jobs: batched by `MicroBatcher`, one read / inference / write per batch."""

    def __init__(
        self,
        pool: Pool,
        js: JetStreamContext,
        stores: Sequence[VectorStore],
        source: EmbedSource,
        *,
        batch_max: int,
        batch_wait_s: float,
        pipeline: int,
        owner_indexes: OwnerIndexes | None = None,
    ) -> None:
        self.pool = pool
        self.owner_indexes = owner_indexes
        self.js = js
        self.stores = list(stores)
        self.source = source
        self.searched: Searched | None = None  # set by the engine switch during a signature change
        self.gate = SwapGate()  # source, stores and searched change only between batches
        self.batcher: MicroBatcher[EmbedJob, JobOutcome] = MicroBatcher(
            self.flush, max_size=batch_max, max_wait_s=batch_wait_s, max_inflight=pipeline
        )

    async def handle(self, job: EmbedJob, ctx: JobContext) -> None:
        outcome = await self.batcher.submit(job)
        if outcome != "embed":
            EMBED_SKIPPED.labels(outcome).inc()

    async def flush(self, jobs: list[EmbedJob]) -> list[JobOutcome]:
        async with self.gate.use():
            return await self._flush(jobs, self.source, self.stores, self.searched)

    async def _flush(
        self,
        jobs: list[EmbedJob],
        source: EmbedSource,
        stores: Sequence[VectorStore],
        searched: Searched | None = None,
    ) -> list[JobOutcome]:
        rows = await db.fetch_rows(self.pool, jobs)
        sig = source.signature
        outcomes: list[JobOutcome] = []
        todo: list[db.MemoryRow] = []
        for job in jobs:
            row = rows.get(db.job_key(job))
            outcome = triage(row.state if row else None, sig)
            outcomes.append(outcome)
            if outcome == "embed" and row is not None:
                todo.append(row)
        states = unique_by_id([r.state for r in todo])
        if states:
            by_id = {r.state.memory_id: r for r in todo}
            await self._embed_and_write(states, by_id, source, stores, searched, _fresh(jobs, rows))
        return outcomes

    async def _embed_and_write(
        self,
        states: list[db.MemoryState],
        rows: dict[str, db.MemoryRow],
        source: EmbedSource,
        stores: Sequence[VectorStore],
        searched: Searched | None = None,
        fresh: set[str] | None = None,
    ) -> None:
        sig = source.signature
        vectors = await source.embed([_text(rows[s.memory_id], sig) for s in states])
        items = [_item(rows[s.memory_id], vectors[i]) for i, s in enumerate(states)]
        writes = [(sig, store, items) for store in stores]
        if searched is not None and searched.stores:
            old = await _searched_items(states, rows, items, sig, searched.source, fresh or set())
            writes += [(searched.source.signature, store, old) for store in searched.stores if old]
        await asyncio.gather(*(store.upsert(signature, batch) for signature, store, batch in writes))
        if self.owner_indexes is not None:
            self.owner_indexes.note(stores, sig, (s.owner for s in states))
        embedded = [(s.memory_id, s.content_hash) for s in states]
        contexts = [rows[s.memory_id].context for s in states]  # a turn's head is part of its text
        marked = await mark_embedded(self.pool, embedded, sig, contexts)
        EMBED_TEXTS.labels("job").inc(len(states))
        if marked < len(embedded):  # deleted meanwhile, or edited while we embedded
            await self._requeue(await db.flag_changed(self.pool, embedded, contexts))

    async def _requeue(self, changed: list[tuple[str, str, str]]) -> None:
        # no dedupe id: a job for this content may have run already, before the vector was overwritten
        jobs = [
            EmbedJob(memory_id=m, owner=owner, content_hash=digest, reason="update") for m, owner, digest in changed
        ]
        await publish_embed_jobs(self.js, jobs, msg_id=no_msg_id)
        for job in jobs:
            log.info("embed.requeued_changed", memory_id=job.memory_id, owner=job.owner)


def _fresh(jobs: Sequence[EmbedJob], rows: dict[tuple[str, str], db.MemoryRow]) -> set[str]:
    """Memory ids of a batch created or edited since their old vector was written: asked for by a
    job other than the reindex's, or by a reindex job queued before the content changed."""
    out: set[str] = set()
    for job in jobs:
        key = db.job_key(job)
        row = rows.get(key)
        if job.reason != "reindex" or (row is not None and row.state.content_hash != job.content_hash):
            out.add(key[0])
    return out


async def _searched_items(
    states: list[db.MemoryState],
    rows: dict[str, db.MemoryRow],
    items: list[VectorItem],
    sig: str,
    searched: EmbedSource,
    fresh: set[str],
) -> list[VectorItem]:
    """The batch's vectors of the signature retrieval still searches (``logic.searched_too``):
    ``items`` themselves when only the storage differs, else embedded by ``searched``."""
    chosen = searched_too(states, fresh)
    if not chosen or same_vectors(searched.signature, sig):
        return [items[i] for i in chosen]
    vectors = await searched.embed([_text(rows[states[i].memory_id], searched.signature) for i in chosen])
    return [_item(rows[states[i].memory_id], vectors[n]) for n, i in enumerate(chosen)]


def _text(row: db.MemoryRow, sig: str) -> str:
    """What ``row`` is embedded as under ``sig`` (a chat turn with its stored context, ``logic.embed_text``)."""
    return embed_text(row.state.content, row.context, sig)


def _item(row: db.MemoryRow, vector: Vector) -> VectorItem:
    return VectorItem(
        memory_id=row.state.memory_id,
        owner=row.state.owner,
        vector=vector,
        session_id=row.session_id,
        agent_id=row.agent_id,
        scope=row.scope,
        state=row.lifecycle,
        memory_type=row.memory_type,
        created_at=row.created_at,
        expires_at=row.expires_at,
    )


class Queries:
    """Query embeddings: the source of the signature retrieval searches, a cache, a batcher."""

    def __init__(
        self, source: EmbedSource, cache: VectorCache, *, batch_max: int, wait_s: float, inflight: int = 1
    ) -> None:
        self.cache = cache
        self._batch_max = batch_max
        self._wait_s = wait_s
        self._inflight = inflight
        self.source = source
        self.batcher = self._batcher(source)

    def _batcher(self, source: EmbedSource) -> MicroBatcher[str, Vector]:
        async def flush(texts: list[str]) -> list[Vector]:
            return [v.copy() for v in await source.embed(texts, urgent=True)]  # rows outlive their batch in the cache

        return MicroBatcher(flush, max_size=self._batch_max, max_wait_s=self._wait_s, max_inflight=self._inflight)

    def use(self, source: EmbedSource) -> None:
        """Answer with another source from now on (the active signature switched)."""
        if source is not self.source:
            self.source, self.batcher = source, self._batcher(source)

    async def switch(self, source: EmbedSource) -> EmbedSource | None:
        """`use(source)`, then let the old batcher finish what it holds; returns the old source
        (for the caller to close when nothing else uses it), None when nothing changed."""
        old, old_batcher = self.source, self.batcher
        if source is old:
            return None
        self.use(source)
        await asyncio.sleep(0)  # requests that took the old batcher just before submit to it first
        await old_batcher.close()
        return old

    async def embed(self, req: EmbedRequest) -> EmbedResult:
        source, batcher = self.source, self.batcher  # one signature for the whole request
        sig = source.signature
        keys = [cache_key(sig, t, req.owner) for t in req.texts]
        found: dict[str, Vector] = {}
        for key in keys:
            if key not in found and (hit := self.cache.get(key)) is not None:
                found[key] = hit
        cached = sum(1 for k in keys if k in found)
        EMBED_CACHE.labels("hit").inc(cached)
        EMBED_CACHE.labels("miss").inc(len(keys) - cached)
        misses = {k: t for k, t in zip(keys, req.texts, strict=True) if k not in found}
        if misses:
            vectors = await batcher.submit_many(list(misses.values()))
            for key, vec in zip(misses, vectors, strict=True):
                self.cache.put(key, vec)
                found[key] = vec
            EMBED_TEXTS.labels("query").inc(len(misses))
        return EmbedResult(vectors=[found[k].tolist() for k in keys], signature=sig, dim=source.dim, cached=cached)

    async def close(self) -> None:
        await self.batcher.close()
