"""Which charts the benchmark docs show, and which fields of each saved report they draw.

``figures(name, report)`` turns one ``bench-results/<name>.json`` into its charts (pure: the
SVG text is returned, ``bench.docs`` writes it under docs/charts/ and links it from the
benchmark's region). A benchmark without charts gives an empty list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.charts import Series, bar_chart, line_chart, number
from bench.latency import as_default


@dataclass(frozen=True)
class Figure:
    name: str  # the file stem under docs/charts/
    alt: str  # the image's alt text in the document
    svg: str


Report = Mapping[str, Any]


def embed_figures(report: Report) -> list[Figure]:
    """Texts per second against worker processes, memoryd's embed service beside raw onnxruntime."""
    ceiling = report["ceiling"]
    service = {int(s["workers"]): float(s["texts_per_s"]) for s in report["service"]}
    raw = {1: float(ceiling["texts_per_s"])}
    if two := ceiling.get("two_processes"):
        raw[int(two["processes"])] = float(two["texts_per_s"])
    counts = sorted(set(service) | set(raw))
    opts, cpus = report["options"], report["environment"].get("cpus")
    title = "Embedding throughput against worker processes"
    svg = bar_chart(
        title,
        [f"{n} process{'es' if n > 1 else ''}" for n in counts],
        [
            Series("memoryd embed workers (job published -> vector stored)", tuple(service.get(n) for n in counts), 0),
            Series(
                f"raw onnxruntime, batch {opts['batch']}, same model and threads", tuple(raw.get(n) for n in counts), 1
            ),
        ],
        y_label="texts per second",
        x_label=f"processes at once ({cpus} CPUs)",
        subtitle=f"{opts['texts']:,} texts; the 1-process onnxruntime bar is the ceiling "
        "(mean of the runs before and after)",
        value_digits=0,
    )
    return [Figure("embed-throughput", title, svg)]


#: How the ingest report's process names read on the chart.
PROCESS_NAMES = {"postgres": "PostgreSQL", "nats": "nats-server", "bench": "benchmark client"}


def ingest_figures(report: Report) -> list[Figure]:
    """CPU per chat event by process, one bar per JetStream ``sync_interval``."""
    runs = report["runs"]
    processes = sorted(runs[0]["cpu_seconds"], key=lambda p: -float(runs[0]["cpu_seconds"][p]))
    series = [
        Series(
            f"sync_interval {r['nats_sync_interval']}: {r['events_per_s']:.1f} events/s end to end",
            tuple(1000 * float(r["cpu_seconds"].get(p, 0.0)) / int(r["events"]) for p in processes),
            i,
        )
        for i, r in enumerate(runs)
    ]
    title = "Ingest + extract: CPU time per chat event by process"
    svg = bar_chart(
        title,
        [PROCESS_NAMES.get(p, p) for p in processes],
        series,
        y_label="CPU ms per event",
        x_label="process",
        subtitle=f"{int(runs[0]['events']):,} chat events drained from a backlog to committed turns and facts",
        value_digits=2,
    )
    return [Figure("ingest-cpu", title, svg)]


def _per_owner(scenario: str) -> int:
    """``1 owner x 10,000`` -> 10000 (the scenario names are the report's only record of the size)."""
    return int(scenario.rsplit(" x ", 1)[1].replace(",", ""))


def _latency_lookup(report: Report) -> dict[tuple[str, str, str, int], Mapping[str, Any]]:
    return {(r["scenario"], as_default(r["strategy"]), r["path"], int(r["c"])): r for r in report["rows"]}


def _latency_by_size(report: Report) -> Figure:
    rows = _latency_lookup(report)
    scenarios = sorted({r["scenario"] for r in report["rows"]}, key=_per_owner)
    sizes = [_per_owner(s) for s in scenarios]
    lines = [
        ("hybrid (memoryd)", "hybrid", "service", 0),
        ("vector tier alone", "semantic", "service", 1),
        ("keyword tier (in-process)", "keyword", "floor probe", 2),
    ]
    series = []
    for label, strategy, path, color in lines:
        for pct, dashed in (("p50", False), ("p99", True)):
            values = tuple(
                float(row[f"{pct}_ms"]) if (row := rows.get((s, strategy, path, 1))) else None for s in scenarios
            )
            series.append(Series(label, values, color, dashed))
    owners = {_per_owner(s): s.split(" x ")[0] for s in scenarios}
    ticks = [number(n) + (f" ({owners[n]})" if not owners[n].startswith("1 owner") else "") for n in sizes]
    title = "Retrieval latency against memories per owner"
    svg = line_chart(
        title,
        sizes,
        series,
        x_label="memories per owner (log scale)",
        y_label="milliseconds",
        subtitle="one request at a time over NATS (query vectors cached); "
        f"{report['memories']:,} memories in one table",
        log_x=True,
        x_tick_labels=ticks,
        line_styles=(("p50", False), ("p99", True)),
    )
    return Figure("latency-by-owner-size", title, svg)


def _throughput_by_concurrency(report: Report) -> Figure:
    rows = _latency_lookup(report)
    scenarios = sorted({r["scenario"] for r in report["rows"]}, key=_per_owner)
    levels = sorted(
        {int(r["c"]) for r in report["rows"] if as_default(r["strategy"]) == "hybrid" and r["path"] == "service"}
    )
    series = []
    for color, scenario in enumerate(scenarios):
        for path, dashed in (("service", False), ("floor", True)):
            values = tuple(
                float(row["rps"]) if (row := rows.get((scenario, "hybrid", path, c))) else None for c in levels
            )
            series.append(Series(scenario, values, color, dashed))
    title = "Hybrid retrieval throughput against concurrency"
    svg = line_chart(
        title,
        levels,
        series,
        x_label="requests in flight (log scale)",
        y_label="requests per second",
        subtitle="hybrid search; the floor is the retrieve engine run in the benchmark's own process",
        log_x=True,
        line_styles=(("retrieve service over NATS", False), ("floor", True)),
    )
    return Figure("latency-throughput", title, svg)


def latency_figures(report: Report) -> list[Figure]:
    return [_latency_by_size(report), _throughput_by_concurrency(report)]


def _category_label(category: str, n: Any) -> str:
    name = category.split(" ", 1)[1] if category[:1].isdigit() else category
    return f"{name}\n({n} questions)"


def quality_figures(report: Report) -> list[Figure]:
    """LoCoMo R@10 per question category, one bar per retrieval strategy (default settings)."""
    runs = [r for r in report["runs"] if r["variant"] == "default"]
    categories = list(runs[0]["scores"])
    names = {"hybrid": "hybrid (memoryd)", "semantic": "vector tier alone", "keyword": "keyword tier alone"}
    series = [
        Series(
            names.get(r["strategy"], r["strategy"]),
            tuple(float(r["scores"][c]["R@10"]) if c in r["scores"] else None for c in categories),
            i,
        )
        for i, r in enumerate(runs)
    ]
    title = "LoCoMo recall@10 by question category and strategy"
    svg = bar_chart(
        title,
        [_category_label(c, runs[0]["scores"][c]["n"]) for c in categories],
        series,
        y_label="share of evidence turns in the top 10",
        subtitle=f"{report['questions']} questions over {len(report['conversations'])} conversations, "
        "asked through the retrieve service with default settings",
        value_digits=2,
    )
    return [Figure("quality-recall", title, svg)]


#: The figures compared in ``make bench-peers``, in chart order, with their axis labels.
PEER_FIGURES: Sequence[tuple[str, str]] = (
    ("add_to_searchable_per_s", "adds/s until\nsearchable"),
    ("qps_c1", "queries/s\n1 in flight"),
    ("qps_c16", "queries/s\n16 in flight"),
    ("hit_rate", "hit rate"),
    ("search_p50_ms", "search p50 ms\n(lower is better)"),
    ("search_p99_ms", "search p99 ms\n(lower is better)"),
    ("cold_p50_ms", "cold p50 ms\n(lower is better)"),
)


def peers_figures(report: Report) -> list[Figure]:
    """memoryd / mem0 per figure and corpus size; 1 is parity."""
    sizes = report["sizes"]
    series = [
        Series(
            f"{int(s['memories']):,} memories of one owner",
            tuple(float(s["ratios"][k]) if k in s["ratios"] else None for k, _ in PEER_FIGURES),
            i,
        )
        for i, s in enumerate(sizes)
    ]
    title = f"memoryd / mem0 {report.get('mem0_version', '')} per figure".replace("  ", " ")
    svg = bar_chart(
        title,
        [label for _, label in PEER_FIGURES],
        series,
        y_label="memoryd / mem0",
        subtitle="same corpus, questions and MiniLM; above 1: memoryd's figure is higher",
        value_digits=2,
        reference=1.0,
        reference_label="memoryd = mem0 (ratio 1)",
    )
    return [Figure("peers-ratios", title, svg)]


BUILDERS: dict[str, Callable[[Report], list[Figure]]] = {
    "embed": embed_figures,
    "ingest": ingest_figures,
    "latency": latency_figures,
    "quality": quality_figures,
    "peers": peers_figures,
}


def figures(name: str, report: Report) -> list[Figure]:
    """The charts of benchmark ``name`` drawn from its report (none for most reliability reports)."""
    builder = BUILDERS.get(name)
    return builder(report) if builder else []
