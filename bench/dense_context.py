"""``python -m bench dense-context``: which text the dense tier should embed for a chat turn.

The study behind the context-aware dense tier: the LoCoMo turns are ingested once through
the services (``quality.ingest``), then every question's keyword list (the engine's own
``keyword_ranking``, depth ``protocol.MAX_DEPTH``) and every stored memory of each owner (its
content, session, time and turn position) are read in-process (``collect``). The services are
then stopped and each memory is embedded here, with the embed service's own model
(``LocalEmbedder.default``), once per memory text of ``dense_context_logic.TEXTS`` (the turn as
stored, without its date and speaker prefix, with its previous and/or next turns of the same
session). ``dense_context_logic`` scores every vector configuration dense-only and hybrid (the
engine's pure fusion and boosts, as ``bench.study`` does) and runs leave-one-conversation-out
over the quality protocol's grid and each configuration family's parameter.

Vectors are cached per (model signature, text) under ``--cache-dir`` (``.npy`` files outside
the repository), so a second run only scores.
"""

from __future__ import annotations

import asyncio
import hashlib
import pickle
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench import dense_context_logic as logic
from bench import locomo, protocol, quality, study
from bench.harness import ServiceStack, embedded_servers
from bench.report import environment
from services.retrieve.adapters import postgres as tiers
from services.retrieve.logic.fusion import normalize_query

_MEMORIES = (
    "SELECT id, source, session_id, created_at, content FROM memories"
    " WHERE owner = $1 AND state = 'active' ORDER BY created_at, id"
)


async def collect(
    convs: Sequence[locomo.Conversation], log: Callable[[str], None]
) -> tuple[list[study.Candidates], dict[str, list[logic.Memory]], dict[str, Any]]:
    """Ingest through the services, then every question's candidates and every owner's memories."""
    async with (
        embedded_servers() as servers,
        ServiceStack(servers.nats_url, servers.pg_dsn, mode="inprocess", servers=servers) as stack,
    ):
        log(f"ingesting {sum(len(c.turns) for c in convs)} turns of {len(convs)} conversation(s) ...")
        info = await quality.ingest(stack, convs)
        log(f"searchable after {info['searchable_after_s']} s: {info['memories']}")
        by_event = quality.dia_map(convs)
        cands = await study.collect(stack.pg_dsn, stack.nc, convs, quality.owner_of, by_event, protocol.MAX_DEPTH)
        memories: dict[str, list[logic.Memory]] = {}
        full: list[study.Candidates] = []
        for conv in convs:
            owner = quality.owner_of(conv)
            records = await stack.pool.fetch(_MEMORIES, owner)
            memories[conv.sample_id] = [
                logic.Memory(str(r["id"]), r["source"], r["session_id"], r["content"]) for r in records
            ]
            vis = tiers.Visibility(owner, None, None, 365)
            rows = await tiers.fetch_rows(stack.pool, vis, [m.id for m in memories[conv.sample_id]], turns=True)
            dia = {i: d for i, row in rows.items() if (d := study._dia(row, by_event)) is not None}
            full += [replace(c, rows=rows, dia=dia) for c in cands if c.conversation == conv.sample_id]
    return full, memories, info


def embed_cached(texts: Sequence[str], cache_dir: Path, log: Callable[[str], None]) -> np.ndarray:
    """The model's vectors of ``texts`` (rows in order), embedding only those not cached yet."""
    from services.embed.adapters.onnx import LocalEmbedder

    embedder = LocalEmbedder.default()
    cache_dir.mkdir(parents=True, exist_ok=True)
    keys = [hashlib.sha256(f"{embedder.signature}\n{t}".encode()).hexdigest() for t in texts]
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    todo = [i for i, k in enumerate(keys) if not (cache_dir / f"{k}.npy").exists()]
    missing = set(todo)
    for i, k in enumerate(keys):
        if i not in missing:
            out[i] = np.load(cache_dir / f"{k}.npy")
    started = time.perf_counter()
    order = sorted(todo, key=lambda i: len(texts[i]))
    for n in range(0, len(order), 16):
        chunk = order[n : n + 16]
        vectors = embedder.embed([texts[i] for i in chunk])
        for j, i in enumerate(chunk):
            out[i] = vectors[j]
            np.save(cache_dir / f"{keys[i]}.npy", vectors[j])
        if n and n % 800 == 0:
            log(f"embedded {n} of {len(order)} texts ({time.perf_counter() - started:.0f} s)")
    if todo:
        log(f"embedded {len(todo)} texts in {time.perf_counter() - started:.1f} s ({len(texts) - len(todo)} cached)")
    return out


Collected = tuple[list[study.Candidates], dict[str, list[logic.Memory]], dict[str, Any]]


def collected(convs: Sequence[locomo.Conversation], cache_dir: Path, log: Callable[[str], None]) -> Collected:
    """``collect``'s result, from ``cache_dir`` when an earlier run left it there."""
    path = cache_dir / "collected.pickle"
    if path.exists():
        got: Collected = pickle.loads(path.read_bytes())
        log(f"candidates of {len(got[0])} questions read from {path}")
        return got
    got = asyncio.run(collect(convs, log))
    cache_dir.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(got))
    return got


def run(
    convs: Sequence[locomo.Conversation], cache_dir: Path, log: Callable[[str], None], *, data_name: str = ""
) -> dict[str, Any]:
    """The study's JSON report (``dense_context_logic.evaluate``), collecting or reading the cache."""
    started = time.perf_counter()
    cands, memories, info = collected(convs, cache_dir, log)
    texts = logic.memory_texts(memories)
    flat = sorted({t for by_kind in texts.values() for t in by_kind.values()})
    log(f"{len(flat)} distinct memory texts over {len(logic.TEXTS)} text kinds")
    vectors_of = dict(zip(flat, embed_cached(flat, cache_dir / "vectors", log), strict=True))
    queries = sorted({normalize_query(c.qa.question) for c in cands})
    query_vectors = dict(zip(queries, embed_cached(queries, cache_dir / "vectors", log), strict=True))
    log("scoring the vector configurations ...")
    report = logic.evaluate(cands, memories, texts, vectors_of, query_vectors, log=log)
    # the same scores from the vector lists pgvector returned to the engine (HNSW, plain text)
    service_dense = [
        locomo.QAOutcome(c.qa.category, c.qa.evidence, tuple(c.dia.get(i) for i, _ in c.vec[: study.LIMIT]))
        for c in cands
    ]
    report["pgvector_check"] = {
        "dense_only_R@10": round(locomo.score(service_dense).recall[10], 4),
        "hybrid_defaults_R@10": round(locomo.score(study.outcomes(cands, study.defaults())).recall[10], 4),
    }
    report.update(
        benchmark="dense-context",
        data=data_name,
        conversations=[c.sample_id for c in convs],
        questions=len(cands),
        ingest=info,
        seconds=round(time.perf_counter() - started, 1),
        environment=environment(),
    )
    return report
