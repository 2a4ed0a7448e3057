"""Reading a ``/metrics`` page in tests: every sample as ``{(name, labels): value}``."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Sample = tuple[str, frozenset[tuple[str, str]]]


def scrape(url: str) -> dict[Sample, float]:
    with urllib.request.urlopen(url, timeout=5) as reply:
        text = reply.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: dict[Sample, float], name: str, **labels: str) -> float:
    """The sample ``name`` whose labels include ``labels`` (summed over the rest); 0 when absent."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)
