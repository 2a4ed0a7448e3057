"""Retrieval-engine study on LoCoMo: what would changes the service does not expose yet give?

Runs the quality benchmark (``shared.bench.quality``: the real services, every built-in
variant given) and then, on the same ingested data, an in-process study: it fetches deep
ranked lists once per question straight from Postgres (full-text with the service's
``websearch_to_tsquery`` AND query, and with an OR of the same lexemes; pgvector through the
same ``PgVectorStore`` with the embed service's query vectors) and re-ranks them offline with
the retrieve service's own pure functions (``rrf_fuse``, ``score_fuse``, ``session_boost``,
``neighbour_boost``), so every number is a candidate engine change measured on the same data.
The neighbour boost uses each turn's real position in its session (the ingest service records
the position in the *event*, which is 0 for one-turn events).

    .venv/bin/python scripts/locomo_study.py [--data PATH] [--json OUT] [--lists CACHE] [--variant NAME ...]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from services.retrieve.logic import Fused, neighbour_boost, rrf_fuse, score_fuse, session_boost
from shared.bench import locomo, quality
from shared.bench.harness import ServiceStack, embedded_servers
from shared.bench.report import markdown_table, write_json
from shared.bus.rpc_client import call
from shared.schemas.retrieval import EmbedRequest, EmbedResult
from shared.vectors.pgvector import PgVectorStore
from shared.vectors.port import VectorQuery

DEPTH = 200  # candidates fetched per list
RETENTION = "m.created_at > now() - interval '365 days'"
FTS = {
    # the service's tier 0
    "and_cd": "websearch_to_tsquery('english', $1)",
    # the same lexemes OR-ed (a question's words need not all be in one turn)
    "or_cd": (
        "coalesce(nullif(replace(websearch_to_tsquery('english', $1)::text, ' & ', ' | '), '')::tsquery, ''::tsquery)"
    ),
}
RANKERS = {"cd": "ts_rank_cd(m.tsv, q.q)", "cd1": "ts_rank_cd(m.tsv, q.q, 1)", "rank": "ts_rank(m.tsv, q.q)"}


def fts_sql(query_expr: str, rank_expr: str) -> str:
    return (
        f"SELECT m.id, {rank_expr} AS score FROM memories m, {query_expr} AS q(q)"
        f" WHERE m.tsv @@ q.q AND m.owner = $2 AND m.state = 'active' AND {RETENTION}"
        " ORDER BY score DESC, m.created_at DESC, m.id LIMIT $3"
    )


Lists = dict[str, list[tuple[str, float]]]


async def fetch_lists(stack: ServiceStack, convs: Sequence[locomo.Conversation]) -> list[tuple[locomo.QA, Lists]]:
    pool = stack.pool
    sig = await pool.fetchval("SELECT embedding_signature FROM memory_vec_meta WHERE store = 'pgvector'")
    store = PgVectorStore(pool)
    pairs = [(c, qa) for c in convs for qa in c.qas]
    vectors: list[list[float]] = []
    for start in range(0, len(pairs), 128):
        batch = [qa.question for _c, qa in pairs[start : start + 128]]
        res: EmbedResult = await call(stack.nc, "embed", EmbedRequest(texts=batch), timeout=120)
        vectors += res.vectors
    bm25 = await bm25_lists(stack, convs, pairs)
    out = []
    for i, ((conv, qa), vec) in enumerate(zip(pairs, vectors, strict=True)):
        owner = quality.owner_of(conv)
        lists: Lists = {}
        for qname, qexpr in FTS.items():
            for rname, rexpr in RANKERS.items():
                if qname == "and_cd" and rname != "cd":
                    continue
                rows = await pool.fetch(fts_sql(qexpr, rexpr), qa.question, owner, DEPTH)
                lists[f"{qname.split('_')[0]}_{rname}"] = [(str(r["id"]), float(r["score"])) for r in rows]
        hits = await store.search(sig, VectorQuery(owner=owner, vector=vec, limit=DEPTH))
        lists["vec"] = [(h.memory_id, h.score) for h in hits]
        for name, ranked in bm25[i].items():
            lists[name] = ranked
        out.append((qa, lists))
    return out


BM25_PARAMS = {"bm25": (1.2, 0.75), "bm25_low": (0.4, 0.1), "bm25_mid": (0.9, 0.4)}


async def bm25_lists(
    stack: ServiceStack, convs: Sequence[locomo.Conversation], pairs: Sequence[tuple[locomo.Conversation, locomo.QA]]
) -> list[dict[str, list[tuple[str, float]]]]:
    """BM25 over each owner's memories with Postgres' own english lexemes (stemmed, no stop words)."""
    docs: dict[str, dict[str, dict[str, int]]] = {}  # owner -> id -> lexeme -> tf
    for conv in convs:
        owner = quality.owner_of(conv)
        rows = await stack.pool.fetch(
            "SELECT m.id, l.lexeme, coalesce(array_length(l.positions, 1), 1) AS tf FROM memories m,"
            f" unnest(m.tsv) AS l WHERE m.owner = $1 AND m.state = 'active' AND {RETENTION}",
            owner,
        )
        per: dict[str, dict[str, int]] = {}
        for r in rows:
            per.setdefault(str(r["id"]), {})[r["lexeme"]] = int(r["tf"])
        docs[owner] = per
    stats: dict[str, tuple[float, dict[str, int]]] = {}
    for owner, per in docs.items():
        df: dict[str, int] = {}
        for terms in per.values():
            for t in terms:
                df[t] = df.get(t, 0) + 1
        avg = sum(sum(t.values()) for t in per.values()) / max(1, len(per))
        stats[owner] = (avg, df)
    out = []
    for conv, qa in pairs:
        owner = quality.owner_of(conv)
        q = await stack.pool.fetchval("SELECT tsvector_to_array(to_tsvector('english', $1))", qa.question)
        avg, df = stats[owner]
        n = len(docs[owner])
        lists = {}
        for name, (k1, b) in BM25_PARAMS.items():
            scores = []
            for mid, terms in docs[owner].items():
                length = sum(terms.values())
                score = 0.0
                for t in q or ():
                    tf = terms.get(t)
                    if tf:
                        idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                        score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg))
                if score > 0:
                    scores.append((mid, score))
            scores.sort(key=lambda x: -x[1])
            lists[name] = scores[:DEPTH]
        out.append(lists)
    return out


def evaluate(
    data: Sequence[tuple[locomo.QA, Lists]],
    rank: Callable[[Lists], list[Fused]],
    dia_of_id: dict[str, str | None],
) -> dict[str, float]:
    outcomes = []
    for qa, lists in data:
        ranked = tuple(dia_of_id.get(f.memory_id) for f in rank(lists)[:20])
        outcomes.append(locomo.QAOutcome(category=qa.category, evidence=qa.evidence, ranked=ranked))
    s = locomo.score(outcomes)
    return {
        "R@5": round(s.recall[5], 4),
        "R@10": round(s.recall[10], 4),
        "R@20": round(s.recall[20], 4),
        "All@10": round(s.all_at, 4),
    }


def single(name: str) -> Callable[[Lists], list[Fused]]:
    return lambda lists: [Fused(memory_id=m, score=s) for m, s in lists[name]]


async def collect(
    stack: ServiceStack, convs: Sequence[locomo.Conversation], log: Callable[[str], None]
) -> dict[str, Any]:
    """Everything the analysis needs, JSON-able (saved with ``--lists`` for offline re-runs)."""
    log("study: fetching deep ranked lists ...")
    data = await fetch_lists(stack, convs)
    by_event = quality.dia_map(convs)
    rows = await stack.pool.fetch(
        "SELECT id, session_id, metadata FROM memories WHERE owner = ANY($1)", [quality.owner_of(c) for c in convs]
    )
    dia_of_id = {str(r["id"]): quality.dia_of(r["metadata"] or {}, by_event) for r in rows}
    session_of = {str(r["id"]): r["session_id"] for r in rows}
    turn_pos = {(c.sample_id, t.dia_id): (t.session, t.index) for c in convs for t in c.turns}
    position_of: dict[str, tuple[str, int]] = {}
    for r in rows:
        dia = dia_of_id[str(r["id"])]
        sid = r["session_id"] or ""
        sample = sid.split(":s")[0]
        if dia and (sample, dia) in turn_pos:
            position_of[str(r["id"])] = (sid, turn_pos[(sample, dia)][1])
    return {
        "questions": [{"category": qa.category, "evidence": list(qa.evidence), "lists": lists} for qa, lists in data],
        "dia_of_id": dia_of_id,
        "session_of": session_of,
        "position_of": position_of,
    }


def analyse(collected: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    data = [
        (locomo.QA(question="", category=q["category"], evidence=tuple(q["evidence"])), q["lists"])
        for q in collected["questions"]
    ]
    dia_of_id: dict[str, str | None] = collected["dia_of_id"]
    session_of: dict[str, str | None] = collected["session_of"]
    position_of = {k: (v[0], int(v[1])) for k, v in collected["position_of"].items()}
    configs: dict[str, Callable[[Lists], list[Fused]]] = {}
    keywords = ("and_cd", "or_cd", "or_cd1", "or_rank", *BM25_PARAMS)
    for name in (*keywords, "vec"):
        configs[f"single {name}"] = single(name)
    for kw, depth, k in itertools.product(keywords, (10, 20, 50), (20, 60)):
        configs[f"rrf {kw}+vec k={k} d={depth}"] = lambda L, kw=kw, d=depth, k=k: rrf_fuse(
            {"fts": L[kw], "vec": L["vec"]}, k, d
        )
    for kw, depth, w in itertools.product(keywords, (20, 50, 100, 200), (0.3, 0.5, 0.7)):
        configs[f"score {kw}+vec wfts={w} d={depth}"] = lambda L, kw=kw, d=depth, w=w: score_fuse(
            {"fts": L[kw], "vec": L["vec"]}, {"fts": w, "vec": 1 - w}, d
        )
    results = {name: evaluate(data, fn, dia_of_id) for name, fn in configs.items()}
    fused = sorted((n for n in results if not n.startswith("single")), key=lambda n: -results[n]["R@10"])
    log("study: best base configurations: " + ", ".join(f"{n} {results[n]['R@10']}" for n in fused[:5]))
    # boosts on the best of each family (Postgres-only keyword and BM25), so both are comparable
    bases = fused[:2] + [n for n in fused if " or_" in n][:1] + [n for n in fused if " bm25" in n][:1]
    for base in dict.fromkeys(bases):
        fn = configs[base]
        for share in (0.1, 0.2, 0.3, 0.5):
            name = f"{base} + session {share}"
            results[name] = evaluate(data, lambda L, fn=fn, s=share: session_boost(fn(L), session_of, s), dia_of_id)
        for share in (0.05, 0.1, 0.2):
            name = f"{base} + neighbour {share}"
            results[name] = evaluate(data, lambda L, fn=fn, s=share: neighbour_boost(fn(L), position_of, s), dia_of_id)
        for s_share, n_share in itertools.product((0.1, 0.2, 0.3, 0.5), (0.05, 0.1, 0.2)):
            name = f"{base} + session {s_share} + neighbour {n_share}"
            results[name] = evaluate(
                data,
                lambda L, fn=fn, s=s_share, n=n_share: neighbour_boost(
                    session_boost(fn(L), session_of, s), position_of, n
                ),
                dia_of_id,
            )
    return {"depth": DEPTH, "questions": len(data), "results": results}


def render(study_report: dict[str, Any], top: int = 40) -> str:
    res = study_report["results"]
    singles = [n for n in res if n.startswith("single")]
    ranked = sorted((n for n in res if not n.startswith("single")), key=lambda n: -res[n]["R@10"])
    rows = [[n, res[n]["R@5"], res[n]["R@10"], res[n]["R@20"], res[n]["All@10"]] for n in singles + ranked[:top]]
    return "### In-process study (same data, deep lists, the service's pure fusion functions)\n" + markdown_table(
        ["configuration", "R@5", "R@10", "R@20", "All@10"], rows
    )


REPO = Path(__file__).resolve().parents[1]


async def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(quality.default_data_path(REPO)))
    ap.add_argument("--json")
    ap.add_argument(
        "--lists", type=Path, help="cache of the fetched lists: read if it exists (no services), else written"
    )
    ap.add_argument("--variant", action="append", help="service variants to run first (default: default only)")
    ap.add_argument("--strategy", action="append")
    args = ap.parse_args(argv)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if args.lists and args.lists.exists():
        report: dict[str, Any] = {"study": analyse(json.loads(args.lists.read_text()), log)}
    else:
        convs = locomo.load(Path(args.data))
        variants = [quality.parse_variant(v) for v in (args.variant or ["default"])]
        holder: dict[str, Any] = {}
        async with (
            embedded_servers() as servers,
            ServiceStack(servers.nats_url, servers.pg_dsn, servers=servers) as stack,
        ):

            async def after_ingest() -> None:
                holder["collected"] = await collect(stack, convs, log)

            report = await quality.run_quality(
                stack,
                convs,
                args.strategy or quality.DEFAULT_STRATEGIES,
                variants,
                data_path=args.data,
                log=log,
                after_ingest=after_ingest,
            )
        if args.lists:
            args.lists.write_text(json.dumps(holder["collected"]))
        report["study"] = analyse(holder["collected"], log)
        print(quality.render(report))
        print()
    print(render(report["study"]))
    if args.json:
        write_json(Path(args.json), report)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
