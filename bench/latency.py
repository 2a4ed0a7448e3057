"""``python -m bench latency``: retrieve over NATS against the same engine run in-process.

Data: synthetic chat-like memories (``synth``, fixed seed, sessions of ``SESSION_TURNS``) copied
straight into Postgres under the embed service's active signature, indexed through the pgvector
adapter. Each vector mixes two real embeddings of ``BASE_TEXTS`` plus noise
(``synth.mixed_vectors``), giving the index the geometry of real embeddings; query vectors are
real. Recall: the share of the exact answer's top 10 (``floor.in_process_engine(exact=True)``)
the engine returns. Per scenario, strategy and concurrency: the service path (``retrieve`` RPC
after a warm-up pass, reported as ``cold``) and the floor, the retrieve service's own ``Engine``
in this process (``bench.floor``), so the ratio is what the service adds. CPU per query: CPU-time
deltas of the services, PostgreSQL and nats-server per request, the load generator's apart.
``--keyword-index``: each strategy once per keyword tier (``keywordIndex``, set globally);
``--rows-in-memory``: once per value of ``MEMORYD_RETRIEVE_ROWS_IN_MEMORY`` (the service restarted).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import msgspec
import numpy as np
import numpy.typing as npt
from pgvector import Vector

from bench import floor as floor_module
from bench import synth
from bench.harness import ServiceStack, cpu_delta, wait_until
from bench.locomo import percentile
from bench.report import environment, markdown_table, render_peak_rss
from memoryd.rpc import call
from memoryd.schemas.ops import EngineStatusRequest, EngineStatusResult
from memoryd.schemas.retrieval import EmbedRequest, EmbedResult, RetrieveRequest
from shared.db.memories import content_hash
from shared.db.pool import init_connection
from shared.settings.memory import MemorySettings
from shared.settings.store import put_values
from shared.vectors import pgvector_sql as vsql
from shared.vectors.pgvector import PgVectorStore

STRATEGIES = ("exact", "semantic", "hybrid")
CONCURRENCY = (1, 16, 64)
LIMIT = 10
N_QUESTIONS = 200
N_RECALL = 100  # questions per (scenario, strategy) compared with the exact answer
COPY_CHUNK = 20_000
SESSION_TURNS = 20  # consecutive memories of an owner form a chat session (session/neighbour boosts)
BASE_TEXTS = 2_000  # distinct sentences embedded for real; memory vectors mix them
#: Floor-only probes: each step of a hybrid search alone (``floor.COMPONENTS``).
PROBES = floor_module.COMPONENTS


@dataclass(frozen=True)
class Scenario:
    name: str
    owners: tuple[str, ...]
    per_owner: int


def scenarios(sizes: Sequence[int], owners: int, owner_size: int) -> list[Scenario]:
    out = [Scenario(f"1 owner x {n:,}", (f"lat-{n}",), n) for n in sizes]
    if owners and owner_size:
        out.append(
            Scenario(f"{owners} owners x {owner_size:,}", tuple(f"lat-m{i:03d}" for i in range(owners)), owner_size)
        )
    return out


async def active_signature(pool: asyncpg.Pool, timeout: float = 60.0) -> tuple[str, int]:
    """The pgvector store's active signature, set by the embed service when it starts."""
    found: dict[str, Any] = {}

    async def ready() -> bool:
        row = await pool.fetchrow(
            "SELECT embedding_signature, active_dim FROM memory_vec_meta WHERE store = 'pgvector'"
        )
        if row and row["embedding_signature"] and row["active_dim"]:
            found.update(sig=row["embedding_signature"], dim=row["active_dim"])
            return True
        return False

    await wait_until(ready, timeout, what="an active pgvector signature in memory_vec_meta")
    return str(found["sig"]), int(found["dim"])


async def load(
    dsn: str, plan: Sequence[Scenario], signature: str, base: npt.NDArray[np.float32], seed: int = 7
) -> float:
    """COPY every scenario's memories and vectors, then build the HNSW index in bulk; return seconds.

    The signature's HNSW index (if the embed service made one) is dropped first: inserting
    into it row by row is far slower than building it once. No statement timeout here, and
    ``maintenance_work_mem`` large enough for the graph of 200k+ vectors.
    """
    started = time.perf_counter()
    pool = await asyncpg.create_pool(
        dsn,
        min_size=1,
        max_size=2,
        init=init_connection,
        command_timeout=None,
        server_settings={"maintenance_work_mem": "1GB"},
    )
    try:
        async with pool.acquire() as conn:
            for row in await conn.fetch(vsql.INDEXES_OF, vsql.index_prefix(signature)):
                await conn.execute(f'DROP INDEX IF EXISTS "{row["indexname"]}"')
        await _copy(pool, plan, signature, base, seed)
        store = PgVectorStore(pool)
        await store.ensure(signature, int(base.shape[1]))
        for owner in {o for s in plan for o in s.owners}:  # what the embed service does after writing them
            await store.ensure_owner(signature, owner)
        for table in ("memories", "memory_embeddings"):  # now, not as autovacuum during the measurement
            await pool.execute(f"VACUUM (ANALYZE) {table}")
    finally:
        await pool.close()
    return time.perf_counter() - started


async def _copy(
    pool: asyncpg.Pool, plan: Sequence[Scenario], signature: str, base: npt.NDArray[np.float32], seed: int
) -> None:
    owners = [o for s in plan for o in s.owners for _ in range(s.per_owner)]
    texts = synth.sentences(len(owners), seed)
    now = datetime.now(UTC)
    for start in range(0, len(owners), COPY_CHUNK):
        chunk = owners[start : start + COPY_CHUNK]
        vectors = synth.mixed_vectors(base, len(chunk), seed + start)
        dim = int(base.shape[1])
        mems, vecs = [], []
        for i, owner in enumerate(chunk):
            text = next(texts)
            mid = uuid.uuid4()
            created = now - timedelta(days=300 * (start + i) / max(1, len(owners)), seconds=1)
            mems.append(
                (
                    mid,
                    owner,
                    f"s{(start + i) // SESSION_TURNS}",
                    "episodic",
                    text,
                    "chat_turn",
                    created,
                    created,
                    content_hash(text),
                    signature,
                    False,
                )
            )
            vecs.append((mid, signature, owner, dim, Vector(vectors[i])))
        async with pool.acquire() as conn, conn.transaction():
            await conn.copy_records_to_table(
                "memories",
                records=mems,
                columns=[
                    "id",
                    "owner",
                    "session_id",
                    "type",
                    "content",
                    "source",
                    "created_at",
                    "updated_at",
                    "content_hash",
                    "embedding_signature",
                    "needs_reindex",
                ],
            )
            await conn.copy_records_to_table(
                "memory_embeddings", records=vecs, columns=["memory_id", "signature", "owner", "dim", "embedding"]
            )


@dataclass
class LoadResult:
    latencies_ms: list[float]
    wall_s: float
    errors: int

    @property
    def rps(self) -> float:
        return len(self.latencies_ms) / self.wall_s if self.wall_s else math.nan


async def drive(fn: Callable[[int], Awaitable[Any]], n: int, concurrency: int) -> LoadResult:
    """Run ``fn(0..n-1)`` with ``concurrency`` requests in flight; time each."""
    counter = itertools.count()
    latencies: list[float] = []
    errors = 0

    async def worker() -> None:
        nonlocal errors
        while (i := next(counter)) < n:
            t0 = time.perf_counter()
            try:
                await fn(i)
            except Exception:
                errors += 1
                continue
            latencies.append((time.perf_counter() - t0) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return LoadResult(latencies, time.perf_counter() - started, errors)


class Floor:
    """The retrieve engine in this process (``bench.floor``), one call per search."""

    def __init__(self, engine: Any, module: Any) -> None:
        self.engine = engine
        self.module = module
        self.steps = module.Steps(engine)

    async def run(self, strategy: str, owner: str, query: str) -> int:
        """One search like the service's (``exact``/``semantic``/``hybrid``) or a probe of ``PROBES``."""
        if strategy in PROBES:
            return int(await self.steps.run(strategy, owner, query))
        req = RetrieveRequest(owner=owner, query=query, strategy=strategy, limit=LIMIT)  # type: ignore[arg-type]
        return len((await self.engine.retrieve(req)).memories)


async def embed_texts(nc: Any, texts: Sequence[str], batch: int = 256) -> EmbedResult:
    """Embed ``texts`` through the embed service, ``batch`` at a time (one result, same order)."""
    vectors: list[list[float]] = []
    signature, dim = "", 0
    for start in range(0, len(texts), batch):
        part: EmbedResult = await call(nc, "embed", EmbedRequest(texts=list(texts[start : start + batch])), timeout=600)
        vectors += part.vectors
        signature, dim = part.signature, part.dim
    return EmbedResult(vectors=vectors, signature=signature, dim=dim)


def _summary(res: LoadResult) -> dict[str, Any]:
    lat = res.latencies_ms
    return {
        "n": len(lat),
        "errors": res.errors,
        "p50_ms": round(percentile(lat, 50), 2),
        "p95_ms": round(percentile(lat, 95), 2),
        "p99_ms": round(percentile(lat, 99), 2),
        "rps": round(res.rps, 1),
    }


def _cpu_ms_per_query(delta: dict[str, float], n: int, keys: Sequence[str]) -> float:
    return round(1000 * sum(delta.get(k, 0.0) for k in keys) / max(1, n), 3)


async def run_latency(
    stack: ServiceStack,
    sizes: Sequence[int] = (10_000, 100_000),
    owners: int = 100,
    owner_size: int = 1_000,
    *,
    concurrency: Sequence[int] = CONCURRENCY,
    strategies: Sequence[str] = STRATEGIES,
    requests_per_client: int = 25,
    n_questions: int = N_QUESTIONS,
    probes: bool = True,
    n_base_texts: int = BASE_TEXTS,
    keyword_indexes: Sequence[str] = (),
    rows_in_memory: Sequence[str] = (),
    vectors_in_memory: Sequence[str] = (),
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Load the data, then measure every (scenario, strategy, concurrency) for service and floor."""
    plan = scenarios(sizes, owners, owner_size)
    signature, dim = await active_signature(stack.pool)
    total = sum(len(s.owners) * s.per_owner for s in plan)
    base_texts = list(dict.fromkeys(synth.sentences(n_base_texts, seed=101)))
    log(f"embedding {len(base_texts):,} base sentences for the memory vectors ...")
    base = np.array((await embed_texts(stack.nc, base_texts)).vectors, dtype=np.float32)
    log(f"loading {total:,} memories with {dim}-d vectors mixed from real embeddings under {signature} ...")
    load_s = await load(stack.pg_dsn, plan, signature, base)
    log(f"loaded and indexed in {load_s:.1f} s")
    questions = synth.questions(n_questions)
    distinct = list(dict.fromkeys(questions))
    vectors = dict(zip(distinct, (await embed_texts(stack.nc, distinct)).vectors, strict=True))
    exits = contextlib.AsyncExitStack()
    engine = await exits.enter_async_context(floor_module.in_process_engine(stack.pg_dsn, stack.nc, signature, vectors))
    floor = Floor(engine, floor_module)
    exact_engine = await exits.enter_async_context(
        floor_module.in_process_engine(stack.pg_dsn, stack.nc, signature, vectors, exact=True)
    )
    recall: list[dict[str, Any]] = []
    tier_status: list[dict[str, Any]] = []
    service_keys = [k for k in (*stack.services, "postgres", "nats")]
    rows: list[dict[str, Any]] = []

    async def measure(
        scen: Scenario, strategy: str, path: str, fn: Callable[[int], Awaitable[Any]], n: int, c: int
    ) -> None:
        before = stack.cpu_seconds()
        res = await drive(fn, n, c)
        delta = cpu_delta(before, stack.cpu_seconds())
        keys = service_keys if path.startswith("service") else ["postgres"]
        row = {
            "scenario": scen.name,
            "strategy": strategy,
            "path": path,
            "c": c,
            **_summary(res),
            "cpu_ms_per_query": _cpu_ms_per_query(delta, len(res.latencies_ms), keys),
            "bench_cpu_ms_per_query": _cpu_ms_per_query(delta, len(res.latencies_ms), ["bench"]),
            "cpu_s": delta,
        }
        rows.append(row)
        log(
            f"{scen.name:>18} {strategy:>9} {path:>14} c={c:<3} p50 {row['p50_ms']:7.2f} "
            f"p99 {row['p99_ms']:7.2f} ms {row['rps']:8.1f} req/s cpu {row['cpu_ms_per_query']} ms/q"
        )

    try:
        for scen in plan:

            def owner_of(i: int, scen: Scenario = scen) -> str:
                return scen.owners[i % len(scen.owners)]

            def direct_fn(strategy: str) -> Callable[[int], Awaitable[Any]]:
                return lambda i: floor.run(strategy, owner_of(i), questions[i % len(questions)])

            tiers: list[str | None] = [*keyword_indexes] or [None]
            variants: list[str | None] = [*rows_in_memory] or [None]
            held_vectors: list[str | None] = [*vectors_in_memory] or [None]
            for strategy, tier, rows_variant, vectors_variant in itertools.product(
                strategies, tiers, variants, held_vectors
            ):

                async def service(i: int, strategy: str = strategy) -> None:
                    q = questions[i % len(questions)]
                    req = RetrieveRequest(owner=owner_of(i), query=q, strategy=strategy, limit=LIMIT)  # type: ignore[arg-type]
                    await call(stack.nc, "retrieve", req, timeout=60)

                label = strategy if tier is None else f"{strategy} [{tier}]"
                if tier is not None:
                    await _keyword_tier(stack, tier, engine)
                if rows_variant is not None:
                    label += f" rows {rows_variant}"
                    await _engine_switch(stack, engine, "rows_in_memory", rows_variant)
                if vectors_variant is not None:
                    label += f" vectors {vectors_variant}"
                    await _engine_switch(stack, engine, "vectors_in_memory", vectors_variant)
                direct = direct_fn(strategy)
                await measure(scen, label, "service (cold)", service, len(questions), 1)
                await drive(direct, len(questions), 1)  # warm the floor's statements and buffers
                if tier == "memory":  # the first searches of an owner start its index; wait for them
                    await _indexes_built(stack, engine, scen.owners[0])
                for c in concurrency:
                    n = max(len(questions), requests_per_client * c)
                    await measure(scen, label, "service", service, n, c)
                    await measure(scen, label, "floor", direct, n, c)
                found = await recall_at(engine, exact_engine, scen, strategy, questions[:N_RECALL])
                recall.append({"scenario": scen.name, "strategy": label, "queries": N_RECALL, **found})
                if tier == "memory":
                    tier_status.append({"scenario": scen.name, "strategy": label, **await _tier_counts(stack, scen)})
                    log(f"{scen.name:>18} {label:>9} keyword tier: {tier_status[-1]}")
                log(f"{scen.name:>18} {label:>9} recall@{LIMIT} vs exact {found['recall']:.3f}")
            if probes:
                for probe in PROBES:
                    await drive(direct_fn(probe), len(questions), 1)
                    await measure(scen, probe, "floor probe", direct_fn(probe), len(questions), 1)
    finally:
        await exits.aclose()
    peak_rss = stack.peak_rss_mb()
    return {
        "benchmark": "latency",
        "signature": signature,
        "vectors": f"mixed from real embeddings of {len(base_texts):,} synthetic sentences; realistic synthetic text",
        "memories": total,
        "load_s": round(load_s, 1),
        "limit": LIMIT,
        "rows": rows,
        "recall": recall,
        "keyword_tier": tier_status,
        "peak_rss_mb": peak_rss,
        "ratios": ratios(rows),
        "targets": targets(rows, max(sizes) if sizes else 0),
        "environment": environment(),
    }


async def _keyword_tier(stack: ServiceStack, tier: str, engine: Any) -> None:
    """``keywordIndex`` for every owner, applied once the engines' settings caches let it in."""
    await put_values(stack.pool, None, {"keywordIndex": tier})
    await asyncio.sleep(engine.config.settings_ttl_s + 1)


async def _engine_switch(stack: ServiceStack, engine: Any, name: str, value: str) -> None:
    """The engine setting ``name`` (``MEMORYD_RETRIEVE_<NAME>``) on or off for the retrieve service
    (restarted) and the floor."""
    on, key = value == "on", f"MEMORYD_RETRIEVE_{name.upper()}"
    if stack.env.get(key) != str(on).lower():
        stack.env[key] = str(on).lower()
        await stack.restart("retrieve")
    engine.config = msgspec.structs.replace(engine.config, **{name: on})


async def _tier_counts(stack: ServiceStack, scen: Scenario) -> dict[str, Any]:
    """Who answered the retrieve service's keyword searches so far (``engine.status``), by reason."""
    req = EngineStatusRequest(owner=scen.owners[0])
    status: EngineStatusResult = await call(stack.nc, "engine.status", req, timeout=30)
    return {"status": status.keyword_tier.split("; ", 1)[-1]}


async def _indexes_built(stack: ServiceStack, engine: Any, owner: str, timeout: float = 300.0) -> None:
    """Wait until the service and the floor have no keyword index build under way."""
    await engine.keyword_indexes.settle()

    async def done() -> bool:
        req = EngineStatusRequest(owner=owner)
        status: EngineStatusResult = await call(stack.nc, "engine.status", req, timeout=30)
        return " 0 building" in status.keyword_tier

    await wait_until(done, timeout)


async def recall_at(
    engine: Any, exact: Any, scen: Scenario, strategy: str, questions: Sequence[str]
) -> dict[str, float]:
    """Mean share of the exact engine's top ``LIMIT`` (every keyword match ranked, exact vector
    distances) that the engine returns too; ``exact`` compares with itself (1.0 by definition)."""
    shares = []
    for i, q in enumerate(questions):
        req = RetrieveRequest(owner=scen.owners[i % len(scen.owners)], query=q, strategy=strategy, limit=LIMIT)  # type: ignore[arg-type]
        want = {m.id for m in (await exact.retrieve(req)).memories}
        got = {m.id for m in (await engine.retrieve(req)).memories}
        if want:
            shares.append(len(want & got) / len(want))
    return {"recall": round(float(np.mean(shares)) if shares else math.nan, 3), "answered": len(shares)}


def ratios(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Service throughput / floor throughput per (scenario, strategy, c)."""
    floor = {(r["scenario"], r["strategy"], r["c"]): r for r in rows if r["path"] == "floor"}
    out = []
    for r in rows:
        f = floor.get((r["scenario"], r["strategy"], r["c"]))
        if r["path"] == "service" and f and f["rps"]:
            out.append(
                {
                    "scenario": r["scenario"],
                    "strategy": r["strategy"],
                    "c": r["c"],
                    "throughput_ratio": round(r["rps"] / f["rps"], 3),
                    "p50_overhead_ms": round(r["p50_ms"] - f["p50_ms"], 2),
                }
            )
    return out


#: Hybrid at concurrency 1 in every scenario: p50 and p99 at most these (ms).
TARGET_P50_MS, TARGET_P99_MS = 8.0, 20.0
#: Hybrid service throughput under concurrency at least this share of the floor's.
TARGET_FLOOR_SHARE = 0.8
#: The keyword tier a deployment runs unless ``keywordIndex`` says otherwise.
DEFAULT_KEYWORD_INDEX: str = MemorySettings().keyword_index
#: The neighbour boost's turn positions: the ``rows`` probe's p50 minus ``rows_plain``'s, at most (ms).
TARGET_BOOST_MS = 1.0


def as_default(strategy: str) -> str:
    """A row's strategy as the default keyword tier runs it: ``--keyword-index`` labels each
    strategy with its tier (``hybrid [memory]``), ``DEFAULT_KEYWORD_INDEX``'s rows are the default's."""
    return strategy.removesuffix(f" [{DEFAULT_KEYWORD_INDEX}]")


def targets(rows: Sequence[dict[str, Any]], biggest: int = 0) -> list[dict[str, Any]]:
    """The targets for hybrid in every scenario, on the default keyword tier (``biggest`` is kept
    for callers; unused)."""
    out = []
    by = {(r["scenario"], as_default(r["strategy"]), r["path"], r["c"]): r for r in rows}
    for scen in sorted({r["scenario"] for r in rows}):
        turns, plain = by.get((scen, "rows", "floor probe", 1)), by.get((scen, "rows_plain", "floor probe", 1))
        if turns and plain:
            cost = round(turns["p50_ms"] - plain["p50_ms"], 2)
            out.append(
                {
                    "scenario": scen,
                    "target": f"neighbour boost (turn positions) p50 <= {TARGET_BOOST_MS:g} ms",
                    "value": cost,
                    "ok": cost <= TARGET_BOOST_MS,
                }
            )
        one = by.get((scen, "hybrid", "service", 1))
        if one:
            for key, limit in (("p50_ms", TARGET_P50_MS), ("p99_ms", TARGET_P99_MS)):
                out.append(
                    {
                        "scenario": scen,
                        "target": f"hybrid c=1 {key[:3]} <= {limit:g} ms",
                        "value": one[key],
                        "ok": one[key] <= limit,
                    }
                )
        for c in (16, 64):
            s, f = by.get((scen, "hybrid", "service", c)), by.get((scen, "hybrid", "floor", c))
            if s and f and f["rps"]:
                ratio = round(s["rps"] / f["rps"], 3)
                out.append(
                    {
                        "scenario": scen,
                        "target": f"hybrid c={c} throughput >= {TARGET_FLOOR_SHARE:g}x floor",
                        "value": ratio,
                        "ok": ratio >= TARGET_FLOOR_SHARE,
                    }
                )
    return out


def _recall_and_memory(report: dict[str, Any], recall_rows: list[list[Any]]) -> list[str]:
    """The recall table and the peak-memory line, for reports that hold them."""
    out: list[str] = []
    if recall_rows:
        head = (
            f"Recall@{report['limit']} against the exact answer (every keyword match ranked, exact vector distances):"
        )
        out += [head, "", markdown_table(["scenario", "strategy", "recall", "queries"], recall_rows, digits=3), ""]
    if tiers := report.get("keyword_tier"):
        out += ["What answered the service's keyword searches with `keywordIndex=memory` (counts so far):", ""]
        out += [f"- {t['scenario']}, {t['strategy']}: {t['status']}" for t in tiers] + [""]
    if peaks := report.get("peak_rss_mb"):
        out += [render_peak_rss(peaks), ""]
    return out


def _load_note(report: dict[str, Any]) -> str:
    """The machine's load when the run ended (latencies on a shared machine scale with it)."""
    env = report.get("environment") or {}
    load = env.get("load_average_1m_5m_15m")
    if not load:
        return ""
    return (
        f"; {env.get('cpus', '?')} CPUs, load average (1, 5, 15 min) {', '.join(f'{x:.1f}' for x in load)} at the end"
    )


def render(report: dict[str, Any]) -> str:
    head = [
        "scenario",
        "strategy",
        "path",
        "c",
        "n",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "req/s",
        "CPU ms/query",
        "bench CPU ms/q",
    ]
    rows = [
        [
            r["scenario"],
            r["strategy"],
            r["path"],
            r["c"],
            r["n"],
            r["p50_ms"],
            r["p95_ms"],
            r["p99_ms"],
            r["rps"],
            r.get("cpu_ms_per_query"),
            r.get("bench_cpu_ms_per_query"),
        ]
        for r in report["rows"]
    ]
    ratio_rows = [
        [r["scenario"], r["strategy"], r["c"], r["throughput_ratio"], r["p50_overhead_ms"]] for r in report["ratios"]
    ]
    # read from the rows again: the targets follow the default keyword tier of the code rendering them
    target_rows = [
        [t["scenario"], t["target"], t["value"], "yes" if t["ok"] else "NO"] for t in targets(report["rows"])
    ]
    recall_rows = [[r["scenario"], r["strategy"], r["recall"], r["answered"]] for r in report.get("recall", [])]
    return "\n".join(
        [
            f"Retrieve latency: {report['memories']:,} memories ({report['vectors']}), limit {report['limit']}, "
            f"signature {report['signature']}; floor = the retrieve engine in the benchmark's process; "
            "CPU = service processes + PostgreSQL + nats-server (floor: PostgreSQL), "
            "bench CPU = the benchmark's process (load generator, and the floor's engine)" + _load_note(report),
            "",
            markdown_table(head, rows, digits=2),
            "",
            *_recall_and_memory(report, recall_rows),
            "Service throughput / floor throughput:",
            "",
            markdown_table(["scenario", "strategy", "c", "ratio", "p50 overhead ms"], ratio_rows, digits=2),
            "",
            "Targets:",
            "",
            markdown_table(["scenario", "target", "value", "met"], target_rows, digits=2),
        ]
    )
