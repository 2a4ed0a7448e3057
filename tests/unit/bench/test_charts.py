"""The SVG charts of the benchmark docs: valid SVG, axes that hold the data, points where the values are, same bytes."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bench.charts import HEIGHT, WIDTH, Series, bar_chart, line_chart, number, text_width, value_axis
from bench.figures import figures
from bench.latency import DEFAULT_KEYWORD_INDEX

ROOT = Path(__file__).resolve().parents[3]
NS = {"svg": "http://www.w3.org/2000/svg"}


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert (root.get("width"), root.get("height")) == (str(WIDTH), str(HEIGHT))
    return root


def plot_box(root: ET.Element) -> tuple[float, float, float, float]:
    (rect,) = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("class") == "plot"]
    x, y = float(rect.get("x", "")), float(rect.get("y", ""))
    return x, y, x + float(rect.get("width", "")), y + float(rect.get("height", ""))


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]


def latency_chart() -> str:
    return line_chart(
        "Latency <p50 & p99>",
        [1_000, 10_000, 100_000],
        [
            Series("hybrid", (8.86, 10.88, 18.61)),
            Series("hybrid", (17.63, 17.15, 41.33), dashed=True),
            Series("vector", (3.59, None, 3.64), color=1),
        ],
        x_label="memories per owner",
        y_label="ms",
        log_x=True,
        line_styles=(("p50", False), ("p99", True)),
    )


@pytest.mark.parametrize(
    "values",
    [[0.42, 41.33], [86.46, 197.44], [0.709, 2.218], [-3.0, 5.0], [5.0, 5.0], [0.0], [1e-4, 3e-4], [1316.7, 2727.9]],
)
def test_a_value_axis_starts_at_zero_holds_every_value_and_steps_evenly(values: list[float]) -> None:
    axis = value_axis(values)
    assert axis.lo <= min([0.0, *values]) and axis.hi >= max(values)
    assert axis.lo <= 0.0 <= axis.hi
    steps = {round(b - a, 9) for a, b in zip(axis.ticks, axis.ticks[1:], strict=False)}
    assert len(steps) == 1 and 3 <= len(axis.ticks) - 1 <= 10
    (step,) = steps
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 6) in (1.0, 2.0, 2.5, 5.0)


def test_numbers_are_formatted_the_same_way_every_time() -> None:
    assert [number(1000), number(100_000.0), number(0.25), number(2.5), number(0.1 + 0.2)] == [
        "1,000",
        "100,000",
        "0.25",
        "2.5",
        "0.3",
    ]
    assert [number(197.44, 0), number(0.892, 2), number(-1.5, 1)] == ["197", "0.89", "-1.5"]
    assert [number(t) for t in value_axis([0.709, 2.218]).ticks] == ["0", "0.5", "1", "1.5", "2", "2.5"]


def test_a_line_chart_is_svg_with_its_text_readable() -> None:
    root = parse(latency_chart())
    shown = texts(root)
    assert root.find("svg:title", NS) is not None and root.find("svg:title", NS).text == "Latency <p50 & p99>"  # type: ignore[union-attr]
    assert shown[0] == "Latency <p50 & p99>"
    assert {"hybrid", "vector", "p50", "p99", "memories per owner", "ms"} <= set(shown)
    assert {"1,000", "10,000", "100,000"} <= set(shown)  # x ticked at the measured points
    assert shown.count("hybrid") == 1  # series sharing a name share one legend entry
    assert "&lt;p50 &amp; p99&gt;" in latency_chart()


def test_line_points_sit_inside_the_plot_at_their_values() -> None:
    root = parse(latency_chart())
    left, top, right, bottom = plot_box(root)
    circles = {
        c.find("svg:title", NS).text: (float(c.get("cx", "")), float(c.get("cy", "")))  # type: ignore[union-attr]
        for c in root.iter("{http://www.w3.org/2000/svg}circle")
        if c.find("svg:title", NS) is not None
    }
    assert sorted(circles) == sorted(
        [
            "hybrid p50 at 1,000: 8.86",
            "hybrid p50 at 10,000: 10.88",
            "hybrid p50 at 100,000: 18.61",
            "hybrid p99 at 1,000: 17.63",
            "hybrid p99 at 10,000: 17.15",
            "hybrid p99 at 100,000: 41.33",
            "vector p50 at 1,000: 3.59",  # the None leaves a gap
            "vector p50 at 100,000: 3.64",
        ]
    )
    for cx, cy in circles.values():
        assert left < cx < right and top < cy < bottom
    axis = value_axis([8.86, 10.88, 18.61, 17.63, 17.15, 41.33, 3.59, 3.64], headroom=0.04)
    assert (axis.lo, axis.hi) == (0.0, 50.0)
    _, cy = circles["hybrid p99 at 100,000: 41.33"]
    assert cy == pytest.approx(bottom - (bottom - top) * 41.33 / 50.0, abs=0.1)
    # a log x axis: 10,000 is half way between 1,000 and 100,000
    xs = sorted({cx for cx, _ in circles.values()})
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1], abs=0.2)


def test_bars_stand_on_zero_with_their_values_written_on_them() -> None:
    svg = bar_chart(
        "Ratios",
        ["adds/s\nuntil searchable", "hit rate", "p50 ms"],
        [Series("10k", (0.892, 1.236, None)), Series("100k", (0.899, 1.262, 1.383), color=1)],
        y_label="memoryd / mem0",
        reference=1.0,
        reference_label="parity",
    )
    root = parse(svg)
    left, top, right, bottom = plot_box(root)
    bars = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.find("svg:title", NS) is not None]
    assert [b.find("svg:title", NS).text for b in bars] == [  # type: ignore[union-attr]
        "10k, adds/s until searchable: 0.89",
        "100k, adds/s until searchable: 0.90",
        "10k, hit rate: 1.24",
        "100k, hit rate: 1.26",
        "100k, p50 ms: 1.38",
    ]
    for b in bars:
        x, y, w, h = (float(b.get(k, "")) for k in ("x", "y", "width", "height"))
        assert left <= x and x + w <= right and top <= y
        assert y + h == pytest.approx(bottom, abs=0.11)  # on the zero line
    assert value_axis([0.892, 1.236, 0.899, 1.262, 1.383, 1.0], headroom=0.1).ticks == (0.0, 0.5, 1.0, 1.5, 2.0)
    tallest = max(bars, key=lambda b: float(b.get("height", "")))
    assert float(tallest.get("height", "")) == pytest.approx((bottom - top) * 1.383 / 2.0, abs=0.2)
    shown = texts(root)
    assert {"0.89", "0.90", "1.24", "1.26", "1.38", "parity", "adds/s", "until searchable"} <= set(shown)


def test_the_legend_stays_inside_the_canvas() -> None:
    long_names = [Series(f"series number {i} with a fairly long name", (float(i),), i) for i in range(6)]
    root = parse(bar_chart("Legend", ["one"], long_names, y_label="y"))
    legend = [t for t in root.iter("{http://www.w3.org/2000/svg}text") if (t.text or "").startswith("series number")]
    assert len(legend) == 6
    for t in legend:
        assert float(t.get("x", "")) + text_width(t.text or "", 11) <= WIDTH
    _, top, _, _ = plot_box(root)
    assert max(float(t.get("y", "")) for t in legend) < top


def test_the_same_report_gives_the_same_bytes_in_another_process() -> None:
    report = json.loads((ROOT / "bench-results" / "latency.json").read_text())
    ours = [f.svg for f in figures("latency", report)]
    assert ours == [f.svg for f in figures("latency", report)]
    code = (
        "import json, sys; from bench.figures import figures; "
        "r = json.load(open(sys.argv[1])); sys.stdout.write('\\x00'.join(f.svg for f in figures('latency', r)))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "bench-results" / "latency.json")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split("\x00") == ours


def test_each_report_draws_its_figures_from_its_own_numbers() -> None:
    def load(name: str) -> dict[str, object]:
        return json.loads((ROOT / "bench-results" / f"{name}.json").read_text())  # type: ignore[no-any-return]

    names = {n: [f.name for f in figures(n, load(n))] for n in ("embed", "ingest", "latency", "quality", "peers")}
    assert names == {
        "embed": ["embed-throughput"],
        "ingest": ["ingest-cpu"],
        "latency": ["latency-by-owner-size", "latency-throughput"],
        "quality": ["quality-recall"],
        "peers": ["peers-ratios"],
    }
    assert figures("sleep", load("sleep")) == []
    (embed,) = figures("embed", load("embed"))
    assert {"118", "197", "86", "161", "1 process", "2 processes"} <= set(texts(parse(embed.svg)))
    (quality,) = figures("quality", load("quality"))
    assert {"0.80", "0.55", "0.74", "multi-hop", "(142 questions)"} <= set(texts(parse(quality.svg)))
    size, _ = figures("latency", load("latency"))
    assert "1,000 (100 owners)" in texts(parse(size.svg))
    # the committed run measured both keyword tiers: the chart draws the default's rows only
    rows = {
        r["strategy"]: r
        for r in load("latency")["rows"]  # type: ignore[attr-defined]
        if r["scenario"] == "1 owner x 100,000" and r["path"] == "service" and r["c"] == 1
    }
    other = "statement" if DEFAULT_KEYWORD_INDEX == "memory" else "memory"
    ours, theirs = rows[f"hybrid [{DEFAULT_KEYWORD_INDEX}]"]["p99_ms"], rows[f"hybrid [{other}]"]["p99_ms"]
    assert f"<title>hybrid (memoryd) p99 at 100,000: {number(ours)}</title>" in size.svg
    assert ours == theirs or f"<title>hybrid (memoryd) p99 at 100,000: {number(theirs)}</title>" not in size.svg


@pytest.mark.parametrize("name", ["embed", "ingest", "latency", "quality", "peers"])
def test_every_label_of_the_committed_charts_fits_the_canvas(name: str) -> None:
    report = json.loads((ROOT / "bench-results" / f"{name}.json").read_text())
    for figure in figures(name, report):
        for t in parse(figure.svg).iter("{http://www.w3.org/2000/svg}text"):
            if t.get("transform"):  # the rotated y-axis title
                continue
            width = text_width(t.text or "", int(t.get("font-size", "")))
            x = float(t.get("x", ""))
            start = {"start": x, "middle": x - width / 2, "end": x - width}[t.get("text-anchor", "")]
            assert start >= 0 and start + width <= WIDTH, (figure.name, t.text)
