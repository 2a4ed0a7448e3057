"""The latency benchmark end to end at a tiny size: data load, service path, floor, report."""

from __future__ import annotations

import pytest

from bench import latency
from bench.harness import ServiceStack
from memoryd.local.nats import EmbeddedNats

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_latency_benchmark_tiny(nats_server: EmbeddedNats, pg_dsn: str) -> None:
    async with ServiceStack(nats_server.url, pg_dsn, services=("embed", "retrieve"), mode="inprocess") as stack:
        report = await latency.run_latency(
            stack,
            [300],
            owners=3,
            owner_size=50,
            concurrency=[1, 4],
            requests_per_client=2,
            n_questions=20,
            n_base_texts=30,
            log=lambda _m: None,
        )
        counts = await stack.pool.fetch(
            "SELECT m.owner, count(*) AS n, count(e.memory_id) AS v FROM memories m"
            " LEFT JOIN memory_embeddings e ON e.memory_id = m.id GROUP BY 1 ORDER BY 1"
        )
        hnsw = await stack.pool.fetch(
            "SELECT c.relname, i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid"
            " WHERE i.indrelid = 'memory_embeddings'::regclass AND c.relname LIKE 'memory_embeddings_hnsw_%'"
        )
    # the signature's HNSW index is built once, in bulk, after the load
    assert [r["indisvalid"] for r in hnsw] == [True]
    assert {r["owner"]: (r["n"], r["v"]) for r in counts} == {
        "lat-300": (300, 300),
        "lat-m000": (50, 50),
        "lat-m001": (50, 50),
        "lat-m002": (50, 50),
    }
    assert report["memories"] == 450
    rows = report["rows"]
    # per scenario x strategy: one cold pass, then service and floor at each concurrency;
    # then per scenario the floor-only probes
    assert len(rows) == 2 * 3 * (1 + 2 * 2) + 2 * len(latency.PROBES)
    assert {r["strategy"] for r in rows if r["path"] == "floor probe"} == set(latency.PROBES)
    for row in rows:
        assert row["errors"] == 0
        assert row["n"] == 20  # max(20 questions, 2 x c)
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"]
        assert row["rps"] > 0
    assert {(r["scenario"], r["strategy"], r["c"]) for r in report["ratios"]} == {
        (s, st, c) for s in ("1 owner x 300", "3 owners x 50") for st in latency.STRATEGIES for c in (1, 4)
    }
    # below every pruning and HNSW threshold the engine's answer is the exact one
    assert {(r["scenario"], r["strategy"]): r["recall"] for r in report["recall"]} == {
        (s, st): 1.0 for s in ("1 owner x 300", "3 owners x 50") for st in latency.STRATEGIES
    }
    # peak resident memory per process (in-process services: all in the benchmark's own)
    peaks = report["peak_rss_mb"]
    assert "bench" in peaks and all(v > 0 for v in peaks.values())
    text = latency.render(report)
    assert "| 1 owner x 300 | hybrid | service | 1 |" in text
    assert "mixed from real embeddings" in text
    assert "| 1 owner x 300 | hybrid | 1.000 |" in text
    assert "Peak resident memory (MB) per process: " in text
