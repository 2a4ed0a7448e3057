"""Pure parts of the benchmarks: events from turns, variants, result mapping, latency maths, CLI group."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import click
import numpy as np
import pytest

from bench import latency, quality, synth
from bench.__main__ import bench
from bench.locomo import parse_sample
from shared.settings.memory import validate

from .test_locomo import SAMPLE


def test_build_events_one_per_turn_dates_shifted_into_retention() -> None:
    conv = parse_sample(SAMPLE)
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    events = quality.build_events(conv, now)
    assert [e.event_id for e in events] == [
        "locomo-conv-x-D1:1",
        "locomo-conv-x-D1:2",
        "locomo-conv-x-D2:1",
        "locomo-conv-x-D2:2",
    ]
    assert {e.owner for e in events} == {"locomo-conv-x"}
    assert [e.session_id for e in events] == ["conv-x:s1", "conv-x:s1", "conv-x:s2", "conv-x:s2"]
    first = events[1]
    assert len(first.messages) == 1
    msg = first.messages[0]
    assert (msg.role, msg.name) == ("user", "Bob")
    assert msg.content == "[1:56 pm on 8 May, 2023] Bob: Cute! [shares a photo: a photo of a dog]"
    assert first.metadata == {"dia_id": "D1:2", "locomo_session": 1, "turn": 1}
    # whole days shifted: the last turn lands within a day before now, gaps and times kept
    shift = events[0].occurred_at - conv.turns[0].occurred_at
    assert shift.total_seconds() % 86400 == 0
    assert now - timedelta(days=2) < events[-1].occurred_at < now
    assert [e.occurred_at for e in events] == sorted(e.occurred_at for e in events)
    assert events[2].occurred_at - events[0].occurred_at == conv.turns[2].occurred_at - conv.turns[0].occurred_at


def test_build_events_plain_sends_the_text_with_name_and_the_true_date() -> None:
    conv = parse_sample(SAMPLE)
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    events = quality.build_events(conv, now, "plain")
    prefixed = quality.build_events(conv, now)
    assert [e.event_id for e in events] == [e.event_id for e in prefixed]
    msg = events[1].messages[0]
    assert (msg.role, msg.name, msg.content) == ("user", "Bob", "Cute! [shares a photo: a photo of a dog]")
    # the session's own date-time, not shifted: a question naming "May 2023" meets the turn's date
    assert events[1].occurred_at == datetime(2023, 5, 8, 13, 56, 1, tzinfo=UTC)
    assert [e.occurred_at for e in events] == [t.occurred_at for t in conv.turns]
    # retentionDays must reach back to the first turn (a day to spare), never below the default
    assert quality.retention_days(events, now) == (now - events[0].occurred_at).days + 2 == 1302
    assert quality.retention_days(prefixed, now) == 365
    assert validate({"retentionDays": quality.retention_days(events, now)}).retention_days == 1302
    with pytest.raises(ValueError, match="older than retentionDays can keep"):
        quality.retention_days(events, datetime(2200, 1, 1, tzinfo=UTC))


def test_dia_of_prefers_metadata_then_event_id() -> None:
    by_event = quality.dia_map([parse_sample(SAMPLE)])
    assert quality.dia_of({"dia_id": "D9:9", "event_id": "locomo-conv-x-D1:1"}, by_event) == "D9:9"
    assert quality.dia_of({"event_id": "locomo-conv-x-D2:2"}, by_event) == "D2:2"
    assert quality.dia_of({"event_id": "other"}, by_event) is None
    assert quality.dia_of({}, by_event) is None


def test_parse_variant() -> None:
    assert quality.parse_variant("default") is quality.BUILTIN_VARIANTS["default"]
    v = quality.parse_variant(
        "mine:rrfDepth=30,sessionBoost=0.2,MEMORYD_RETRIEVE_EMBED_TIMEOUT_S=5,types=episodic+factual"
    )
    assert v.name == "mine"
    assert v.settings == {"rrfDepth": 30, "sessionBoost": 0.2}
    assert v.retrieve_env == {"MEMORYD_RETRIEVE_EMBED_TIMEOUT_S": "5"}
    assert v.types == ("episodic", "factual")
    with pytest.raises(ValueError, match="not one of"):
        quality.parse_variant("nope")
    for builtin in quality.BUILTIN_VARIANTS.values():  # tuning is runtime settings, valid ones
        assert not builtin.retrieve_env
        validate({**quality.engine_defaults(), **builtin.settings})
    with pytest.raises(ValueError, match="key=value"):
        quality.parse_variant("x:rrfDepth")


def test_engine_defaults_reset_every_engine_setting() -> None:
    assert quality.engine_defaults() == {  # MemorySettings defaults
        "rrfK": 60,
        "rrfDepth": 100,
        "fusion": "score",
        "sessionBoost": 0.3,
        "neighbourBoost": 0.3,
        "sessionEvidence": 1,
        "sessionSpread": 0.0,
        "ftsWeight": 0.6,
        "vecWeight": 0.4,
        "speakerBoost": 0.6,
        "temporalBoost": 0.0,
        "temporalReasoning": 0.4,
        "temporalLift": 0.75,
        "temporalWindow": 20,
        "ftsFullCoverage": 0.5,
        "ftsCoveragePower": 4.0,
        "keywordRanking": "bm25",
        "rerank": False,
        "rerankDepth": 20,
    }


def _rerank_request(n: int) -> dict[str, Any]:
    lines = "\n".join(f'[{i}] "turn {i}"' for i in range(1, n + 1))
    return {"messages": [{"role": "system", "content": "rank"}, {"role": "user", "content": f"Query: q\n{lines}"}]}


def test_scripted_rerank_keeps_the_fused_order_and_counts_its_cost() -> None:
    assert json.loads(quality.keep_order(_rerank_request(3))) == {"order": [1, 2, 3]}
    variant = quality.rerank_variant("http://127.0.0.1:9/v1")
    assert variant.settings == {"rerank": True}
    assert variant.retrieve_env["MEMORYD_LLM_BASE_URL"] == "http://127.0.0.1:9/v1"
    validate({**quality.engine_defaults(), **variant.settings})
    cost = quality.llm_cost([_rerank_request(2), _rerank_request(4)], questions=3)
    assert cost["calls"] == 2 and cost["questions"] == 3 and cost["candidates_mean"] == 3.0
    assert cost["prompt_tokens_mean"] > 0 and cost["reply_tokens_mean"] > 0
    assert quality.llm_cost([], questions=0)["prompt_tokens_mean"] == 0.0


def test_rerank_lines_compare_with_the_defaults_only_when_the_variant_ran() -> None:
    def run(name: str, p50: float, **extra: Any) -> dict[str, Any]:
        scores = {"overall": {"R@10": 0.8, "latency_p50_ms": p50, "latency_p95_ms": p50 * 2}}
        return {"variant": name, "strategy": "hybrid", "settings": {}, "scores": scores, **extra}

    cost = quality.llm_cost([_rerank_request(20)], questions=1)
    lines = quality.rerank_lines([run("default", 8.0), run(quality.RERANK_VARIANT, 11.0, llm=cost)])
    assert "1 calls for 1 questions" in lines[1] and "p50 11.0 ms against 8.0 ms" in lines[1]
    assert quality.rerank_lines([run("default", 8.0)]) == []


def test_synthetic_text_is_deterministic_and_varied() -> None:
    a = list(synth.sentences(500, seed=1))
    assert a == list(synth.sentences(500, seed=1))
    assert a != list(synth.sentences(500, seed=2))
    assert len(set(a)) > 490
    assert len({w for t in a for w in t.lower().split()}) > 400
    assert synth.questions(5) == synth.questions(5)
    base = np.eye(4, 8, dtype=np.float32)  # four orthogonal "real" embeddings
    v = synth.mixed_vectors(base, 10, seed=3)
    assert v.shape == (10, 8)
    assert np.allclose((v * v).sum(axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v, synth.mixed_vectors(base, 10, seed=3))
    # each vector lies close to the span of its sources: nearly all its mass on the first 4 axes
    assert float((v[:, :4] ** 2).sum(axis=1).min()) > 0.99


def test_latency_scenarios_ratios_targets() -> None:
    plan = latency.scenarios([10_000, 100_000], 100, 1_000)
    assert [s.name for s in plan] == ["1 owner x 10,000", "1 owner x 100,000", "100 owners x 1,000"]
    assert plan[2].owners[0] == "lat-m000" and len(plan[2].owners) == 100
    assert latency.scenarios([5], 0, 1_000)[-1].name == "1 owner x 5"
    rows = [
        {
            "scenario": "1 owner x 100,000",
            "strategy": "hybrid",
            "path": "service",
            "c": 1,
            "p50_ms": 8.0,
            "p99_ms": 40.0,
            "rps": 100.0,
        },
        {
            "scenario": "1 owner x 100,000",
            "strategy": "hybrid",
            "path": "floor",
            "c": 1,
            "p50_ms": 5.0,
            "p99_ms": 9.0,
            "rps": 180.0,
        },
        {
            "scenario": "1 owner x 100,000",
            "strategy": "hybrid",
            "path": "service",
            "c": 16,
            "p50_ms": 80.0,
            "p99_ms": 90.0,
            "rps": 150.0,
        },
        {
            "scenario": "1 owner x 100,000",
            "strategy": "hybrid",
            "path": "floor",
            "c": 16,
            "p50_ms": 60.0,
            "p99_ms": 70.0,
            "rps": 200.0,
        },
    ]
    assert latency.ratios(rows) == [
        {
            "scenario": "1 owner x 100,000",
            "strategy": "hybrid",
            "c": 1,
            "throughput_ratio": 0.556,
            "p50_overhead_ms": 3.0,
        },
        {
            "scenario": "1 owner x 100,000",
            "strategy": "hybrid",
            "c": 16,
            "throughput_ratio": 0.75,
            "p50_overhead_ms": 20.0,
        },
    ]
    met = {t["target"]: (t["value"], t["ok"]) for t in latency.targets(rows, 100_000)}
    assert met == {
        "hybrid c=1 p50 <= 8 ms": (8.0, True),
        "hybrid c=1 p99 <= 20 ms": (40.0, False),
        "hybrid c=16 throughput >= 0.8x floor": (0.75, False),
    }
    # the neighbour boost's SQL cost: the rows probe with turn positions minus the one without
    probes = [
        {"scenario": "1 owner x 100,000", "strategy": s, "path": "floor probe", "c": 1, "p50_ms": v}
        for s, v in (("rows", 2.9), ("rows_plain", 2.1))
    ]
    boost = [t for t in latency.targets(probes) if "neighbour" in t["target"]]
    assert boost == [
        {
            "scenario": "1 owner x 100,000",
            "target": "neighbour boost (turn positions) p50 <= 1 ms",
            "value": 0.8,
            "ok": True,
        }
    ]


def test_bench_commands_parse() -> None:
    assert set(bench.commands) == {
        "quality",
        "latency",
        "embed",
        "sleep",
        "gateway",
        "tracing",
        "peers",
        "ingest",
        "paraphrase",
        "temporal",
        "dense-context",
        "embed-quality",
        "vector-quantization",
        "keyword-pruning",
        "docs",
    }

    def params(*argv: str) -> dict[str, object]:
        command = bench.commands[argv[0]]
        return command.make_context(argv[0], list(argv[1:])).params

    args = params("latency", "--sizes", "1000,20_000", "--concurrency", "1,8")
    assert (args["sizes"], args["concurrency"], args["owners"]) == ([1000, 20000], [1, 8], 100)
    args = params("quality", "--variant", "rrf-depth-10", "--strategy", "hybrid")
    assert (args["variant"], args["strategy"], args["mode"]) == (("rrf-depth-10",), ("hybrid",), "processes")
    assert params("sleep")["sizes"] == [10_000, 100_000]
    assert params("gateway", "--concurrency", "1,4")["concurrency"] == [1, 4]
    assert params("tracing", "--rounds", "3")["rounds"] == 3
    assert params("vector-quantization", "--conversations", "2")["conversations"] == 2
    args = params("keyword-pruning", "--sizes", "2000", "--write", "0")
    assert (args["sizes"], args["questions"], args["rounds"], args["write"]) == ([2000], 200, 2, 0)
    assert (params("paraphrase")["memories"], params("paraphrase", "--questions", "50")["questions"]) == (2000, 50)
    assert str(params("dense-context", "--cache-dir", "/tmp/x")["cache_dir"]) == "/tmp/x"
    assert str(params("embed-quality")["cache_dir"]) == "/tmp/memoryd-embed-quality"
    args = params("peers", "--memories", "10_000,100000")
    assert (args["memories"], args["concurrency"], args["add_concurrency"]) == ([10_000, 100_000], [1, 16], 16)
    with pytest.raises(click.BadParameter, match="every value must be >= 1"):
        params("latency", "--sizes", "0")


def test_tracing_summary_is_the_median_of_each_mode_and_on_over_off() -> None:
    from bench import tracing

    def row(mode: str, r: int, p50: float, rps: float) -> dict[str, object]:
        return {"round": r, "mode": mode, "c": 1, "p50_ms": p50, "p99_ms": p50 * 2, "rps": rps}

    rows = [row("off", 1, 2.0, 500), row("on", 1, 2.4, 400), row("off", 2, 4.0, 300), row("on", 2, 3.6, 330)]
    (summary,) = tracing.summarize(rows, [1])
    assert summary["p50_ms_off"] == 3.0 and summary["p50_ms_on"] == 3.0 and summary["p50_ratio"] == 1.0
    assert summary["rps_off"] == 400 and summary["rps_on"] == 365 and summary["rps_ratio"] == round(365 / 400, 3)
    assert summary["p99_ratio"] == 1.0


def test_sleep_first_run_target_judges_the_largest_owner_first_run() -> None:
    from bench.sleep import first_run_target

    def run(memories: int, kind: str, wall: float, status: str = "ok") -> dict[str, object]:
        return {"memories": memories, "run": kind, "wall_s": wall, "status": status}

    assert first_run_target([run(10_000, "first", 3.0)]) == ""
    assert "(met)" in first_run_target([run(100_000, "first", 25.2), run(100_000, "second", 99.0)])
    assert "(NOT met)" in first_run_target([run(100_000, "first", 61.0)])
    assert "(NOT met)" in first_run_target([run(100_000, "first", 5.0, status="failed")])
