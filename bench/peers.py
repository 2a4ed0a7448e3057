"""``python -m bench peers``: memoryd and mem0 side by side, same corpus, same queries, one run.

Corpus and questions: the latency benchmark's synthetic ones (``synth``), one owner per size, the
same texts in the same order for both engines. memoryd: ``memory.create`` then hybrid
``retrieve`` over NATS against service processes (``ServiceStack``); mem0: ``bench.peers_mem0``.
Per size: **add-to-searchable** (memoryd until every memory has its vector, mem0 until the last
``add`` returns), a **cold** pass (each question once, memoryd embedding the query), then per
concurrency both engines in turn, alternating who goes first, and the **hit rate** of
keyword-style queries made from a memory's own words (``keyword_query``). Ratios are memoryd /
mem0 in one run; CPU per query and per added memory counts memoryd's services, PostgreSQL and
nats-server against mem0's process (the benchmark's) and PostgreSQL, split by process; the add
phase also reports the share of the cores kept busy and memoryd's time in the pipeline per memory
(row committed to vector written).
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg

from bench import synth
from bench.harness import ServiceStack, cpu_delta, wait_until
from bench.latency import drive
from bench.paraphrase_data import STOPWORDS
from bench.peers_mem0 import DATABASE, UNROUTABLE_URL, Mem0Peer, database_dsn, installed_version
from bench.report import environment, markdown_table
from memoryd.client import MemoryClient
from memoryd.rpc import call
from memoryd.schemas.ops import EngineStatusRequest, EngineStatusResult
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult

ENGINES = ("memoryd", "mem0")
LIMIT = 10
SESSION_TURNS = 20
KEYWORDS = 5  # words of a keyword-style query
#: memoryd / mem0 targets: (key, comparison, bound)
TARGETS = (
    ("search_p50_ms", "<=", 0.6),
    ("search_p99_ms", "<=", 1.0),
    ("cold_p50_ms", "<=", 0.8),
    ("qps_c16", ">=", 2.0),
    ("add_to_searchable_per_s", ">=", 1.5),
    ("hit_rate", ">=", 1.2),
)
#: memoryd's CPU per hybrid search at c=1 (all its processes, query vector cached): (up to this
#: many memories, at most this many ms); the last bound holds for any larger owner
CPU_TARGETS_MS = ((10_000, 4.0), (100_000, 5.0))
MEMORYD_KEYS = ("ingest", "embed", "retrieve", "postgres", "nats")
MEM0_KEYS = ("bench", "postgres")


def keyword_query(text: str, seed: int) -> str:
    """A keyword-style query from a memory's own words: up to ``KEYWORDS`` content words of its
    first sentence (no stopwords, no numbers), in their order."""
    first = re.split(r"(?<=[.;])\s", text, maxsplit=1)[0]
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]*", first) if w.lower() not in STOPWORDS]
    if len(words) > KEYWORDS:
        keep = sorted(random.Random(seed).sample(range(len(words)), KEYWORDS))
        words = [words[i] for i in keep]
    return " ".join(words)


def sources(n_memories: int, n_queries: int) -> list[int]:
    """Indices of the memories the hit-rate queries are written from, spread evenly."""
    n = min(n_memories, n_queries)
    return sorted({i * n_memories // n for i in range(n)})


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def compare(memoryd: dict[str, Any], mem0: dict[str, Any]) -> dict[str, float | None]:
    """memoryd / mem0 for every figure both have."""
    return {k: ratio(memoryd[k], mem0.get(k)) for k in memoryd if isinstance(memoryd[k], int | float)}


def targets(ratios: dict[str, float | None], memories: int = 0, cpu_ms: float | None = None) -> list[dict[str, Any]]:
    """The ratio targets, and memoryd's CPU per search at c=1 (``cpu_ms``) against the bound for
    ``memories`` when given."""
    out = []
    for key, op, bound in TARGETS:
        value = ratios.get(key)
        ok = value is not None and (value <= bound if op == "<=" else value >= bound)
        out.append({"target": f"memoryd/mem0 {key} {op} {bound:g}", "value": value, "ok": ok})
    if cpu_ms is not None:
        limit = next((ms for n, ms in CPU_TARGETS_MS if memories <= n), CPU_TARGETS_MS[-1][1])
        out.append({"target": f"memoryd CPU ms per search, c=1 <= {limit:g}", "value": cpu_ms, "ok": cpu_ms <= limit})
    return out


class Engines:
    """Both engines' add and search, as async calls for ``latency.drive``."""

    def __init__(self, stack: ServiceStack, peer: Mem0Peer, threads: int) -> None:
        self.stack = stack
        self.client = MemoryClient(stack.nc, timeout=120)
        self.peer = peer
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="mem0")

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    async def _mem0(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    async def add(self, engine: str, owner: str, i: int, text: str) -> None:
        if engine == "memoryd":
            await self.client.create(owner, text, memory_type="episodic", session_id=f"s{i // SESSION_TURNS}")
        else:
            await self._mem0(self.peer.add, owner, text)

    async def search(self, engine: str, owner: str, query: str) -> list[str]:
        if engine == "memoryd":
            req = RetrieveRequest(owner=owner, query=query, strategy="hybrid", limit=LIMIT)
            res: RetrieveResult = await call(self.stack.nc, "retrieve", req, timeout=60)
            return [m.content for m in res.memories]
        return list(await self._mem0(self.peer.search, owner, query, LIMIT))


def _summary(res: Any, cpu: dict[str, float], keys: Sequence[str]) -> dict[str, Any]:
    from bench.locomo import percentile

    lat = res.latencies_ms
    n = max(1, len(lat))
    return {
        "n": len(lat),
        "errors": res.errors,
        "p50_ms": round(percentile(lat, 50), 2),
        "p99_ms": round(percentile(lat, 99), 2),
        "qps": round(res.rps, 1),
        "cpu_ms_per_query": round(1000 * sum(cpu.get(k, 0.0) for k in keys) / n, 2),
        "cpu_ms_per_query_by_process": {k: round(1000 * cpu.get(k, 0.0) / n, 2) for k in keys if k in cpu},
    }


async def _timed(
    stack: ServiceStack, engine: str, fn: Callable[[int], Awaitable[Any]], n: int, c: int
) -> dict[str, Any]:
    before = stack.cpu_seconds()
    res = await drive(fn, n, c)
    return _summary(res, cpu_delta(before, stack.cpu_seconds()), MEMORYD_KEYS if engine == "memoryd" else MEM0_KEYS)


async def add_all(
    eng: Engines, engine: str, owner: str, texts: Sequence[str], c: int, timeout: float
) -> dict[str, Any]:
    """Add every text with ``c`` in flight; time until all are searchable."""
    before = eng.stack.cpu_seconds()
    started = time.perf_counter()
    res = await drive(lambda i: eng.add(engine, owner, i, texts[i]), len(texts), c)
    acked_s = time.perf_counter() - started
    if res.errors:
        raise RuntimeError(f"{engine}: {res.errors} of {len(texts)} adds failed")

    async def searchable() -> bool:
        if engine == "mem0":
            return await eng._mem0(eng.peer.count) >= len(texts)
        n = await eng.stack.pool.fetchval(
            "SELECT count(*) FROM memories m JOIN memory_embeddings e ON e.memory_id = m.id"
            " WHERE m.owner = $1 AND NOT m.needs_reindex AND m.state = 'active'",
            owner,
        )
        return bool(n >= len(texts))

    await wait_until(searchable, timeout, interval=0.2, what=f"{engine}: all {len(texts):,} memories searchable")
    total_s = time.perf_counter() - started
    cpu = cpu_delta(before, eng.stack.cpu_seconds())
    keys = MEMORYD_KEYS if engine == "memoryd" else MEM0_KEYS
    n = len(texts)
    out: dict[str, Any] = {
        "memories": n,
        "acked_per_s": round(n / acked_s, 1),
        "add_to_searchable_s": round(total_s, 1),
        "add_to_searchable_per_s": round(n / total_s, 1),
        "cpu_ms_per_memory": round(1000 * sum(cpu.get(k, 0.0) for k in keys) / n, 2),
        "cpu_ms_per_memory_by_process": {k: round(1000 * cpu[k] / n, 2) for k in keys if k in cpu},
        # share of the machine's cores the engine's processes kept busy from the first add to searchable
        "cpu_used_of_cores": round(sum(cpu.get(k, 0.0) for k in keys) / total_s / (os.cpu_count() or 1), 3),
    }
    if engine == "memoryd":
        out["stored_to_embedded_s"] = await stored_to_embedded(eng.stack.pool, owner)
    return out


async def stored_to_embedded(pool: asyncpg.Pool, owner: str) -> dict[str, float]:
    """Time in the pipeline per memory, from its row's commit time to its vector's, p50/p90/p99 (s)."""
    row = await pool.fetchrow(
        "SELECT percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP"
        " (ORDER BY extract(epoch FROM e.created_at - m.created_at)) AS p"
        " FROM memories m JOIN memory_embeddings e ON e.memory_id = m.id WHERE m.owner = $1",
        owner,
    )
    p = [float(x) for x in row["p"]] if row is not None and row["p"] is not None else [0.0, 0.0, 0.0]
    return {"p50": round(p[0], 2), "p90": round(p[1], 2), "p99": round(p[2], 2)}


async def hit_rate(eng: Engines, engine: str, owner: str, texts: Sequence[str], indices: Sequence[int]) -> float:
    hits = 0
    for i in indices:
        got = await eng.search(engine, owner, keyword_query(texts[i], seed=i))
        hits += texts[i] in got
    return round(hits / max(1, len(indices)), 3)


async def run_size(
    eng: Engines,
    size: int,
    *,
    questions: Sequence[str],
    concurrency: Sequence[int],
    add_concurrency: int,
    requests_per_client: int,
    hit_queries: int,
    log: Callable[[str], None],
) -> dict[str, Any]:
    owner = f"peers-{size}"
    texts = list(synth.sentences(size, seed=7))
    per: dict[str, dict[str, Any]] = {e: {} for e in ENGINES}
    rows: list[dict[str, Any]] = []
    for engine in ENGINES:
        log(f"{engine}: adding {size:,} memories, {add_concurrency} in flight ...")
        per[engine]["add"] = await add_all(eng, engine, owner, texts, add_concurrency, timeout=max(600.0, size / 5))
        log(f"{engine}: {per[engine]['add']}")
    distinct = list(dict.fromkeys(questions))
    levels: list[tuple[str | int, int]] = [("cold", 1), *((c, c) for c in concurrency)]
    for turn, (c, level) in enumerate(levels):
        for engine in ENGINES if turn % 2 == 0 else ENGINES[::-1]:  # alternate who goes first
            qs = distinct if c == "cold" else questions
            n = len(qs) if c == "cold" else max(len(qs), requests_per_client * level)

            def fn(i: int, engine: str = engine, qs: Sequence[str] = qs) -> Awaitable[list[str]]:
                return eng.search(engine, owner, qs[i % len(qs)])

            row = {"engine": engine, "c": c, **await _timed(eng.stack, engine, fn, n, level)}
            rows.append(row)
            log(f"{engine:>8} c={c!s:<4} p50 {row['p50_ms']:7.2f} p99 {row['p99_ms']:7.2f} ms {row['qps']:7.1f} q/s")
    indices = sources(size, hit_queries)
    for engine in ENGINES:
        per[engine]["hit_rate"] = await hit_rate(eng, engine, owner, texts, indices)
        log(f"{engine}: hit rate {per[engine]['hit_rate']} over {len(indices)} keyword queries")
    figures = {e: _figures(per[e], rows, e, concurrency) for e in ENGINES}
    ratios = compare(figures["memoryd"], figures["mem0"])
    status: EngineStatusResult = await call(eng.stack.nc, "engine.status", EngineStatusRequest(owner=owner), timeout=30)
    return {
        "memories": size,
        # which keyword tier answered memoryd's searches (the default's), by reason
        "memoryd_keyword_tier": status.keyword_tier.split("; ", 1)[-1],
        "add": {e: per[e]["add"] for e in ENGINES},
        "rows": rows,
        "hit_queries": len(indices),
        "figures": figures,
        "ratios": ratios,
        "targets": targets(ratios, size, _cpu_c1(rows, "memoryd")),
    }


def _cpu_c1(rows: Sequence[dict[str, Any]], engine: str) -> float | None:
    return next((r["cpu_ms_per_query"] for r in rows if r["engine"] == engine and r["c"] == 1), None)


def _figures(per: dict[str, Any], rows: Sequence[dict[str, Any]], engine: str, levels: Sequence[int]) -> dict[str, Any]:
    by = {r["c"]: r for r in rows if r["engine"] == engine}
    out: dict[str, Any] = {"add_to_searchable_per_s": per["add"]["add_to_searchable_per_s"]}
    if 1 in by:
        out |= {"search_p50_ms": by[1]["p50_ms"], "search_p99_ms": by[1]["p99_ms"]}
    out["cold_p50_ms"] = by["cold"]["p50_ms"]
    out |= {f"qps_c{c}": by[c]["qps"] for c in levels if c in by}
    out["hit_rate"] = per["hit_rate"]
    return out


async def run_peers(
    stack: ServiceStack,
    peer_factory: Callable[[str, int], Mem0Peer],
    sizes: Sequence[int] = (10_000,),
    *,
    concurrency: Sequence[int] = (1, 16),
    add_concurrency: int = 16,
    n_questions: int = 200,
    requests_per_client: int = 25,
    hit_queries: int = 200,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Both engines at each size; ``peer_factory(collection, threads)`` opens mem0."""
    threads = max(add_concurrency, *concurrency)
    questions = synth.questions(n_questions)
    started_env = environment()
    results = []
    for size in sizes:
        peer = peer_factory(f"peers_{size}", threads)
        eng = Engines(stack, peer, threads)
        try:
            results.append(
                await run_size(
                    eng,
                    size,
                    questions=questions,
                    concurrency=concurrency,
                    add_concurrency=add_concurrency,
                    requests_per_client=requests_per_client,
                    hit_queries=hit_queries,
                    log=log,
                )
            )
        finally:
            eng.close()
            llm_calls, embedded = peer.llm_calls, peer.embedder.texts
            peer.close()
        results[-1]["mem0_llm_calls"] = llm_calls
        results[-1]["mem0_texts_embedded"] = embedded
    return {
        "benchmark": "peers",
        "mem0_version": installed_version(),
        "mem0_llm_url": UNROUTABLE_URL,
        "limit": LIMIT,
        "questions": n_questions,
        "add_concurrency": add_concurrency,
        "sizes": results,
        "peak_rss_mb": stack.peak_rss_mb(),
        "environment_at_start": started_env,
        "environment": environment(),
    }


def _by(row: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in row.get("cpu_ms_per_query_by_process", {}).items())


def _add_lines(add: dict[str, dict[str, Any]]) -> list[str]:
    """One line per engine: CPU per added memory by process, cores kept busy, time in the pipeline."""
    lines = []
    for engine, a in add.items():
        if "cpu_ms_per_memory_by_process" not in a:
            continue
        by = ", ".join(f"{k} {v:.2f}" for k, v in a["cpu_ms_per_memory_by_process"].items())
        cores = f"{a['cpu_used_of_cores']:.0%} of the cores"
        line = f"- {engine} add: {a['cpu_ms_per_memory']:.2f} ms CPU per memory ({by}), {cores}"
        if "stored_to_embedded_s" in a:
            p = a["stored_to_embedded_s"]
            line += f"; stored to embedded p50 {p['p50']} s, p99 {p['p99']} s"
        lines.append(line)
    return [*lines, ""] if lines else []


def render(report: dict[str, Any]) -> str:
    env0, env1 = report["environment_at_start"], report["environment"]
    out = [
        f"memoryd against mem0 {report['mem0_version']} (add(infer=False) + search, pgvector, the same MiniLM), "
        f"same synthetic corpus and {report['questions']} questions, limit {report['limit']}, "
        f"{report['add_concurrency']} adds in flight; load average (1/5/15 min) "
        f"{'/'.join(map(str, env0['load_average_1m_5m_15m']))} at the start, "
        f"{'/'.join(map(str, env1['load_average_1m_5m_15m']))} at the end, {env1['cpus']} CPUs",
        "",
    ]
    for res in report["sizes"]:
        f = res["figures"]
        keys = list(f["memoryd"])
        table = [[k, f["memoryd"][k], f["mem0"].get(k), res["ratios"].get(k)] for k in keys]
        out += [
            f"**{res['memories']:,} memories of one owner** (hit rate over {res['hit_queries']} keyword queries; "
            f"mem0 LLM calls: {res['mem0_llm_calls']}):",
            "",
            *([f"memoryd's keyword tier: {res['memoryd_keyword_tier']}.", ""] if "memoryd_keyword_tier" in res else []),
            *_add_lines(res.get("add", {})),
            markdown_table(["figure", "memoryd", "mem0", "memoryd / mem0"], table, digits=3),
            "",
            markdown_table(
                ["engine", "c", "n", "p50 ms", "p99 ms", "queries/s", "CPU ms/query", "by process"],
                [
                    [r["engine"], r["c"], r["n"], r["p50_ms"], r["p99_ms"], r["qps"], r["cpu_ms_per_query"], _by(r)]
                    for r in res["rows"]
                ],
                digits=2,
            ),
            "",
            markdown_table(
                ["target", "value", "met"],
                [[t["target"], t["value"], "yes" if t["ok"] else "NO"] for t in res["targets"]],
                digits=3,
            ),
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


async def mem0_factory(stack: ServiceStack, workdir: Path, database: str = DATABASE) -> Callable[[str, int], Mem0Peer]:
    """Create mem0's database next to memoryd's (same server); return ``run_peers``'s factory."""
    from memoryd.local.up import ensure_database
    from services.embed.adapters import LocalEmbedder

    await ensure_database(stack.pg_dsn, database)
    dsn = database_dsn(stack.pg_dsn, database)

    def factory(collection: str, threads: int) -> Mem0Peer:
        embedder = LocalEmbedder.default()
        return Mem0Peer.open(dsn, workdir, collection=collection, maxconn=threads, embedder=embedder)

    return factory
