"""The keyword tier ranked in the searching process: an ``OwnerIndex``
(``services.retrieve.logic.keyword_index``) built from PostgreSQL's lexemes, the question's
lexemes from one cheap PostgreSQL call.

``read_docs`` reads an owner's visible memories with each ``tsv`` lexeme's number of positions
(what ``ts_rank_cd`` counts), so matching and counts are the statement's. ``question`` turns a
question into its lexemes with ``websearch_to_tsquery`` and ``to_tsvector``; a question whose
query is not a plain OR of those lexemes (a negation or a phrase) is left to the statement.
``measure`` gives ``bench.keyword_pruning`` the index's own costs: build, memory, the question
call, scoring alone, and writes (appends, deletes, compaction).
"""

from __future__ import annotations

import random
import time
import tracemalloc
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from bench import synth
from bench.harness import servers_cpu
from bench.locomo import percentile
from services.retrieve.logic.bm25 import KeywordRanking, cover_of
from services.retrieve.logic.keyword_index import Doc, OwnerIndex
from services.retrieve.logic.lexemes import TS_CONFIG, plain_lexemes

DOCS_SQL = (
    "SELECT m.id, (extract(epoch FROM m.created_at) * 1000000)::int8 AS created_us, u.l, u.c FROM memories m"
    " CROSS JOIN LATERAL (SELECT array_agg(x.lexeme) AS l, array_agg(cardinality(x.positions)) AS c"
    "  FROM unnest(m.tsv) x) u"
    " WHERE m.owner = $1 AND m.scope <> 'global' AND m.state = 'active'"
    " AND (m.expires_at IS NULL OR m.expires_at > now())"
)
QUESTION_SQL = (
    f"SELECT websearch_to_tsquery('{TS_CONFIG}', $1)::text AS q, tsvector_to_array(to_tsvector('{TS_CONFIG}', $1)) AS l"
)


def docs_of(rows: Sequence[Any]) -> list[Doc]:
    return [Doc(r[0], int(r[1]), r[2] or (), r[3] or ()) for r in rows]


async def read_docs(pool: asyncpg.Pool, owner: str) -> list[Doc]:
    """The owner's own visible memories (active, unexpired) with their lexemes and counts."""
    return docs_of(await pool.fetch(DOCS_SQL, owner))


@dataclass(frozen=True)
class Question:
    lexemes: tuple[str, ...]
    plain: bool  # the any-word query is an OR of exactly ``lexemes``


def parse_question(tsquery: str, lexemes: Sequence[str]) -> Question:
    """``tsquery``: ``websearch_to_tsquery`` as text; ``lexemes``: ``to_tsvector``'s of the same
    question. Plain when the query has no negation or phrase and names the same lexemes."""
    return Question(tuple(sorted(set(lexemes))), plain_lexemes(tsquery, lexemes) is not None)


async def question(pool: asyncpg.Pool, text: str) -> Question:
    row = await pool.fetchrow(QUESTION_SQL, text)
    return parse_question(row["q"], row["l"] or ())


def ranking(index: OwnerIndex, q: Question, limit: int) -> KeywordRanking:
    hits, occurrences = index.search(q.lexemes, limit)
    return KeywordRanking([(str(h.id), h.score) for h in hits], cover_of(occurrences))


async def measure(
    pool: asyncpg.Pool, pg_data: Path, owner: str, questions: Sequence[str], rounds: int
) -> tuple[OwnerIndex, dict[str, Any]]:
    """Build the owner's index from PostgreSQL and measure it (CPU split by process)."""
    out: dict[str, Any] = {}
    pg0, py0, t0 = servers_cpu(pg_data, None)["postgres"], time.process_time(), time.perf_counter()
    rows = await pool.fetch(DOCS_SQL, owner)
    pg1, py1, t1 = servers_cpu(pg_data, None)["postgres"], time.process_time(), time.perf_counter()
    docs = docs_of(rows)
    del rows
    py2 = time.process_time()
    index = OwnerIndex(docs)
    py3, t3 = time.process_time(), time.perf_counter()
    tracemalloc.start()  # a second build, traced: tracing slows allocation several times
    before = tracemalloc.get_traced_memory()[0]
    traced = OwnerIndex(docs)
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del traced
    out["build"] = {
        "memories": index.size,
        "postings": len(index.docs),
        "lexemes": len(index.vocab),
        "read_wall_s": t1 - t0,
        "read_pg_cpu_s": pg1 - pg0,
        "read_py_cpu_s": (py1 - py0) + (py2 - py1),  # fetch and decode, then Doc objects
        "index_py_cpu_s": py3 - py2,
        "wall_s": t3 - t0,
        "bytes": {**index.nbytes(), "traced": held},
    }
    # the question's lexemes: one round trip
    pg0, py0 = servers_cpu(pg_data, None)["postgres"], time.process_time()
    parsed = []
    for _ in range(rounds):
        parsed = [await question(pool, q) for q in questions]
    calls = rounds * len(questions)
    out["question_call"] = {
        "pg_cpu_ms": 1000 * (servers_cpu(pg_data, None)["postgres"] - pg0) / calls,
        "py_cpu_ms": 1000 * (time.process_time() - py0) / calls,
        "not_plain": sum(not q.plain for q in parsed),
    }
    out["scoring"] = _scoring(index, parsed, 5 * rounds)
    return index, out


def _scoring(index: OwnerIndex, parsed: Sequence[Question], reps: int) -> dict[str, float]:
    """Python CPU of ``search`` alone per question (mean over ``reps`` passes, p50/p99 of the
    per-question means)."""
    per = [0.0] * len(parsed)
    for _ in range(reps):
        for i, q in enumerate(parsed):
            t = time.process_time()
            index.search(q.lexemes, 10)
            per[i] += time.process_time() - t
    per_ms = [1000 * s / reps for s in per]
    return {"cpu_ms": sum(per_ms) / len(per_ms), "p50_ms": percentile(per_ms, 50), "p99_ms": percentile(per_ms, 99)}


async def measure_writes(pool: asyncpg.Pool, index: OwnerIndex, parsed: Sequence[Question], n: int) -> dict[str, Any]:
    """Python CPU per memory appended and deleted (``n`` each), scoring with that tail and those
    tombstones in place, and compaction (the lexemes of the new memories come from PostgreSQL)."""
    texts = list(synth.sentences(n, 77))
    rows = await pool.fetch(
        "SELECT t.i, u.l, u.c FROM unnest($1::text[]) WITH ORDINALITY t(txt, i) CROSS JOIN LATERAL"
        f" (SELECT array_agg(x.lexeme) AS l, array_agg(cardinality(x.positions)) AS c"
        f"  FROM unnest(to_tsvector('{TS_CONFIG}', t.txt)) x) u ORDER BY t.i",
        texts,
    )
    now_us = int(time.time() * 1_000_000)
    fresh = [Doc(uuid.uuid4(), now_us + i, r["l"] or (), r["c"] or ()) for i, r in enumerate(rows)]
    t = time.process_time()
    for d in fresh:
        index.append(d)
    appended = time.process_time() - t
    rnd = random.Random(5)
    victims = [uuid.UUID(int=(int(index.hi[i]) << 64) | int(index.lo[i])) for i in rnd.sample(range(index.size), n)]
    t = time.process_time()
    for v in victims:
        index.delete(v)
    deleted = time.process_time() - t
    dirty = _scoring(index, parsed, 2)
    t = time.process_time()
    index.compact()
    compacted = time.process_time() - t
    return {
        "n": n,
        "append_us": 1e6 * appended / n,
        "delete_us": 1e6 * deleted / n,
        "scoring_dirty_cpu_ms": dirty["cpu_ms"],
        "compact_ms": 1000 * compacted,
    }


def _mb_per_100k(b: float, memories: int) -> float:
    return b / 1e6 * 100_000 / max(1, memories)


def render(corpora: Sequence[dict[str, Any]]) -> list[str]:
    """The index's own tables (build and memory; per search and per write) and a line per corpus."""
    from bench.report import markdown_table

    have = [c for c in corpora if "inproc" in c]
    if not have:
        return []
    built, costs, lines = [], [], []
    for c in have:
        x, n = c["inproc"], c["memories"]
        b, by = x["build"], x["build"]["bytes"]
        arrays = by["postings"] + by["memories"] + by["scratch"]
        built.append(
            [f"{n:,}", b["postings"], b["lexemes"], b["read_wall_s"], b["read_pg_cpu_s"], b["read_py_cpu_s"],
             b["index_py_cpu_s"], _mb_per_100k(by["postings"], n), _mb_per_100k(by["memories"] + by["scratch"], n),
             _mb_per_100k(arrays, n), _mb_per_100k(by["traced"], n)]
        )  # fmt: skip
        q, s, w = x["question_call"], x["scoring"], x["writes"]
        costs.append(
            [f"{n:,}", q["pg_cpu_ms"], q["py_cpu_ms"], s["p50_ms"], s["cpu_ms"], s["p99_ms"], w["append_us"],
             w["delete_us"], w["scoring_dirty_cpu_ms"], w["compact_ms"], f"{x['fallbacks']}/{c['questions']}"]
        )  # fmt: skip
        d = c["designs"]
        mine, default = d["in-process index"], d["statement (defaults)"]
        total = mine["pg_cpu_ms"] + mine["py_cpu_ms"]
        ref = default["pg_cpu_ms"] + default["py_cpu_ms"]
        lines.append(
            f"{n:,} memories: the in-process index spends {mine['pg_cpu_ms']:.2f} ms of PostgreSQL CPU and"
            f" {mine['py_cpu_ms']:.2f} ms in the searching process per search ({total:.2f} ms, {total / ref:.2f}x"
            f" the statement (defaults)' {ref:.2f} ms) at recall@10 {mine['recall_at_10']:.3f}; its scoring alone"
            f" {s['cpu_ms']:.2f} ms, the question's lexemes {q['pg_cpu_ms'] + q['py_cpu_ms']:.2f} ms."
        )
    return [
        markdown_table(
            [
                "memories",
                "postings",
                "lexemes",
                "read s",
                "read: PG CPU s",
                "read: process CPU s",
                "index build CPU s",
                "MB/100k: postings",
                "per memory + scratch",
                "arrays",
                "traced (all)",
            ],
            built,
            digits=2,
        ),
        markdown_table(
            [
                "memories",
                "question call: PG CPU ms",
                "process CPU ms",
                "scoring CPU ms p50",
                "mean",
                "p99",
                "µs per append",
                "µs per delete",
                "scoring ms, 1k appended + 1k deleted",
                "compaction ms",
                "left to the statement",
            ],
            costs,
            digits=2,
        ),
        *lines,
    ]
