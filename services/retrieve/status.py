"""``engine.status`` and the retrieve service's health checks.

- ``engine_status``: the keyword tier, the embedding source and signature (``memory_vec_meta``
  plus a probe of the embed RPC), each vector store's stats and health, memories waiting for
  (re)embedding, fallbacks seen since start, and the lag of the embed/extract durables.
- ``reindex_state``: during a signature change, how far the reindex is and which vectors a store
  searches meanwhile (the old ones, or none when the query vectors cannot be of the old signature).
- ``store_check``: one vector store's health for ``health`` (``ok ...`` or the reason), with the
  reindex state while one runs.
- ``round_trip``: the deep health check: write a memory row for the reserved owner
  ``__health__`` (no client can name it: owners must start with a letter or digit), find
  it by full-text through the engine (``dry_run``), delete it, report the latency.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from nats.js import JetStreamContext

from memoryd.errors import MemorydError
from memoryd.schemas.ops import EngineStatusRequest, EngineStatusResult
from memoryd.schemas.retrieval import RetrieveRequest
from memoryd.subjects import EMBED_CONSUMER, EXTRACT_CONSUMER, JOBS_STREAM
from services.retrieve.adapters import postgres_status
from services.retrieve.adapters.postgres import KEYWORD_TIER_DESCRIPTION, StoreMeta, embed_query
from services.retrieve.logic.plan import store_mismatch
from shared.db import memories
from shared.observability.metrics import QUEUE_LAG
from shared.vectors.port import VectorStore

from .engine import Engine

HEALTH_OWNER = "__health__"


async def engine_status(engine: Engine, js: JetStreamContext, req: EngineStatusRequest) -> EngineStatusResult:
    engine.meta.invalidate()
    meta = await engine.meta.get()
    probe, stores, pending, lag = await asyncio.gather(
        _probe_embed(engine), _stores(engine, meta), _pending(engine, req.owner), _lag(js)
    )
    reindex = await _reindex_states(engine, meta, probe)
    for name, state in reindex.items():
        if name in stores:
            stores[name]["reindex"] = state
    return EngineStatusResult(
        keyword_tier=f"{KEYWORD_TIER_DESCRIPTION}; {engine.keyword_indexes.status()}",
        embedding={
            "probe": probe,
            "stores": {
                name: {"signature": m.signature, "dim": m.dim, "pending_signature": m.pending}
                for name, m in sorted(meta.items())
            },
            "breaker": engine.breakers["embed"].state(time.monotonic()),
            **({"reindex": {name: state["detail"] for name, state in reindex.items()}} if reindex else {}),
        },
        vector_stores=stores,
        pending_reindex=pending,
        fallbacks=dict(sorted(engine.fallbacks.items())),
        lag=lag,
    )


def reindex_state(row: StoreMeta, query: tuple[str, int] | None, done: int, total: int) -> dict[str, Any] | None:
    """What store ``row`` searches while a signature change is pending (None: no change), given
    the signature and dimension of the query vectors (None: the embed service did not answer) and
    the reindex's progress (``done`` of ``total`` memories have a vector of the new signature).
    The decision is the engine's own (``store_mismatch``)."""
    if not row.pending:
        return None
    head = f"reindexing to {row.pending}, {done} of {total}"
    if not row.signature:
        searching, text = "none", f"being filled with {row.pending}, {done} of {total}; searched once complete"
    elif query is None:
        searching, text = "unknown", f"{head}; the embed service did not answer, so no vectors are searched now"
    elif store_mismatch(row.signature, row.pending, row.dim, *query) is None:
        searching, text = "old", f"{head}, searching the old vectors ({row.signature})"
    else:
        searching = "none"
        text = (
            f"{head}; searching no vectors: the old signature's query vectors cannot be made here,"
            " so full-text search serves until the reindex completes"
        )
    return {
        "from": row.signature,
        "to": row.pending,
        "done": done,
        "total": total,
        "searching": searching,
        "detail": text,
    }


async def _reindex_states(
    engine: Engine, meta: dict[str, StoreMeta], probe: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """``reindex_state`` of every store with a pending signature (one progress count per signature)."""
    query = (str(probe["signature"]), int(probe["dim"])) if probe.get("ok") else None
    progress: dict[str, tuple[int, int]] = {}
    out: dict[str, dict[str, Any]] = {}
    for name, row in sorted(meta.items()):
        if not row.pending:
            continue
        if row.pending not in progress:
            progress[row.pending] = await postgres_status.reindex_progress(engine.pool, row.pending)
        state = reindex_state(row, query, *progress[row.pending])
        if state is not None:
            out[name] = state
    return out


async def _probe_embed(engine: Engine) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        result = await embed_query(engine.nc, "memoryd engine status probe", engine.config.embed_timeout_s)
    except MemorydError as exc:
        return {"ok": False, "error": exc.description, "ms": _ms(started)}
    return {"ok": True, "signature": result.signature, "dim": result.dim, "ms": _ms(started)}


async def _stores(engine: Engine, meta: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for store in engine.stores:
        row = meta.get(store.name)
        signature = row.signature if row is not None else None
        entry: dict[str, Any] = {
            "active_signature": signature,
            "breaker": engine.breakers[store.name].state(time.monotonic()),
        }
        if signature:
            try:
                st = await asyncio.wait_for(store.status(signature), engine.config.store_timeout_s)
                entry |= {"healthy": st.healthy, "dim": st.dim, "vectors": st.vectors, "detail": st.detail}
            except Exception as exc:
                entry |= {"healthy": False, "detail": f"{type(exc).__name__}: {exc}"}
        else:
            entry |= {"healthy": None, "detail": "no active signature yet (nothing embedded)"}
        out[store.name] = entry
    return out


async def _pending(engine: Engine, owner: str | None) -> int:
    return await postgres_status.pending_reindex(engine.pool, owner)


async def _lag(js: JetStreamContext) -> dict[str, int]:
    """Unprocessed messages per durable: ``<name>`` (not yet delivered) and ``<name>_ack_pending``."""
    lag: dict[str, int] = {}
    for name in (EXTRACT_CONSUMER, EMBED_CONSUMER):
        try:
            info = await asyncio.wait_for(js.consumer_info(JOBS_STREAM, name), timeout=2)
        except Exception:
            continue  # the consumer does not exist yet (its service never started)
        pending = int(info.num_pending or 0)
        lag[name] = pending
        lag[f"{name}_ack_pending"] = int(info.num_ack_pending or 0)
        QUEUE_LAG.labels(name).set(pending)
    return lag


def store_check(engine: Engine, store: VectorStore) -> Callable[[], Awaitable[str]]:
    async def check() -> str:
        row = (await engine.meta.get()).get(store.name)
        if row is None or not row.signature:
            return "ok (no active signature yet)"
        st = await store.status(row.signature)
        if not st.healthy:
            return f"down: {st.detail or 'unhealthy'}"
        status = f"{st.vectors} vectors ({row.signature})"
        if row.pending:  # degraded while a reindex leaves this store's vectors unsearched
            state = (await _reindex_states(engine, {store.name: row}, await _probe_embed(engine)))[store.name]
            return f"{'ok' if state['searching'] == 'old' else 'degraded:'} {status}; {state['detail']}"
        return f"ok {status}"

    return check


def round_trip(engine: Engine) -> Callable[[], Awaitable[str]]:
    async def check() -> str:
        started = time.perf_counter()
        token = "probe" + uuid.uuid4().hex
        record = await memories.insert(
            engine.pool,
            owner=HEALTH_OWNER,
            memory_type="factual",
            content=f"memoryd health {token}",
            source="api",
            metadata={"health_probe": True},
        )
        try:
            found = await engine.retrieve(
                RetrieveRequest(owner=HEALTH_OWNER, query=token, strategy="hybrid", dry_run=True, limit=5)
            )
        finally:
            async with engine.pool.acquire() as conn:
                await memories.delete(conn, HEALTH_OWNER, [record.id])
        ms = _ms(started)
        if found.disabled_reason:
            return f"ok create->delete {ms} ms; retrieve skipped: {found.disabled_reason}"
        if not any(m.id == record.id for m in found.memories):
            return f"down: round trip did not find its memory ({ms} ms; tiers {found.fallbacks or 'ok'})"
        return f"ok create->retrieve->delete {ms} ms"

    return check


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
