"""Peak resident memory as the benchmarks read it (``VmHWM`` from ``/proc/<pid>/status``) and
the per-service budgets the reports judge it by."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.harness import peak_rss_mb, status_mb
from bench.report import over_rss_budget, render_peak_rss, rss_budget

STATUS = """Name:\tpython
State:\tS (sleeping)
VmPeak:\t  912344 kB
VmHWM:\t  380928 kB
VmRSS:\t  204800 kB
Threads:\t4
"""


def test_status_fields_in_mb() -> None:
    assert status_mb(STATUS) == 372.0
    assert status_mb(STATUS, "VmRSS") == 200.0
    assert status_mb("Name:\tzombie\nState:\tZ (zombie)\n") is None  # a zombie has no memory fields
    assert status_mb("VmHWM:\tlots\n") is None
    assert status_mb("VmHWMX:\t10 kB\n") is None


def test_peak_of_a_live_process_is_at_least_what_it_touched() -> None:
    code = "b = bytearray(64 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096]); print(open('/proc/self/status').read())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    child_peak = status_mb(out)
    assert child_peak is not None and child_peak >= 64
    mine = peak_rss_mb(os.getpid())
    now = status_mb(Path("/proc/self/status").read_text(), "VmRSS")
    assert mine is not None and now is not None and mine >= now


def test_a_gone_process_has_no_peak() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert peak_rss_mb(proc.pid) is None


def test_budgets_judge_services_only() -> None:
    assert rss_budget("embed") == 200 and rss_budget("ingest") == 100
    peaks = {"ingest": 61.0, "embed": 240.0, "retrieve": 100.0, "postgres backend (largest)": 300.0, "bench": 500.0}
    assert over_rss_budget(peaks) == {"embed": 240.0}
    text = render_peak_rss(peaks)
    assert text.startswith("Peak resident memory (MB) per process: ingest 61, embed 240, retrieve 100,")
    assert text.endswith("Budget (embed <= 200, every other service <= 100): over: embed 240 > 200.")
    assert render_peak_rss({"ingest": 61.0, "nats": 20.0}).endswith("): met.")
    assert render_peak_rss({"nats": 20.0}) == "Peak resident memory (MB) per process: nats 20."
