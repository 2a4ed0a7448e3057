"""`python -m bench embed`: the embed service against the raw inference ceiling, on the same texts.

On deterministic sentences (`generate_texts`): the ceiling (`python -m bench.ceiling`: tokenizer,
ONNX Runtime and pooling alone in a process, before and after the service runs and with two
processes at once); the service end to end with 1 and 2 worker processes (one `EmbedJob` per
memory, the clock stopping when the last vector is written, after a warm-up batch); and query
embeddings over `mem.v1.rpc.embed` at concurrency 1 and 32, misses and cache hits (p50/p99).
Embedded NATS + PostgreSQL run in a temp dir (`harness.embedded_servers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from nats.aio.client import Client
from prometheus_client.parser import text_string_to_metric_families

from bench.harness import embedded_servers, peak_rss_mb, proc_cpu, self_cpu, servers_cpu, wait_until
from bench.locomo import percentile
from bench.report import environment, markdown_table, rss_budget
from memoryd.codec import encode
from memoryd.connect import connect
from memoryd.local.supervisor import Supervisor, child_env
from memoryd.rpc import call
from memoryd.schemas import EmbedJob
from memoryd.schemas.retrieval import EmbedRequest
from memoryd.subjects import EMBED_JOBS
from shared.db.memories import content_hash
from shared.settings.env import NatsConfig

Log = Callable[[str], None]
WARMUP_OWNER = "bench-warmup"
EMBED_METRICS = "memoryd_embed"  # the samples `scrape` keeps from a worker's metrics page
TARGET_ONE_WORKER = 0.85
TARGET_TWO_WORKERS = 1.6


# --- texts -----------------------------------------------------------------------------------
_PEOPLE = ["I", "My sister", "Our team lead", "The client", "My manager", "Priya", "Jonas", "Mei", "Carlos", "We"]
_DRINKS = ["green tea", "oat milk lattes", "black coffee", "sparkling water", "chai", "espresso"]
_FOODS = ["spicy food", "dairy", "red meat", "sugary snacks", "gluten", "raw onions", "seafood"]
_TECH = ["PostgreSQL", "TypeScript", "Rust", "NATS", "Kubernetes", "FastAPI", "SQLite", "React", "Terraform"]
_PROJECTS = ["billing service", "mobile app", "data pipeline", "internal dashboard", "search backend", "CLI tool"]
_REASONS = [
    "it is easier to hire for",
    "the latency budget is tight",
    "the team already knows it well",
    "it keeps operations simple",
    "the licence fits our needs",
    "the last prototype went well",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MONTHS = ["January", "March", "May", "July", "September", "October", "December"]
_PLACES = ["the lake", "Mount Rainier", "the old harbour", "Lisbon", "the national park", "Kyoto", "the coast"]
_ANIMALS = [("Biscuit", "dog"), ("Luna", "cat"), ("Pepper", "parrot"), ("Mochi", "rabbit"), ("Rex", "tortoise")]
_TASKS = [
    "renew the passport",
    "book the dentist",
    "send the quarterly report",
    "call the landlord",
    "water the plants",
    "back up the laptop",
    "pay the electricity bill",
]
_TOPICS = ["budget review", "product roadmap", "hiring plan", "security audit", "vendor contract", "launch checklist"]
_CATEGORIES = [
    ("book", ["Dune", "Middlemarch", "The Left Hand of Darkness", "Beloved"]),
    ("film", ["Spirited Away", "Alien", "Amélie", "The Godfather"]),
    ("band", ["Radiohead", "ABBA", "Daft Punk", "Nina Simone's trio"]),
    ("city", ["Porto", "Montreal", "Seoul", "Edinburgh"]),
]


def _sentence(rng: random.Random) -> str:
    person = rng.choice(_PEOPLE)
    kind = rng.randrange(9)
    if kind == 0:
        return (
            f"{person} prefers {rng.choice(_DRINKS)} in the morning and avoids {rng.choice(_FOODS)} "
            f"after {rng.randint(6, 10)} pm."
        )
    if kind == 1:
        return f"We decided to use {rng.choice(_TECH)} for the {rng.choice(_PROJECTS)} because {rng.choice(_REASONS)}."
    if kind == 2:
        return (
            f"The meeting about the {rng.choice(_TOPICS)} moved to {rng.choice(_DAYS)} at {rng.randint(8, 17)}:"
            f"{rng.choice(['00', '15', '30', '45'])}."
        )
    if kind == 3:
        name, animal = rng.choice(_ANIMALS)
        return f"{name}, the family {animal}, had a vet appointment last {rng.choice(_DAYS)} and is doing fine."
    if kind == 4:
        return f"Remind me to {rng.choice(_TASKS)} before {rng.choice(_DAYS)}."
    if kind == 5:
        return f"I'm allergic to {rng.choice(_FOODS)}, so keep it out of any recipe you suggest."
    if kind == 6:
        return (
            f"{person} went hiking near {rng.choice(_PLACES)} in {rng.choice(_MONTHS)} "
            f"and wants to go back with {rng.choice(_PEOPLE).lower()} next year."
        )
    if kind == 7:
        category, items = rng.choice(_CATEGORIES)
        return f"My favourite {category} is {rng.choice(items)}, mostly because {rng.choice(_REASONS)}."
    return (
        f"{person} usually works from home on {rng.choice(_DAYS)}s and keeps {rng.choice(_DAYS)} "
        f"afternoons free for the {rng.choice(_PROJECTS)}."
    )


def generate_texts(n: int, seed: int = 20261129) -> list[str]:
    """`n` distinct, realistic memory-like texts of one to three sentences, always the same."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        text = " ".join(_sentence(rng) for _ in range(rng.choice((1, 1, 1, 2, 2, 3))))
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


# --- options and plumbing --------------------------------------------------------------------
@dataclass(frozen=True)
class EmbedBenchOptions:
    texts: int = 3000
    batch: int = 16  # the embed service default (MEMORYD_EMBED_BATCH_MAX)
    workers: tuple[int, ...] = (1, 2)
    queries: int = 400  # distinct texts per concurrency level
    concurrency: tuple[int, ...] = (1, 32)
    quantization: str = "none"
    log_dir: Path | None = None


async def _ceiling(texts_file: Path, opts: EmbedBenchOptions, cache_dir: Path, processes: int = 1) -> dict[str, Any]:
    argv = [
        sys.executable,
        "-m",
        "bench.ceiling",
        "--texts",
        str(texts_file),
        "--batch",
        str(opts.batch),
        "--quantization",
        opts.quantization,
        "--cache-dir",
        str(cache_dir),
    ]

    async def one() -> dict[str, Any]:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"ceiling run failed: {err.decode(errors='replace')[-2000:]}")
        result: dict[str, Any] = json.loads(out)
        return result

    runs = await asyncio.gather(*(one() for _ in range(processes)))
    texts = sum(r["texts"] for r in runs)
    seconds = max(r["seconds"] for r in runs)
    return {"processes": processes, "texts_per_s": texts / seconds, "runs": runs}


async def _insert(pool: asyncpg.Pool, owner_of: Callable[[int], str], texts: Sequence[str]) -> list[EmbedJob]:
    rows = await pool.fetch(
        "INSERT INTO memories (id, owner, type, content, source, content_hash)"
        " SELECT gen_random_uuid(), o, 'factual', c, 'api', h"
        " FROM unnest($1::text[], $2::text[], $3::text[]) AS t(o, c, h) RETURNING id, owner, content_hash",
        [owner_of(i) for i in range(len(texts))],
        list(texts),
        [content_hash(t) for t in texts],
    )
    return [EmbedJob(memory_id=str(r["id"]), owner=r["owner"], content_hash=r["content_hash"]) for r in rows]


async def _publish(nc: Client, jobs: Sequence[EmbedJob], chunk: int = 500) -> None:
    js = nc.jetstream()
    for i in range(0, len(jobs), chunk):
        await asyncio.gather(*(js.publish(EMBED_JOBS, encode(j)) for j in jobs[i : i + chunk]))


async def _wait_vectors(pool: asyncpg.Pool, sql: str, expected: int, timeout: float) -> None:
    async def stored() -> bool:
        return bool(await pool.fetchval(sql) >= expected)

    await wait_until(stored, timeout, interval=0.1, what=f"{expected} vectors stored")


async def scrape(url: str, prefix: str = "") -> dict[str, float]:
    """`name{k=v,...}` -> value of every sample on a metrics page whose name starts with
    `prefix` (histogram buckets left out)."""
    async with httpx.AsyncClient(timeout=5) as client:
        text = (await client.get(url)).text
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith(prefix) and "le" not in sample.labels:
                labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                out[f"{sample.name}{{{labels}}}"] = float(sample.value)
    return out


def _delta(after: Mapping[str, float], before: Mapping[str, float], key: str) -> float:
    return after.get(key, 0) - before.get(key, 0)


@contextlib.asynccontextmanager
async def _workers(nats_url: str, dsn: str, n: int, opts: EmbedBenchOptions, cache_dir: Path, tag: str) -> Any:
    """`n` worker processes (stderr to `<log_dir or the model dir's parent>/logs`), stopped on exit."""
    log_dir = opts.log_dir or cache_dir.parent / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    env = child_env(
        {
            "MEMORYD_NATS_URL": nats_url,
            "MEMORYD_PG_DSN": dsn,
            "MEMORYD_METRICS_PORT": "0",
            "MEMORYD_LOG_LEVEL": "warning",
            "MEMORYD_EMBED_BATCH_MAX": str(opts.batch),
            "MEMORYD_EMBED_QUANTIZATION": opts.quantization,
            "MEMORYD_EMBED_MODEL_CACHE_DIR": str(cache_dir),
            "MEMORYD_EMBED_SOURCE": "local",
        }
    )
    sup = Supervisor(env)
    for i in range(n):
        sup.add("embed", i, log_path=log_dir / f"embed-{tag}-{i}.log")
    try:
        await sup.start_all()
        yield sup
    finally:
        await sup.stop_all()


async def _reset(pool: asyncpg.Pool) -> None:
    await pool.execute("TRUNCATE memory_embeddings")
    await pool.execute("UPDATE memories SET needs_reindex = true, embedding_signature = NULL")


@dataclass(frozen=True)
class CpuProbe:
    """Where CPU time goes during a run: the workers, PostgreSQL (all backends), nats-server, us."""

    pg_data: Path | None
    nats_dir: Path | None

    def snapshot(self, worker_pids: Sequence[int]) -> dict[str, float]:
        out = {"workers": sum(proc_cpu(p) for p in worker_pids), "bench": self_cpu()}
        return out | servers_cpu(self.pg_data, self.nats_dir, nats_file=None)


async def _service_run(
    nc: Client,
    pool: asyncpg.Pool,
    nats_url: str,
    dsn: str,
    jobs: Sequence[EmbedJob],
    warmup: Sequence[EmbedJob],
    workers: int,
    opts: EmbedBenchOptions,
    cache_dir: Path,
    probe: CpuProbe,
) -> dict[str, Any]:
    await _reset(pool)
    async with _workers(nats_url, dsn, workers, opts, cache_dir, f"w{workers}") as sup:
        per_worker = warmup[: 64 * workers]
        await _publish(nc, per_worker)
        await _wait_vectors(
            pool, f"SELECT count(*) FROM memory_embeddings WHERE owner = '{WARMUP_OWNER}'", len(per_worker), 120
        )
        pids = [c.proc.pid for c in sup.children if c.proc is not None]
        before = [await scrape(c.metrics_url, EMBED_METRICS) for c in sup.children]
        cpu_before = probe.snapshot(pids)
        started = time.perf_counter()
        await _publish(nc, jobs)
        await _wait_vectors(
            pool, f"SELECT count(*) FROM memory_embeddings WHERE owner <> '{WARMUP_OWNER}'", len(jobs), 600
        )
        seconds = time.perf_counter() - started
        cpu_after = probe.snapshot(pids)
        after = [await scrape(c.metrics_url, EMBED_METRICS) for c in sup.children]
        peak_rss = [peak_rss_mb(pid) for pid in pids]
    key_texts = "memoryd_embed_texts_total{path=job}"
    key_bsum, key_bcount = "memoryd_embed_batch_texts_sum{}", "memoryd_embed_batch_texts_count{}"
    key_isum = "memoryd_embed_inference_seconds_sum{}"
    pairs = list(zip(after, before, strict=True))
    share = [_delta(a, b, key_texts) for a, b in pairs]
    batches = sum(_delta(a, b, key_bcount) for a, b in pairs)
    texts_in_batches = sum(_delta(a, b, key_bsum) for a, b in pairs)
    inference = sum(_delta(a, b, key_isum) for a, b in pairs)
    cpu = {k: (cpu_after[k] - cpu_before.get(k, 0.0)) * 1000 / len(jobs) for k in cpu_after}
    return {
        "workers": workers,
        "texts": len(jobs),
        "seconds": seconds,
        "texts_per_s": len(jobs) / seconds,
        "texts_per_worker": share,
        "mean_batch": texts_in_batches / batches if batches else None,
        "inference_ms_per_text": inference * 1000 / len(jobs),
        "cpu_ms_per_text": cpu,
        "peak_rss_mb_per_worker": peak_rss,
    }


async def _latency(nc: Client, texts: Sequence[str], concurrency: int) -> dict[str, Any]:
    queue = list(texts)
    latencies: list[float] = []
    started = time.perf_counter()

    async def client() -> None:
        while queue:
            text = queue.pop()
            t0 = time.perf_counter()
            await call(nc, "embed", EmbedRequest(texts=[text]), timeout=30)
            latencies.append((time.perf_counter() - t0) * 1000)

    await asyncio.gather(*(client() for _ in range(concurrency)))
    seconds = time.perf_counter() - started
    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "requests_per_s": len(latencies) / seconds,
    }


async def _query_runs(
    nc: Client, nats_url: str, dsn: str, texts: Sequence[str], opts: EmbedBenchOptions, cache_dir: Path
) -> list[dict[str, Any]]:
    results = []
    async with _workers(nats_url, dsn, 1, opts, cache_dir, "query") as sup:
        await _latency(nc, [f"warm-up query {i}" for i in range(20)], 1)
        offset = 0
        for conc in opts.concurrency:
            segment = texts[offset : offset + opts.queries]
            offset += opts.queries
            before = await scrape(sup.children[0].metrics_url, EMBED_METRICS)
            run = await _latency(nc, segment, conc)
            after = await scrape(sup.children[0].metrics_url, EMBED_METRICS)
            n = _delta(after, before, "memoryd_embed_batch_texts_count{}")
            s = _delta(after, before, "memoryd_embed_batch_texts_sum{}")
            results.append({**run, "cached": False, "mean_batch": s / n if n else None})
            cached = await _latency(nc, segment, conc)
            results.append({**cached, "cached": True, "mean_batch": None})
    return results


# --- the run ---------------------------------------------------------------------------------
async def run_embed_bench(opts: EmbedBenchOptions, log: Log) -> dict[str, Any]:
    all_texts = generate_texts(opts.texts + opts.queries * len(opts.concurrency))
    texts, query_texts = all_texts[: opts.texts], all_texts[opts.texts :]
    report: dict[str, Any] = {"environment": environment(), "options": {**opts.__dict__, "log_dir": None}}
    report["environment"]["loadavg_before"] = os.getloadavg()  # other work on the machine skews texts/s
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-embed-") as tmp:
        work = Path(tmp)
        texts_file = work / "texts.json"
        texts_file.write_text(json.dumps(texts), encoding="utf-8")
        cache_dir = work / "models"
        log(f"ceiling: {len(texts)} texts, batch {opts.batch}, 1 process")
        ceilings = [await _ceiling(texts_file, opts, cache_dir)]
        async with embedded_servers(work / "stack") as servers:
            pool = await asyncpg.create_pool(servers.pg_dsn, min_size=1, max_size=4)
            nc = await connect(NatsConfig(url=servers.nats_url), "bench-embed")
            probe = CpuProbe(servers.pg_data, servers.nats_dir)
            try:
                jobs = await _insert(pool, lambda i: f"owner-{i % 50}", texts)
                warm_texts = [f"warm-up memory number {i}: {t}" for i, t in enumerate(texts[: 64 * max(opts.workers)])]
                warmup = await _insert(pool, lambda _i: WARMUP_OWNER, warm_texts)
                services = []
                for n in opts.workers:
                    log(f"service: {n} worker process(es), {len(jobs)} jobs")
                    services.append(
                        await _service_run(
                            nc, pool, servers.nats_url, servers.pg_dsn, jobs, warmup, n, opts, cache_dir, probe
                        )
                    )
                log("ceiling again, and with 2 processes at once")
                ceilings.append(await _ceiling(texts_file, opts, cache_dir))
                two = await _ceiling(texts_file, opts, cache_dir, processes=2)
                log(f"query RPC latency: {opts.queries} distinct texts per level, concurrency {opts.concurrency}")
                queries = await _query_runs(nc, servers.nats_url, servers.pg_dsn, query_texts, opts, cache_dir)
            finally:
                await nc.close()
                await pool.close()
    report["environment"]["loadavg_after"] = os.getloadavg()
    ceiling = sum(c["texts_per_s"] for c in ceilings) / len(ceilings)
    one = next((s for s in services if s["workers"] == 1), None)
    for s in services:
        s["ratio_to_ceiling"] = s["texts_per_s"] / ceiling
        s["speedup_vs_one_worker"] = s["texts_per_s"] / one["texts_per_s"] if one else None
    report |= {
        "ceiling": {"texts_per_s": ceiling, "runs": ceilings, "two_processes": two},
        "service": services,
        "queries": queries,
    }
    report["targets"] = _targets(report)
    return report


def _targets(report: dict[str, Any]) -> dict[str, Any]:
    by_workers = {s["workers"]: s for s in report["service"]}
    out: dict[str, Any] = {}
    if 1 in by_workers:
        ratio = by_workers[1]["ratio_to_ceiling"]
        out["one_worker_ratio"] = {"target": TARGET_ONE_WORKER, "measured": ratio, "met": ratio >= TARGET_ONE_WORKER}
    if 1 in by_workers and 2 in by_workers:
        speedup = by_workers[2]["speedup_vs_one_worker"]
        out["two_worker_speedup"] = {
            "target": TARGET_TWO_WORKERS,
            "measured": speedup,
            "met": speedup >= TARGET_TWO_WORKERS,
        }
    return out


def _rss_note(peaks: Sequence[float | None] | None) -> str:
    """``; peak RSS per worker 180 + 182 MB`` (nothing when not measured)."""
    known = [p for p in peaks or () if p is not None]
    return f"; peak RSS per worker {' + '.join(f'{p:.0f}' for p in known)} MB" if known else ""


def _rss_target(report: dict[str, Any]) -> str:
    """Whether every worker of every run stayed within the embed budget (nothing when not measured)."""
    peaks = [p for s in report["service"] for p in s.get("peak_rss_mb_per_worker") or () if p is not None]
    if not peaks:
        return ""
    budget, worst = rss_budget("embed"), max(peaks)
    return (
        f"Target: peak resident memory of an embed worker <= {budget:.0f} MB: largest measured {worst:.0f} MB "
        f"({'met' if worst <= budget else 'NOT met'})."
    )


def render(report: dict[str, Any]) -> str:
    """The markdown tables of a report (what docs/benchmarks.md shows)."""
    opts = report["options"]
    ceiling = report["ceiling"]
    rows: list[list[Any]] = [
        [f"raw onnxruntime, batch {opts['batch']}, 1 process (the ceiling)", ceiling["texts_per_s"], 1.0, "—"],
    ]
    for s in report["service"]:
        split = " + ".join(f"{int(x)}" for x in s["texts_per_worker"])
        rows.append(
            [
                f"service, {s['workers']} worker process(es), job published -> vector stored",
                s["texts_per_s"],
                s["ratio_to_ceiling"],
                (f"mean batch {s['mean_batch']:.1f}; texts per worker {split}" if s["mean_batch"] else split)
                + _rss_note(s.get("peak_rss_mb_per_worker")),
            ]
        )
    two = ceiling["two_processes"]
    rows.append(
        [
            f"raw onnxruntime, batch {opts['batch']}, 2 processes at once (2-core reference)",
            two["texts_per_s"],
            two["texts_per_s"] / ceiling["texts_per_s"],
            "—",
        ]
    )
    runs = ", ".join(f"{c['texts_per_s']:.0f}" for c in ceiling["runs"])
    env = report["environment"]
    load = f"load average {env['loadavg_before'][0]:.1f} before, {env['loadavg_after'][0]:.1f} after"
    parts = [
        f"Embedding throughput, {opts['texts']} texts ({env['cpus']} CPUs, {load}; "
        f"ceiling = mean of runs before/after the service: {runs} texts/s)",
        "",
        markdown_table(["measurement", "texts/s", "ratio to ceiling", "notes"], rows, digits=2),
    ]
    targets = report.get("targets", {})
    if "one_worker_ratio" in targets:
        t = targets["one_worker_ratio"]
        parts.append(
            f"\nTarget: one worker >= {t['target']:.2f} of the ceiling: measured {t['measured']:.2f} "
            f"({'met' if t['met'] else 'NOT met'})."
        )
    if "two_worker_speedup" in targets:
        t = targets["two_worker_speedup"]
        parts.append(
            f"Target: two workers >= {t['target']:.1f}x one worker: measured {t['measured']:.2f}x "
            f"({'met' if t['met'] else 'NOT met'})."
        )
    if rss := _rss_target(report):
        parts.append(rss)
    parts += ["", _cpu_table(report)]
    qrows = [
        [
            q["concurrency"],
            "hit" if q["cached"] else "miss",
            q["requests"],
            q["p50_ms"],
            q["p99_ms"],
            q["requests_per_s"],
            q["mean_batch"] if q["mean_batch"] is not None else "—",
        ]
        for q in report["queries"]
    ]
    parts += [
        "",
        "Query embeddings (`mem.v1.rpc.embed`, one text per request, 1 worker process)",
        "",
        markdown_table(["concurrency", "cache", "requests", "p50 ms", "p99 ms", "requests/s", "mean batch"], qrows, 2),
    ]
    return "\n".join(parts)


def _cpu_table(report: dict[str, Any]) -> str:
    """CPU milliseconds per text by process, ceiling vs service: load-independent, unlike texts/s."""
    ceiling_cpu = [r["cpu_ms_per_text"] for c in report["ceiling"]["runs"] for r in c["runs"]]
    c_ms = sum(ceiling_cpu) / len(ceiling_cpu) if ceiling_cpu else math.nan
    services = report["service"]
    names = [("workers", "embed process(es) (inference + service)"), ("postgres", "PostgreSQL (all backends)")]
    names += [("nats", "nats-server"), ("bench", "benchmark client (publish + poll)")]
    rows: list[list[Any]] = []
    for key, label in names:
        first = c_ms if key == "workers" else None
        rows.append([label, first, *[s["cpu_ms_per_text"].get(key) for s in services]])
    totals = [sum(s["cpu_ms_per_text"].values()) for s in services]
    rows.append(["total", c_ms, *totals])
    cpus = report["environment"]["cpus"] or 1
    rows.append([f"CPU-bound limit on {cpus} CPUs (texts/s)", cpus * 1000 / c_ms, *[cpus * 1000 / t for t in totals]])
    headers = ["CPU ms per text", "ceiling", *[f"service, {s['workers']} worker(s)" for s in services]]
    return "CPU time per text (user+sys, all threads)\n\n" + markdown_table(headers, rows, digits=2)
