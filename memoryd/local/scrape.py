"""Stable metrics ports for ``memoryd up`` and the Prometheus ``file_sd`` file that lists them.

Child ``i`` of the supervisor (in start order: ingest, extract, embed replicas, retrieve,
sleep) serves its metrics on ``base + i``, so the same options give the same ports on
every start and one scrape configuration keeps working. ``base`` 0 lets each child pick
a free port (what tests and benchmarks use). ``<data-dir>/prometheus-targets.json`` is a
``file_sd_configs`` file: one target group per service with ``job="memoryd-<service>"``,
the job names the compose and Kubernetes scrape configurations use.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from memoryd.errors import ConfigError
from memoryd.local.process import port_in_use

TARGETS_FILE = "prometheus-targets.json"
DEFAULT_METRICS_PORT = 9464


def targets_file(data_dir: Path) -> Path:
    return data_dir / TARGETS_FILE


def metrics_ports(base: int, labels: Sequence[str], host: str) -> list[int]:
    """``base + i`` for the ``i``-th child (all 0 when ``base`` is 0); a taken port names the flag."""
    if base == 0:
        return [0] * len(labels)
    ports = [base + i for i in range(len(labels))]
    if ports[-1] > 65535:
        raise ConfigError("--metrics-port", f"{base} + {len(labels) - 1} services is past port 65535")
    for label, port in zip(labels, ports, strict=True):
        if port_in_use(host, port):  # a scraped port of the last run in TIME_WAIT counts as free
            raise ConfigError(
                "--metrics-port",
                f"port {port} on {host} for {label} (--metrics-port {base} + {port - base}) is already in use;"
                " choose another base, or 0 for free ports",
            )
    return ports


def file_sd_groups(children: Sequence[tuple[str, str]]) -> list[dict[str, object]]:
    """``[(service, metrics url)]`` -> one ``file_sd`` target group per service, in start order."""
    groups: dict[str, list[str]] = {}
    for service, url in children:
        groups.setdefault(service, []).append(urlsplit(url).netloc)
    return [
        {"targets": targets, "labels": {"job": f"memoryd-{service}", "service": service}}
        for service, targets in groups.items()
    ]


def write_targets(data_dir: Path, children: Sequence[tuple[str, str]]) -> Path:
    """Write ``<data-dir>/prometheus-targets.json`` atomically (Prometheus re-reads it on change)."""
    path = targets_file(data_dir)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(file_sd_groups(children), indent=2) + "\n")
    tmp.replace(path)
    return path
