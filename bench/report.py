"""Markdown tables and JSON output shared by the benchmarks (the tables in docs/ are generated, not typed)."""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared.service_names import SERVICES


def fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 3) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(v, digits) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def environment() -> dict[str, Any]:
    """Where and when a benchmark ran (goes into every JSON report)."""
    import os

    return {
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "load_average_1m_5m_15m": [round(x, 2) for x in os.getloadavg()],
    }


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")


#: Peak resident memory each memoryd process should stay within (MB): an embed worker holds
#: the model and its activations, every other service only Python, its clients and buffers.
RSS_BUDGET_MB: dict[str, float] = {"embed": 200.0}
RSS_BUDGET_DEFAULT_MB = 100.0
#: The processes judged against a budget are the services (``SERVICES``); PostgreSQL, nats-server
#: and the benchmark are listed only.


def rss_budget(service: str) -> float:
    return RSS_BUDGET_MB.get(service, RSS_BUDGET_DEFAULT_MB)


def over_rss_budget(peaks: Mapping[str, float]) -> dict[str, float]:
    """The memoryd services among ``peaks`` (process name -> peak MB) above their budget."""
    return {name: mb for name, mb in peaks.items() if name in SERVICES and mb > rss_budget(name)}


def render_peak_rss(peaks: Mapping[str, float]) -> str:
    """``Peak resident memory (MB) per process: ingest 61, ...`` and whether the memoryd
    services among them stayed within budget (embed <= 200, every other <= 100)."""
    listed = ", ".join(f"{k} {v:.0f}" for k, v in peaks.items())
    if not any(name in SERVICES for name in peaks):
        return f"Peak resident memory (MB) per process: {listed}."
    over = over_rss_budget(peaks)
    verdict = "over: " + ", ".join(f"{k} {v:.0f} > {rss_budget(k):.0f}" for k, v in over.items()) if over else "met"
    budget = f"embed <= {rss_budget('embed'):.0f}, every other service <= {RSS_BUDGET_DEFAULT_MB:.0f}"
    return f"Peak resident memory (MB) per process: {listed}. Budget ({budget}): {verdict}."
