"""``python -m bench vector-quantization``: LoCoMo recall with full and half-precision pgvector storage.

The path a user takes, in one run: the LoCoMo turns are ingested through the services with full
precision (``vectorQuantization=none``) and every question is asked, hybrid and semantic; then
``vectorQuantization=half`` is put globally, the embed service starts the signature change, the
``reindex`` RPC rewrites every vector as ``halfvec`` and the benchmark waits until retrieval
searches only those (the full vectors retired), and asks every question again. Reported: R@k of
both storages side by side, the per-question difference, the bytes of the stored vectors and of the
table and its indexes (each measured after ``VACUUM FULL``), and what the reindex took. A storage
passes when its hybrid and semantic R@10 stay within ``TOLERANCE`` of full precision.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import asyncpg

from bench import locomo, quality
from bench.embed_quality import paired
from bench.harness import ServiceStack, cpu_delta, wait_until
from bench.report import environment, markdown_table
from memoryd.rpc import call
from memoryd.schemas.ops import ReindexRequest, ReindexResult
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from shared.settings.cache import announce_change
from shared.settings.store import put_values
from shared.vectors.signature import VectorQuantization, stored_signature

STORAGES: tuple[VectorQuantization, ...] = ("none", "half")
STRATEGIES = ("hybrid", "semantic")
#: the largest R@10 drop from full precision a storage may show and still pass
TOLERANCE = 0.005
#: the stack's embed service: poll the signature often, drop retired vectors at once
STACK_ENV = {"MEMORYD_EMBED_META_POLL_S": "0.5", "MEMORYD_EMBED_RETIRE_GRACE_S": "0"}

_SIZES = """
SELECT pg_table_size('memory_embeddings') AS table_bytes,
       pg_indexes_size('memory_embeddings') AS index_bytes,
       coalesce(sum(coalesce(pg_column_size(embedding), 0) + coalesce(pg_column_size(embedding_half), 0)), 0)
           AS vector_bytes,
       count(*) AS rows
FROM memory_embeddings
"""


async def active_signature(pool: asyncpg.Pool) -> tuple[str | None, str | None]:
    """pgvector's active and pending signature (``memory_vec_meta``)."""
    row = await pool.fetchrow(
        "SELECT embedding_signature, pending_signature FROM memory_vec_meta WHERE store = 'pgvector'"
    )
    return (row["embedding_signature"], row["pending_signature"]) if row else (None, None)


async def sizes(pool: asyncpg.Pool) -> dict[str, int]:
    """Bytes of ``memory_embeddings`` (heap with TOAST, indexes, the vector columns) once compacted."""
    await pool.execute("VACUUM FULL memory_embeddings")
    row = await pool.fetchrow(_SIZES)
    assert row is not None
    return {k: int(row[k]) for k in ("table_bytes", "index_bytes", "vector_bytes", "rows")}


async def ask(
    stack: ServiceStack, convs: Sequence[locomo.Conversation], strategy: str
) -> tuple[list[locomo.QAOutcome], dict[str, Any]]:
    return await quality.ask_all(stack, convs, quality.STRATEGIES[strategy], quality.BUILTIN_VARIANTS["default"])


async def score(
    stack: ServiceStack, convs: Sequence[locomo.Conversation], storage: str, log: Callable[[str], None]
) -> tuple[dict[str, Any], dict[str, list[locomo.QAOutcome]]]:
    """Every question per strategy (one untimed pass first); scores and the outcomes by strategy."""
    await ask(stack, convs, STRATEGIES[0])  # query vectors cached, statements prepared
    scores: dict[str, Any] = {}
    outcomes: dict[str, list[locomo.QAOutcome]] = {}
    for strategy in STRATEGIES:
        outcomes[strategy], info = await ask(stack, convs, strategy)
        table = locomo.score_by_category(outcomes[strategy])
        scores[strategy] = {"scores": {k: v.as_dict() for k, v in table.items()}, **info}
        o = table["overall"]
        log(f"{storage:>5} {strategy:>8}: R@5 {o.recall[5]:.4f} R@10 {o.recall[10]:.4f} R@20 {o.recall[20]:.4f}")
    return scores, outcomes


async def switch_to_half(stack: ServiceStack, full: str, probe_owner: str, timeout: float = 1800.0) -> dict[str, Any]:
    """Put ``vectorQuantization=half``, run ``reindex``, wait until retrieval serves only halfvec rows
    (a semantic search of ``probe_owner`` served by pgvector with no fallback)."""
    half = stored_signature(full, "half")
    started, cpu = time.perf_counter(), stack.cpu_seconds()
    await put_values(stack.pool, None, {"vectorQuantization": "half"})
    await announce_change(stack.nc, None)

    async def pending() -> bool:
        return await active_signature(stack.pool) == (full, half)

    await wait_until(pending, 120, what=f"the change to {half} pending")
    result: ReindexResult = await call(stack.nc, "reindex", ReindexRequest(), timeout=120)

    async def switched() -> bool:
        if await active_signature(stack.pool) != (half, None):
            return False
        return not await stack.pool.fetchval("SELECT count(*) FROM memory_embeddings WHERE signature = $1", full)

    await wait_until(switched, timeout, interval=0.5, what=f"the reindex to {half} and the full vectors retired")
    reindex_s = time.perf_counter() - started

    async def served_by_half() -> bool:  # retrieve's metadata cache followed the switch
        res: RetrieveResult = await call(
            stack.nc, "retrieve", RetrieveRequest(owner=probe_owner, query="hello", strategy="semantic"), timeout=30
        )
        return bool(res.memories) and not res.fallbacks and any(t.tier == "pgvector" and t.served for t in res.tiers)

    await wait_until(served_by_half, 60, what="semantic search served by the half vectors")
    return {
        "signature": half,
        "queued": result.queued,
        "seconds": round(reindex_s, 1),
        "cpu_s": {k: round(v, 1) for k, v in cpu_delta(cpu, stack.cpu_seconds()).items() if v >= 0.05},
    }


async def run(
    stack: ServiceStack,
    convs: Sequence[locomo.Conversation],
    *,
    data_name: str = "",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Ingest at full precision, score, switch to half through the reindex, score again."""
    log(f"ingesting {sum(len(c.turns) for c in convs)} turns of {len(convs)} conversation(s) ...")
    ingest_info = await quality.ingest(stack, convs)
    await quality.apply_variant(stack, quality.BUILTIN_VARIANTS["default"], None)
    full, pending = await active_signature(stack.pool)
    if full is None or pending is not None or full != stored_signature(full, "none"):
        raise RuntimeError(f"expected full-precision vectors after ingest, found active {full}, pending {pending}")
    storages: dict[str, Any] = {}
    outcomes: dict[str, dict[str, list[locomo.QAOutcome]]] = {}
    storages["none"] = {"signature": full, "sizes": await sizes(stack.pool)}
    scores, outcomes["none"] = await score(stack, convs, "none", log)
    storages["none"]["strategies"] = scores
    log("switching to vectorQuantization=half and reindexing ...")
    reindex = await switch_to_half(stack, full, quality.owner_of(convs[0]))
    log(f"reindexed to {reindex['signature']} in {reindex['seconds']} s")
    storages["half"] = {"signature": reindex["signature"], "sizes": await sizes(stack.pool)}
    scores, outcomes["half"] = await score(stack, convs, "half", log)
    storages["half"]["strategies"] = scores
    return {
        "benchmark": "vector-quantization",
        "data": data_name,
        "conversations": [c.sample_id for c in convs],
        "questions": sum(len(c.qas) for c in convs),
        "limit": quality.LIMIT,
        "ingest": ingest_info,
        "reindex": reindex,
        "storages": storages,
        "per_question": {s: paired(outcomes["none"][s], outcomes["half"][s]) for s in STRATEGIES},
        "verdict": verdict(storages),
        "environment": environment(),
    }


def r10(storage: Mapping[str, Any], strategy: str) -> float:
    return float(storage["strategies"][strategy]["scores"]["overall"]["R@10"])


def verdict(storages: Mapping[str, Any]) -> dict[str, Any]:
    """Half precision's R@10 drop from full precision per strategy, against ``TOLERANCE``."""
    drops = {s: round(r10(storages["none"], s) - r10(storages["half"], s), 4) for s in STRATEGIES}
    none, half = storages["none"]["sizes"], storages["half"]["sizes"]
    return {
        "drops": drops,
        "tolerance": TOLERANCE,
        "passes": all(d <= TOLERANCE for d in drops.values()),
        "table_ratio": round(none["table_bytes"] / half["table_bytes"], 2),
        "vector_ratio": round(none["vector_bytes"] / half["vector_bytes"], 2),
        "index_ratio": round(none["index_bytes"] / half["index_bytes"], 2),
    }


def render(report: Mapping[str, Any]) -> str:
    """One row per storage: R@k of hybrid and semantic, then the sizes, the verdict and the reindex."""
    rows = []
    for name, st in report["storages"].items():
        hyb = st["strategies"]["hybrid"]["scores"]["overall"]
        sem = st["strategies"]["semantic"]["scores"]["overall"]
        mb = st["sizes"]
        rows.append(
            [
                f"`{name}`",
                f"`{st['signature']}`",
                hyb["R@5"],
                hyb["R@10"],
                hyb["All@10"],
                sem["R@5"],
                sem["R@10"],
                f"{mb['table_bytes'] / 2**20:.2f}",
                f"{mb['index_bytes'] / 2**20:.2f}",
            ]
        )
    head = [
        "vectorQuantization",
        "signature",
        "hybrid R@5",
        "hybrid R@10",
        "hybrid All@10",
        "semantic R@5",
        "semantic R@10",
        "table MiB",
        "indexes MiB",
    ]
    v, ri, pq = report["verdict"], report["reindex"], report["per_question"]
    drops = ", ".join(f"{s} {d:+.4f}" for s, d in v["drops"].items())
    per_q = "; ".join(
        f"{s}: higher on {q['better']}, lower on {q['worse']} of {q['questions']},"
        f" mean {q['mean_difference']:+.4f} (standard error {q['standard_error']})"
        for s, q in pq.items()
    )
    return "\n".join(
        [
            f"Full against half-precision pgvector storage, LoCoMo ({report['questions']} questions,"
            f" {', '.join(report['conversations'])}), limit {report['limit']}, default settings, through the"
            " services; half reached by `vectorQuantization=half` and the `reindex` RPC in the same run",
            "",
            markdown_table(head, rows, digits=4),
            "",
            f"- R@10 drop from full to half precision: {drops} (tolerance {v['tolerance']});"
            f" passes: {'yes' if v['passes'] else 'no'}",
            f"- per question, R@10 of half against full: {per_q}",
            f"- after `VACUUM FULL`: table {v['table_ratio']}x smaller, vector columns {v['vector_ratio']}x,"
            f" indexes {v['index_ratio']}x",
            f"- the reindex of {ri['queued']:,} memories to `{ri['signature']}` took {ri['seconds']} s until the"
            f" full vectors were retired (embed CPU {ri['cpu_s'].get('embed', 0)} s; wall time on a shared machine)",
        ]
    )
