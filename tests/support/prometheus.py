"""Debian's Prometheus and promtool for the tests of the alert rules and the dashboard.

``MEMORYD_PROMETHEUS`` overrides the path (promtool is found beside it). Without them the
tests skip locally and fail when ``MEMORYD_REQUIRE_PROMETHEUS`` (``make test`` sets it) or
``CI`` is set, so the checks never pass silently where they are required.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS_DIR = ROOT / "deploy" / "prometheus"
ALERTS = PROMETHEUS_DIR / "alerts.yml"


def prometheus_paths() -> tuple[str, str]:
    """Prometheus and promtool, or skip (fail when they are required) saying how to install them."""
    wanted = os.environ.get("MEMORYD_PROMETHEUS", "/usr/bin/prometheus")
    found = shutil.which(wanted) or (wanted if os.access(wanted, os.X_OK) else None)
    promtool = str(Path(found).with_name("promtool")) if found else None
    if found is None or promtool is None or not os.access(promtool, os.X_OK):
        message = f"the alert and dashboard checks need {wanted} and promtool: as root `apt-get install -y prometheus`"
        if os.environ.get("MEMORYD_REQUIRE_PROMETHEUS") or os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found, promtool
