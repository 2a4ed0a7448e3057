"""Engine settings applied by a running embed worker: a new source and/or stores, no restart.

The effective engine is the environment overridden by the global settings row
(`shared.settings.engine`). On `mem.v1.settings.changed` for `*`, `EngineSwitch.apply` recomputes
it and, when it differs: builds the new source (off the event loop; `vectorQuantization` is part
of its signature) and opens the new stores; detaches a Qdrant taken out of use; under the job gate
(batches in flight finish, new ones wait) prepares the signatures as at a start (a new one starts a
reindex) and switches the jobs; keeps queries on the signature retrieval searches until the
reindex switches it, and has job batches write that signature's vectors too (`handlers.Searched`);
closes what nothing uses. A row this worker cannot run (e.g. a remote source without a model) is
refused: the worker keeps what it runs and its `embedder` health check says why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import asyncpg

from memoryd.errors import ConfigError, ValidationFailed
from services.embed.handlers import Jobs, Queries, Searched
from services.embed.reindex import Signatures
from services.embed.settings import EmbedSettings
from services.embed.sources import EmbedSource, Inference, build_source, source_for_signature
from shared.observability.logging import get_logger
from shared.settings.engine import EngineChoice, qdrant_location, usable_engine
from shared.settings.env import QdrantConfig, ServiceConfig
from shared.vectors.open_stores import open_for
from shared.vectors.registry import VectorStores
from shared.vectors.signature import vector_quantization

log = get_logger(__name__)


def startup_engine(env: EmbedSettings, qdrant: QdrantConfig, row: Mapping[str, Any]) -> EngineChoice[EmbedSettings]:
    """The engine to start with: the environment under the global row, or the environment
    alone when that combination cannot run here (said in the log)."""
    try:
        return usable_engine(env, qdrant, row)
    except ValidationFailed as exc:
        log.warning("embed.engine_settings_ignored", error=exc.description, detail="starting from the environment")
        return EngineChoice(embedding=env, qdrant=qdrant)


def source_info(source: EmbedSource) -> dict[str, Any]:
    """What `memory_vec_meta.details` records of the source (shown by `engine.status`)."""
    return {
        "source": source.kind,
        "model": source.model,
        "dim": source.dim,
        "quantization": source.quantization,
        "vector_quantization": vector_quantization(source.signature),  # pgvector storage
        "resolution": source.resolution,
        "configured_signature": source.signature,  # of the worker that started (or switched) last
    }


def locations(choice: EngineChoice[Any]) -> dict[str, str]:
    q = choice.qdrant_in_use
    return {"qdrant": qdrant_location(q)} if q is not None else {}


class EngineSwitch:
    """What one embed worker runs (engine choice, source, stores) and the switch to another."""

    def __init__(
        self,
        *,
        config: ServiceConfig,
        pool: asyncpg.Pool,
        env: EmbedSettings,
        choice: EngineChoice[EmbedSettings],
        source: EmbedSource,
        stores: VectorStores,
        sigs: Signatures,
        jobs: Jobs,
        queries: Queries,
        inference: Inference,
        cache_dir: Path,
    ) -> None:
        self.config, self.pool, self.env = config, pool, env
        self.choice, self.source, self.stores = choice, source, stores
        self.sigs, self.jobs, self.queries = sigs, jobs, queries
        self.inference, self.cache_dir = inference, cache_dir
        self.problem: str | None = None  # why the last settings change was not applied
        self._lock = asyncio.Lock()

    async def apply(self, row: Mapping[str, Any]) -> None:
        """Run the engine the global ``row`` asks for, if it differs and can run here."""
        async with self._lock:
            try:
                choice = usable_engine(self.env, self.config.qdrant, row)
            except ValidationFailed as exc:
                return self._refuse(exc.description)
            if choice == self.choice:
                self.problem = None
                return None
            try:
                await self._switch(choice)
            except ConfigError as exc:
                return self._refuse(exc.description)
            self.problem = None
            return None

    def _refuse(self, why: str) -> None:
        self.problem = f"engine settings not applied: {why}"
        log.warning("embed.engine_settings_refused", error=why)

    async def _switch(self, choice: EngineChoice[EmbedSettings]) -> None:
        old_choice, old_source, old_stores = self.choice, self.source, self.stores
        source = old_source
        if (choice.embedding, choice.vector_quantization) != (old_choice.embedding, old_choice.vector_quantization):
            storage = choice.vector_quantization  # part of the signature: a change starts a reindex
            source = await asyncio.to_thread(build_source, choice.embedding, self.inference, self.cache_dir, storage)
        stores = old_stores
        if choice.qdrant_in_use != old_choice.qdrant_in_use:
            stores = await open_for(self.config, self.pool, choice.qdrant_in_use)
        detach = old_stores.qdrant is not None and locations(choice) != locations(old_choice)
        try:
            async with self.jobs.gate.exclusive():
                if detach:
                    await self.sigs.detach("qdrant")
                await self.sigs.reconfigure(
                    stores.all, source.signature, source.dim, source_info(source), locations(choice)
                )
                self.jobs.source, self.jobs.stores = source, stores.all
                self.choice, self.source, self.stores = choice, source, stores
        except BaseException:  # keep running what ran; the settings watch retries later
            if stores is not old_stores:
                await stores.close()
            if source is not old_source:
                await source.close()
            raise
        log.info(
            "embed.engine_switched",
            signature=source.signature,
            stores=[s.name for s in stores.all],
            pending=self.sigs.changing,
        )
        await self.follow_active(build=True)
        if old_stores is not stores:
            await old_stores.close()
        await self._close_unused(old_source)

    async def tick(self) -> None:
        """After each signature watch round: once the reindex switched, queries use the new source."""
        async with self._lock:
            await self.follow_active(build=False)

    async def follow_active(self, *, build: bool) -> None:
        """Queries use the source of the signature retrieval searches (the active one): while a
        change is pending, the active signature's source when ``build`` may build it and it can be
        built, else the configured one (query vectors then wait for the reindex to match)."""
        active = self.sigs.active
        current = self.queries.source
        if active is None or active == self.source.signature:
            want = self.source
        elif current.signature == active or not build:
            want = current
        else:
            legacy = await asyncio.to_thread(
                source_for_signature, active, self.choice.embedding, self.inference, self.cache_dir
            )
            if legacy is None:
                log.warning(
                    "embed.active_signature_unavailable",
                    active=active,
                    configured=self.source.signature,
                    detail="query vectors use the new signature; vector search waits for the reindex",
                )
            want = legacy or self.source
        await self._follow_searched(want)
        old = await self.queries.switch(want)
        if old is not None:
            log.info("embed.query_source_switched", signature=want.signature)
            await self._close_unused(old)

    async def _follow_searched(self, want: EmbedSource) -> None:
        """Job batches also write ``want``'s vectors while it is the searched signature and not
        the configured one, to the stores whose active signature it is; changed between batches
        (a batch in flight finishes with what it started with before ``want``'s source can close)."""
        searched = None
        if want is not self.source and want.signature != self.source.signature:
            stores = tuple(s for s in self.jobs.stores if self.sigs.active_of(s.name) == want.signature)
            searched = Searched(want, stores) if stores else None
        if searched != self.jobs.searched:
            async with self.jobs.gate.exclusive():
                self.jobs.searched = searched
            log.info("embed.searched_signature_written", signature=searched.source.signature if searched else None)

    async def _close_unused(self, source: EmbedSource) -> None:
        if source is not self.source and source is not self.queries.source:
            await source.close()

    async def close(self) -> None:
        """At shutdown: the stores and sources in use."""
        await self.stores.close()
        await self.queries.source.close()
        if self.source is not self.queries.source:
            await self.source.close()
