"""``python -m bench keyword-pruning``: the keyword tier's designs side by side in one PostgreSQL.

The latency benchmark's one-owner synthetic corpora (``synth``, same seed, sessions, dates) and its
200 synthetic questions. Per corpus and design: PostgreSQL CPU per search (the server's process
tree, one connection, searches one after another), p50/p99, what the search read, and recall@10
against exact BM25 (the reference statement ranking every match; ties compared as score sets).
Designs: ``exact statement`` (the reference), ``statement (defaults)`` (today's default: matches
pruned by planner statistics, capped), ``postings`` (``keyword_postings``) with each way of
finding its threshold, and ``in-process index`` (``keyword_inproc``): BM25 ranked in this process over
an index of PostgreSQL's lexemes, one PostgreSQL call for the question's lexemes; its CPU is also
counted in this process (the retrieve process's share). Write cost: memories inserted one
statement each and in one COPY, with the postings triggers on and off.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from bench import keyword_inproc as inproc
from bench import keyword_postings as postings
from bench import synth
from bench.harness import proc_cpu, servers_cpu
from bench.latency import SESSION_TURNS
from bench.locomo import percentile
from bench.report import environment, markdown_table
from memoryd.local.postgres import EmbeddedPostgres
from services.retrieve.adapters import postgres as tiers
from services.retrieve.adapters.postgres_stats import read_term_stats
from services.retrieve.logic.bm25 import KeywordRanking
from services.retrieve.logic.coverage import content_words
from services.retrieve.logic.keyword_index import OwnerIndex
from shared.db.memories import content_hash

LIMIT = 10
COPY_CHUNK = 20_000
SEEDS: tuple[postings.Seed, ...] = ("none", "sample", "rarest", "pair")
READ = ("essential", "non_essential", "candidates", "scored", "seeds", "at_threshold")
TRIGGERS = ("memory_postings_insert", "memory_postings_delete", "memory_postings_update")
Search = Callable[[asyncpg.Pool, tiers.Visibility, str], Awaitable[KeywordRanking]]
INPROC = "in-process index"
#: memories appended and deleted to measure the in-process index's write cost
INDEX_WRITES = 1000


async def _load(pool: asyncpg.Pool, owner: str, n: int, seed: int = 7) -> None:
    """The latency benchmark's memories of one owner (its text, sessions and dates), by COPY."""
    texts = synth.sentences(n, seed)
    now = datetime.now(UTC)
    for start in range(0, n, COPY_CHUNK):
        rows = []
        for i in range(start, min(n, start + COPY_CHUNK)):
            text = next(texts)
            created = now - timedelta(days=300 * i / max(1, n), seconds=1)
            rows.append(
                (uuid.uuid4(), owner, f"s{i // SESSION_TURNS}", "episodic", text, "chat_turn", created, created,
                 content_hash(text), False)
            )  # fmt: skip
        await pool.copy_records_to_table(
            "memories",
            records=rows,
            columns=[
                "id", "owner", "session_id", "type", "content", "source", "created_at", "updated_at",
                "content_hash", "needs_reindex",
            ],
        )  # fmt: skip


def design_name(seed: postings.Seed) -> str:
    return "postings, no pruning" if seed == "none" else f"postings, {seed} seed"


def designs(stats: Any, index: OwnerIndex | None = None, fallbacks: list[str] | None = None) -> dict[str, Search]:
    """Each design's search; ``index``: the owner's in-process index (a question that is not a
    plain OR of its lexemes goes to the exact statement and into ``fallbacks``)."""

    async def exact(pool: asyncpg.Pool, vis: tiers.Visibility, q: str) -> KeywordRanking:
        return await tiers.keyword_search(pool, vis, q, LIMIT, None, match_budget=0)

    async def defaults(pool: asyncpg.Pool, vis: tiers.Visibility, q: str) -> KeywordRanking:
        return await tiers.keyword_search(pool, vis, q, LIMIT, 2000, stats=stats, match_budget=1000, widen_below=20)

    def walk(seed: postings.Seed, probe: bool = False) -> Search:
        async def search(pool: asyncpg.Pool, vis: tiers.Visibility, q: str) -> KeywordRanking:
            return await postings.postings_search(
                pool, vis.owner, q, LIMIT, lambda first: tiers._Clauses(vis, first), seed=seed, probe=probe
            )

        return search

    async def in_process(pool: asyncpg.Pool, vis: tiers.Visibility, q: str) -> KeywordRanking:
        assert index is not None
        question = await inproc.question(pool, q)
        if not question.plain:
            if fallbacks is not None:
                fallbacks.append(q)
            return await exact(pool, vis, q)
        return inproc.ranking(index, question, LIMIT)

    return {
        "exact statement": exact,
        "statement (defaults)": defaults,
        **{design_name(seed): walk(seed) for seed in SEEDS},
        "postings, pair seed, probes": walk("pair", probe=True),
        **({INPROC: in_process} if index is not None else {}),
    }


def recall(deeper: Sequence[tuple[str, float]], got: Sequence[tuple[str, float]], k: int = LIMIT) -> float:
    """The share of the exact top ``k`` that ``got`` holds, ties counted: ``deeper`` is the exact
    ranking beyond ``k``, and any memory scoring as much as its ``k``-th counts as a hit."""
    top = deeper[:k]
    if not top:
        return 1.0 if not got else 0.0
    kth = top[-1][1]
    tied = {m for m, s in deeper if s >= kth or math.isclose(s, kth, rel_tol=1e-9)}
    return min(len(top), sum(m in tied for m, _ in got[:k])) / len(top)


async def _matches(pool: asyncpg.Pool, vis: tiers.Visibility, q: str) -> int:
    """Rows the exact statement ranks: the visible memories holding any question word."""
    c = tiers._Clauses(vis, 2)
    return int(
        await pool.fetchval(
            "SELECT count(*) FROM memories m WHERE m.tsv @@ replace(websearch_to_tsquery('english', $1)::text,"
            f" ' & ', ' | ')::tsquery AND (({c.own}) OR ({c.shared})) AND {c.common}",
            q,
            *c.args,
        )
    )


async def _read(pool: asyncpg.Pool, vis: tiers.Visibility, q: str, seed: postings.Seed) -> dict[str, float]:
    clauses = lambda first: tiers._Clauses(vis, first)  # noqa: E731
    st = postings.statement(vis.owner, q, LIMIT, clauses, seed=seed, diagnostic=True)
    row = await pool.fetchrow(st.sql, *st.args)
    return {k: float(row[k] or 0) for k in (*READ, "threshold")}


async def _exact_with_ties(pool: asyncpg.Pool, vis: tiers.Visibility, q: str) -> list[tuple[str, float]]:
    """The exact ranking deep enough to hold every memory tied with the ``LIMIT``-th."""
    depth = 5 * LIMIT
    while True:
        ranked = (await tiers.keyword_search(pool, vis, q, depth, None, match_budget=0)).ranked
        if len(ranked) < depth or ranked[-1][1] < ranked[LIMIT - 1][1] * (1 - 1e-9):
            return ranked
        depth *= 4


async def _timed(
    pool: asyncpg.Pool, pg_data: Path, search: Search, vis: tiers.Visibility, questions: Sequence[str]
) -> tuple[list[float], tuple[float, float, float], list[KeywordRanking]]:
    """Each question searched once: latencies (ms); CPU seconds of PostgreSQL's process tree, of
    the connection's backend and of this process; the answers."""
    out, lat = [], []
    backend = int(await pool.fetchval("SELECT pg_backend_pid()"))
    before, own, here = servers_cpu(pg_data, None)["postgres"], proc_cpu(backend), time.process_time()
    for q in questions:
        t0 = time.perf_counter()
        out.append(await search(pool, vis, q))
        lat.append((time.perf_counter() - t0) * 1000)
    spent = (servers_cpu(pg_data, None)["postgres"] - before, proc_cpu(backend) - own, time.process_time() - here)
    return lat, spent, out


async def _corpus(
    pool: asyncpg.Pool, pg_data: Path, n: int, questions: Sequence[str], rounds: int, log: Callable[[str], None]
) -> dict[str, Any]:
    owner = f"kp-{n}"
    vis = tiers.Visibility(owner, None, None, 3650)
    log(f"{n:,}: in-process index")
    index, measured = await inproc.measure(pool, pg_data, owner, questions, rounds)
    fallbacks: list[str] = []
    by_design = designs(await read_term_stats(pool), index, fallbacks)
    lat: dict[str, list[float]] = {d: [] for d in by_design}
    cpu: dict[str, float] = dict.fromkeys(by_design, 0.0)
    backend: dict[str, float] = dict.fromkeys(by_design, 0.0)
    py: dict[str, float] = dict.fromkeys(by_design, 0.0)
    answers: dict[str, list[KeywordRanking]] = {}
    for search in by_design.values():  # warm-up: plans and caches
        for q in questions:
            await search(pool, vis, q)
    for r in range(rounds):  # designs alternate, so drift in the machine's load hits each alike
        for d, search in by_design.items():
            log(f"{n:,}: round {r + 1}, {d}")
            ms, (spent, own, here), answers[d] = await _timed(pool, pg_data, search, vis, questions)
            lat[d] += ms
            cpu[d] += spent
            backend[d] += own
            py[d] += here
    ref = answers["exact statement"]
    deeper = [await _exact_with_ties(pool, vis, q) for q in questions]
    matches = [await _matches(pool, vis, q) for q in questions]
    out: dict[str, Any] = {"memories": n, "questions": len(questions), "designs": {}}
    for d in by_design:
        rec = [recall(a, b.ranked) for a, b in zip(deeper, answers[d], strict=True)]
        same_ids = sum(a.ranked == b.ranked for a, b in zip(ref, answers[d], strict=True))
        same_cover = sum(
            math.isclose(min(a.cover, 0.1 * max(1, content_words(q))), min(b.cover, 0.1 * max(1, content_words(q))))
            for a, b, q in zip(ref, answers[d], questions, strict=True)
        )
        out["designs"][d] = {
            "pg_cpu_ms": 1000 * cpu[d] / (rounds * len(questions)),
            "backend_cpu_ms": 1000 * backend[d] / (rounds * len(questions)),
            "py_cpu_ms": 1000 * py[d] / (rounds * len(questions)),
            "p50_ms": percentile(lat[d], 50),
            "p99_ms": percentile(lat[d], 99),
            "recall_at_10": sum(rec) / len(rec),
            "exact_top10": sum(x == 1.0 for x in rec),
            "same_ids_in_order": same_ids,
            "same_cover": same_cover,
        }
    out["matches"] = {"p50": percentile(matches, 50), "p90": percentile(matches, 90)}
    log(f"{n:,}: in-process index writes")
    writes = await inproc.measure_writes(pool, index, [await inproc.question(pool, q) for q in questions], INDEX_WRITES)
    out["inproc"] = {**measured, "writes": writes, "fallbacks": len(fallbacks) // (rounds + 1)}
    out["read"] = {}
    for seed in SEEDS:
        read = [await _read(pool, vis, q, seed) for q in questions]
        out["read"][seed] = {
            **{f"{k}_p50": percentile([x[k] for x in read], 50) for k in READ},
            **{f"{k}_p90": percentile([x[k] for x in read], 90) for k in READ},
            "no_threshold": sum(x["threshold"] == 0 for x in read),
        }
    return out


async def _write_cost(pool: asyncpg.Pool, n: int, bulk: int) -> dict[str, Any]:
    """CPU of the connection's backend (where the triggers run) per memory inserted (one INSERT
    each, then ``bulk`` in one COPY) and deleted, with the postings triggers on and off
    (alternating, twice each); the rows are removed again."""
    backend = int(await pool.fetchval("SELECT pg_backend_pid()"))
    texts = list(synth.sentences(n + bulk, 99))
    spent: dict[str, float] = {}
    for on in (True, False, True, False):
        key = "on" if on else "off"
        for t in TRIGGERS:
            await pool.execute(f"ALTER TABLE memories {'ENABLE' if on else 'DISABLE'} TRIGGER {t}")
        owner = f"kp-write-{uuid.uuid4().hex[:6]}"
        before = proc_cpu(backend)
        for text in texts[:n]:
            await pool.execute(
                "INSERT INTO memories (id, owner, type, content, source, content_hash)"
                " VALUES ($1, $2, 'factual', $3, 'api', $4)",
                uuid.uuid4(), owner, text, content_hash(text),
            )  # fmt: skip
        middle = proc_cpu(backend)
        rows = [(uuid.uuid4(), owner, "factual", t, "api", content_hash(t)) for t in texts[n:]]
        await pool.copy_records_to_table(
            "memories", records=rows, columns=["id", "owner", "type", "content", "source", "content_hash"]
        )
        copied = proc_cpu(backend)
        await pool.execute("DELETE FROM memories WHERE owner = $1", owner)
        deleted = proc_cpu(backend)
        for name, seconds in (("insert", middle - before), ("copy", copied - middle), ("delete", deleted - copied)):
            spent[f"{name}_{key}"] = spent.get(f"{name}_{key}", 0.0) + seconds
    out: dict[str, Any] = {"single_inserts": n, "bulk_rows": bulk}
    for key in ("on", "off"):
        out[f"insert_ms_{key}"] = 1000 * spent[f"insert_{key}"] / (2 * n)
        out[f"copy_ms_per_1k_{key}"] = 1000 * spent[f"copy_{key}"] / (2 * bulk / 1000)
        out[f"delete_ms_per_1k_{key}"] = 1000 * spent[f"delete_{key}"] / (2 * (n + bulk) / 1000)
    for t in TRIGGERS:
        await pool.execute(f"ALTER TABLE memories ENABLE TRIGGER {t}")
    return out


async def run_keyword_pruning(
    sizes: Sequence[int], n_questions: int, rounds: int, write_n: int, log: Callable[[str], None]
) -> dict[str, Any]:
    from memoryd.local.up import apply_migrations, ensure_database

    questions = synth.questions(n_questions)
    with tempfile.TemporaryDirectory(prefix="memoryd-kp-") as tmp, contextlib.ExitStack() as cleanup:
        server = EmbeddedPostgres(Path(tmp) / "pg")
        admin = server.start(fsync=False)
        cleanup.callback(server.stop)
        await ensure_database(admin, "memoryd")
        dsn = server.dsn("memoryd")
        await apply_migrations(dsn)
        pool = await asyncpg.create_pool(dsn, min_size=1, max_size=1, command_timeout=None)
        try:
            await postings.install(pool)
            report: dict[str, Any] = {"environment": environment(), "limit": LIMIT, "rounds": rounds, "corpora": []}
            for n in sizes:
                log(f"loading {n:,} memories")
                t0 = time.perf_counter()
                await _load(pool, f"kp-{n}", n)
                log(f"loaded in {time.perf_counter() - t0:.1f} s")
            for table in ("memories", "memory_postings", "memory_lexeme_df", "memory_owner_docs"):
                await pool.execute(f"VACUUM (ANALYZE) {table}")
            for n in sizes:
                report["corpora"].append(await _corpus(pool, server.pgdata, n, questions, rounds, log))
            if write_n:
                log("write cost")
                report["write"] = await _write_cost(pool, write_n, 10 * write_n)
            return report
        finally:
            await pool.close()


def verdict(corpus: dict[str, Any]) -> str:
    """One line per corpus: the cheapest postings design's PostgreSQL CPU against each statement's."""
    designs = corpus["designs"]
    pruned = [*(design_name(seed) for seed in SEEDS if seed != "none"), "postings, pair seed, probes"]
    best = min((d for d in pruned if d in designs), key=lambda d: designs[d]["pg_cpu_ms"])
    cpu = designs[best]["pg_cpu_ms"]
    against = ", ".join(
        f"{cpu / designs[d]['pg_cpu_ms']:.2f}x the {d}'s" if designs[d]["pg_cpu_ms"] else f"the {d}: —"
        for d in ("exact statement", "statement (defaults)")
        if d in designs
    )
    return (
        f"{corpus['memories']:,} memories: the cheapest pruned design, {best}, spends {cpu:.2f} ms of PostgreSQL"
        f" CPU per search ({against}) at recall@10 {designs[best]['recall_at_10']:.3f}."
    )


def render(report: dict[str, Any]) -> str:
    rows = []
    for c in report["corpora"]:
        for d, r in c["designs"].items():
            rows.append(
                [f"{c['memories']:,}", d, r["pg_cpu_ms"], r["backend_cpu_ms"], r["py_cpu_ms"],
                 r["pg_cpu_ms"] + r["py_cpu_ms"], r["p50_ms"], r["p99_ms"], r["recall_at_10"],
                 f"{r['exact_top10']}/{c['questions']}", f"{r['same_cover']}/{c['questions']}"]
            )  # fmt: skip
    parts = [
        markdown_table(
            [
                "memories",
                "design",
                "PG CPU ms/search",
                "backend CPU ms",
                "bench process CPU ms",
                "PG + process CPU ms",
                "p50 ms",
                "p99 ms",
                "recall@10 vs exact",
                "exact top 10",
                "same cover",
            ],
            rows,
            digits=2,
        )
    ]
    read = [
        [f"{c['memories']:,}", seed, c["matches"]["p50"], c["matches"]["p90"], r["seeds_p50"], r["essential_p50"],
         r["essential_p90"], r["non_essential_p50"], r["scored_p50"], r["scored_p90"], r["at_threshold_p50"],
         r["at_threshold_p90"], r["no_threshold"]]
        for c in report["corpora"] for seed, r in c["read"].items()
    ]  # fmt: skip
    parts.append(
        markdown_table(
            [
                "memories",
                "seed",
                "matches p50",
                "p90",
                "seed memories p50",
                "postings read p50",
                "p90",
                "commonest words' postings p50",
                "fully scored p50",
                "p90",
                "at the threshold p50",
                "p90",
                "no threshold (read all)",
            ],
            read,
            digits=0,
        )
    )
    if w := report.get("write"):
        parts.append(
            markdown_table(
                ["backend CPU, triggers", "ms per INSERT", "ms per 1k rows by COPY", "ms per 1k rows deleted"],
                [[k, w[f"insert_ms_{k}"], w[f"copy_ms_per_1k_{k}"], w[f"delete_ms_per_1k_{k}"]] for k in ("on", "off")],
                digits=2,
            )
        )
    parts += inproc.render(report["corpora"])
    parts += [verdict(c) for c in report["corpora"]]
    env = report["environment"]
    parts.append(
        f"{report['rounds']} rounds of {report['corpora'][0]['questions'] if report['corpora'] else 0} questions per"
        f" design, one connection; PG CPU is PostgreSQL's process tree (parallel workers and background"
        f" processes included), backend CPU the connection's own, bench process CPU this Python process's"
        f" (asyncpg's decoding, and the in-process index's scoring); {env['cpus']} CPUs shared, load"
        f" {env['load_average_1m_5m_15m']}: compare designs within a run."
    )
    return "\n\n".join(parts) + "\n"
