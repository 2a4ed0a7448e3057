"""``python -m bench tracing``: what trace export costs a search, off and on in one run.

One owner with ``size`` synthetic memories (``latency.load``: COPY, vectors mixed from real
embeddings) and the retrieve and embed services as processes. Rounds alternate: ``off``
(no ``OTEL_*`` variable: spans are no-ops, only ``traceparent`` propagation remains) and
``on`` (``OTEL_EXPORTER_OTLP_ENDPOINT`` set: every request a recorded span, batched and posted
over OTLP/HTTP to a collector stand-in on loopback that decodes each export as a real collector
would, ``tests.support.otlp``). Before each round both services are restarted with that
round's environment and every question is asked once (warm-up: query vectors cached, as
in ``bench latency``); then ``requests`` hybrid ``retrieve`` RPCs run at each concurrency.
A mode's figure is the median over its rounds; the ratio is on / off (latency: >1 is slower;
throughput: <1 is slower). The machine's noise is as large as the difference, which is why
the rounds interleave.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench import synth
from bench.harness import ServiceStack
from bench.latency import LIMIT, _summary, active_signature, drive, embed_texts, load, scenarios
from bench.report import environment, markdown_table
from memoryd.rpc import call
from memoryd.schemas.retrieval import RetrieveRequest
from tests.support.otlp import OtlpCollector

MODES = ("off", "on")
SERVICES = ("embed", "retrieve")


async def run_tracing(
    stack: ServiceStack,
    *,
    size: int = 10_000,
    rounds: int = 2,
    concurrency: Sequence[int] = (1, 16),
    requests: int = 400,
    n_questions: int = 200,
    n_base_texts: int = 500,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    plan = scenarios([size], 0, 0)
    owner = plan[0].owners[0]
    signature, dim = await active_signature(stack.pool)
    base_texts = list(dict.fromkeys(synth.sentences(n_base_texts, seed=101)))
    base = np.array((await embed_texts(stack.nc, base_texts)).vectors, dtype=np.float32)
    log(f"loading {size:,} memories with {dim}-d vectors under {signature} ...")
    await load(stack.pg_dsn, plan, signature, base)
    questions = list(dict.fromkeys(synth.questions(n_questions)))

    async def search(i: int) -> None:
        req = RetrieveRequest(owner=owner, query=questions[i % len(questions)], strategy="hybrid", limit=LIMIT)
        await call(stack.nc, "retrieve", req, timeout=30)

    rows: list[dict[str, Any]] = []
    with OtlpCollector() as collector:
        env = {
            "off": {},
            "on": {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint},
        }
        for r in range(rounds):
            for mode in MODES:
                for name in SERVICES:
                    await stack.restart(name, env[mode])
                spans_before = len(collector.spans())
                await drive(search, len(questions), 8)  # warm-up: every query vector cached
                for c in concurrency:
                    res = await drive(search, requests, c)
                    row = {"round": r + 1, "mode": mode, "c": c, **_summary(res)}
                    rows.append(row)
                    log(
                        f"round {r + 1} tracing {mode:>3} c={c:<3} p50 {row['p50_ms']:7.2f} "
                        f"p99 {row['p99_ms']:7.2f} ms {row['rps']:8.1f} req/s"
                    )
                if mode == "on":
                    for name in SERVICES:  # a stop flushes the spans still batched, before counting
                        await stack.restart(name, env["off"])
                    exported = len(collector.spans()) - spans_before
                    rows[-1]["spans_exported"] = exported
                    log(f"round {r + 1}: {exported:,} spans exported")
    return {
        "environment": environment(),
        "size": size,
        "rounds": rounds,
        "requests": requests,
        "rows": rows,
        "summary": summarize(rows, concurrency),
    }


def summarize(rows: Sequence[dict[str, Any]], concurrency: Sequence[int]) -> list[dict[str, Any]]:
    """Per concurrency: each mode's median p50/p99/rps over its rounds, and on / off."""
    out = []
    for c in concurrency:
        med = {
            mode: {
                k: statistics.median(r[k] for r in rows if r["mode"] == mode and r["c"] == c)
                for k in ("p50_ms", "p99_ms", "rps")
            }
            for mode in MODES
        }
        out.append(
            {
                "c": c,
                **{f"{k}_{mode}": round(med[mode][k], 2) for mode in MODES for k in ("p50_ms", "p99_ms", "rps")},
                "p50_ratio": round(med["on"]["p50_ms"] / med["off"]["p50_ms"], 3),
                "p99_ratio": round(med["on"]["p99_ms"] / med["off"]["p99_ms"], 3),
                "rps_ratio": round(med["on"]["rps"] / med["off"]["rps"], 3),
            }
        )
    return out


def render(report: dict[str, Any]) -> str:
    env = report["environment"]
    head = (
        f"Hybrid `retrieve` over NATS, one owner with {report['size']:,} memories, {report['requests']} requests per "
        f"concurrency, {report['rounds']} interleaved rounds per mode (median shown); {env['cpus']} CPUs, "
        f"{env['at']}, load average {env['load_average_1m_5m_15m'][0]} at the end (other work on the machine "
        "moves these figures more than tracing does). `on` exports every span over OTLP/HTTP; ratio = on / off."
    )
    table = markdown_table(
        ["c", "p50 off", "p50 on", "p50 ratio", "p99 off", "p99 on", "p99 ratio",
         "req/s off", "req/s on", "req/s ratio"],
        [
            [s["c"], s["p50_ms_off"], s["p50_ms_on"], s["p50_ratio"], s["p99_ms_off"], s["p99_ms_on"], s["p99_ratio"],
             s["rps_off"], s["rps_on"], s["rps_ratio"]]
            for s in report["summary"]
        ],
    )  # fmt: skip
    return f"{head}\n\n{table}\n"
