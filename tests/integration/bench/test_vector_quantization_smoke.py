"""The vector-quantization benchmark end to end on a tiny LoCoMo-format file: real NATS, Postgres
and services; the half run searches halfvec rows written by the reindex."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import locomo
from bench import vector_quantization as vq
from bench.harness import ServiceStack
from memoryd.local.nats import EmbeddedNats
from tests.integration.bench.test_quality_smoke import TINY

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SIG = "local:all-MiniLM-L6-v2:384:turn1"


async def test_vector_quantization_benchmark_end_to_end(tmp_path: Path, nats_server: EmbeddedNats, pg_dsn: str) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    convs = locomo.load(path)
    logs: list[str] = []
    async with ServiceStack(nats_server.url, pg_dsn, mode="inprocess", env=dict(vq.STACK_ENV)) as stack:
        report = await vq.run(stack, convs, data_name=path.name, log=logs.append)
        kinds = await stack.pool.fetch(
            "SELECT signature, count(embedding) AS full, count(embedding_half) AS half FROM memory_embeddings"
            " GROUP BY signature"
        )
    assert [(r["signature"], r["full"], r["half"]) for r in kinds] == [(f"{SIG}:half", 0, 7)]
    none, half = report["storages"]["none"], report["storages"]["half"]
    assert (none["signature"], half["signature"]) == (SIG, f"{SIG}:half")
    assert report["reindex"]["queued"] == 7 and report["questions"] == 4
    for storage in (none, half):
        for strategy in vq.STRATEGIES:
            run = storage["strategies"][strategy]
            assert run["tiers_served"]["pgvector"] == 4 and run["fallbacks"] == {}
            assert run["scores"]["overall"]["n"] == 4
    assert none["sizes"]["rows"] == half["sizes"]["rows"] == 7
    assert none["sizes"]["vector_bytes"] / half["sizes"]["vector_bytes"] > 1.9
    assert set(report["verdict"]["drops"]) == {"hybrid", "semantic"}
    assert report["per_question"]["hybrid"]["questions"] == 4
    text = vq.render(report)
    assert f"| `half` | `{SIG}:half` |" in text
    assert any("reindexed to" in line for line in logs)
