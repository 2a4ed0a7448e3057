"""`python -m bench embed`'s pure parts: the deterministic texts, percentiles, the report tables."""

from __future__ import annotations

from bench.embed import _targets, generate_texts, percentile, render


def test_texts_are_deterministic_distinct_and_sentence_like() -> None:
    a, b = generate_texts(500), generate_texts(500)
    assert a == b and len(set(a)) == 500
    assert generate_texts(600)[:500] == a  # a longer run starts with the same texts
    assert all(t[0].isupper() and t.endswith((".", "?")) for t in a)
    words = sorted(len(t.split()) for t in a)
    assert words[0] >= 6 and words[-1] <= 80


def test_percentile_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50 and percentile(values, 99) == 99 and percentile(values, 100) == 100
    assert percentile([3.0], 99) == 3.0


def _report() -> dict:  # type: ignore[type-arg]
    ceiling_run = {"texts": 1000, "seconds": 8.0, "texts_per_s": 125.0, "cpu_ms_per_text": 7.9}
    service = [
        {
            "workers": n,
            "texts_per_s": rate,
            "ratio_to_ceiling": rate / 125,
            "speedup_vs_one_worker": rate / 110,
            "texts_per_worker": [1000.0 / n] * n,
            "mean_batch": 31.5,
            "cpu_ms_per_text": {"workers": 8.1, "postgres": 0.6, "nats": 0.1, "bench": 0.3},
        }
        for n, rate in ((1, 110.0), (2, 190.0))
    ]
    report = {
        "environment": {"cpus": 2, "loadavg_before": (0.5, 0, 0), "loadavg_after": (1.9, 0, 0)},
        "options": {"batch": 32, "texts": 1000},
        "ceiling": {
            "texts_per_s": 125.0,
            "runs": [{"texts_per_s": 125.0, "runs": [ceiling_run]}],
            "two_processes": {"texts_per_s": 230.0},
        },
        "service": service,
        "queries": [
            {
                "concurrency": 1,
                "cached": False,
                "requests": 400,
                "p50_ms": 9.5,
                "p99_ms": 14.0,
                "requests_per_s": 100.0,
                "mean_batch": 1.0,
            },
        ],
    }
    report["targets"] = _targets(report)
    return report


def test_targets_and_render() -> None:
    report = _report()
    assert report["targets"]["one_worker_ratio"]["met"] is True  # 0.88 >= 0.85
    assert report["targets"]["two_worker_speedup"]["met"] is True  # 1.73 >= 1.6
    text = render(report)
    assert "| service, 1 worker process(es), job published -> vector stored | 110.00 | 0.88 |" in text
    assert "measured 1.73x (met)" in text
    assert "| total | 7.90 | 9.10 | 9.10 |" in text
    assert "| 1 | miss | 400 | 9.50 | 14.00 | 100.00 | 1.00 |" in text
