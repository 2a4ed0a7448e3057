"""`memoryd up`'s stable metrics ports and the Prometheus file_sd file that lists them."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml

from memoryd.errors import ConfigError
from memoryd.local.scrape import TARGETS_FILE, file_sd_groups, metrics_ports, write_targets
from tests.support.ports import free_port_base

ROOT = Path(__file__).resolve().parents[3]


def test_children_get_base_plus_index_and_zero_means_free_ports() -> None:
    base = free_port_base(3)
    assert metrics_ports(base, ["ingest-0", "embed-0", "embed-1"], "127.0.0.1") == [base, base + 1, base + 2]
    assert metrics_ports(0, ["ingest-0", "embed-0"], "127.0.0.1") == [0, 0]


def test_a_taken_port_names_the_flag_the_port_and_the_service() -> None:
    base = free_port_base(2)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", base + 1))
        sock.listen()
        with pytest.raises(ConfigError) as err:
            metrics_ports(base, ["ingest-0", "extract-0"], "127.0.0.1")
    assert err.value.setting == "--metrics-port"
    assert f"port {base + 1}" in err.value.description and "extract-0" in err.value.description
    assert "already in use" in err.value.description


def test_a_base_too_high_for_every_service_is_refused() -> None:
    with pytest.raises(ConfigError, match="65535"):
        metrics_ports(65534, ["a", "b", "c"], "127.0.0.1")


def test_one_target_group_per_service_with_its_job(tmp_path: Path) -> None:
    children = [
        ("ingest", "http://127.0.0.1:9464/metrics"),
        ("embed", "http://127.0.0.1:9465/metrics"),
        ("embed", "http://127.0.0.1:9466/metrics"),
    ]
    assert file_sd_groups(children) == [
        {"targets": ["127.0.0.1:9464"], "labels": {"job": "memoryd-ingest", "service": "ingest"}},
        {"targets": ["127.0.0.1:9465", "127.0.0.1:9466"], "labels": {"job": "memoryd-embed", "service": "embed"}},
    ]
    path = write_targets(tmp_path, children)
    assert path == tmp_path / TARGETS_FILE
    assert json.loads(path.read_text()) == file_sd_groups(children)
    assert [p.name for p in tmp_path.iterdir()] == [TARGETS_FILE]


def test_the_local_prometheus_config_reads_the_file_memoryd_up_writes() -> None:
    cfg = yaml.safe_load((ROOT / "deploy" / "prometheus" / "memoryd-up.yml").read_text())
    (job,) = cfg["scrape_configs"]
    assert job["file_sd_configs"][0]["files"] == [f".memoryd/{TARGETS_FILE}"]
