"""The alert rules and the Grafana dashboard, checked by a real Prometheus against a running
``memoryd up``.

promtool accepts the rules and the shipped scrape configurations. Prometheus, configured as
``deploy/prometheus/memoryd-up.yml`` (only faster), scrapes every service through the file_sd
targets file ``memoryd up`` writes and evaluates ``alerts.yml``: every rule evaluates without
error, every alert expression and every dashboard query evaluates through the HTTP API, and
every metric they name is a series some service serves once each kind of traffic went
through (a chat event, memories, a search with a tier fallback, a proxied chat call), so a
renamed or misspelt metric fails here instead of going silent in production.

Prometheus is Debian's ``prometheus`` package, which ``make test`` installs and requires
(``tests/support/prometheus.py``); the alerts' own unit tests are ``test_alert_rules.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml

from memoryd.local.process import free_port
from tests.support.fake_llm import FakeLlm
from tests.support.prometheus import ALERTS, PROMETHEUS_DIR, ROOT, prometheus_paths
from tests.support.up import RunningUp, clean_env, memoryd_cli, start_up

pytestmark = [pytest.mark.slow]

DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "memoryd.json"
JOBS = {f"memoryd-{n}" for n in ("ingest", "extract", "embed", "retrieve", "sleep", "gateway")}
#: Grafana's variables, as a query over the last minutes would fill them in
GRAFANA_VARS = {"$__rate_interval": "1m", "$__range": "5m", "$__interval": "15s"}
METRIC = re.compile(r"\b(memoryd_[a-z0-9_]+|up)\b(?!\s*\()")


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard_queries() -> list[str]:
    exprs: list[str] = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            exprs.extend(t["expr"] for t in panel.get("targets", []))
            walk(panel.get("panels", []))

    walk(json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"])
    for var, value in GRAFANA_VARS.items():
        exprs = [e.replace(var, value) for e in exprs]
    return exprs


def metric_names(expr: str) -> set[str]:
    """The series an expression selects (``up``, ``memoryd_*``), not its functions or labels."""
    without_labels = re.sub(r"\{[^}]*\}", "", expr)
    return set(METRIC.findall(without_labels))


def test_promtool_accepts_the_rules_and_the_scrape_configurations(tmp_path: Path) -> None:
    _prometheus, promtool = prometheus_paths()
    rules = subprocess.run([promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=60)
    assert rules.returncode == 0, rules.stdout + rules.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in rules.stdout
    for config in ("prometheus.yml", "memoryd-up.yml"):  # both load alerts.yml beside them
        assert yaml.safe_load((PROMETHEUS_DIR / config).read_text())["rule_files"] == ["alerts.yml"]
        out = subprocess.run(
            [promtool, "check", "config", str(PROMETHEUS_DIR / config)], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stdout + out.stderr


def test_missing_prometheus_fails_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_PROMETHEUS", "/nonexistent/prometheus")
    monkeypatch.setenv("MEMORYD_REQUIRE_PROMETHEUS", "1")
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y prometheus"):
        prometheus_paths()
    monkeypatch.delenv("MEMORYD_REQUIRE_PROMETHEUS")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="/nonexistent/prometheus"):
        prometheus_paths()


@dataclass
class Prometheus:
    url: str
    http: httpx.AsyncClient

    async def get(self, path: str, **params: Any) -> Any:
        reply = await self.http.get(f"{self.url}{path}", params=params)
        body = reply.json()
        assert reply.status_code == 200 and body["status"] == "success", (path, params, body)
        return body["data"]

    async def until(self, what: str, check: Any, timeout: float = 60.0) -> Any:
        """Poll ``check()`` (an awaitable factory) until it returns something truthy."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = await check()
            if last:
                return last
            await asyncio.sleep(0.5)
        raise AssertionError(f"Prometheus: {what} not within {timeout:.0f} s (last: {last})")


def prometheus_config(data_dir: Path) -> dict[str, Any]:
    """The shipped ``memoryd-up.yml`` with this run's targets file and rules, scraping every second."""
    config = yaml.safe_load((PROMETHEUS_DIR / "memoryd-up.yml").read_text(encoding="utf-8"))
    config["global"] |= {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(PROMETHEUS_DIR / f) for f in config["rule_files"]]
    (scrape,) = config["scrape_configs"]
    (file_sd,) = scrape["file_sd_configs"]
    assert file_sd["files"] == [".memoryd/prometheus-targets.json"]  # memoryd up's default data dir
    file_sd |= {"files": [str(data_dir / "prometheus-targets.json")], "refresh_interval": "1s"}
    return config


def start_prometheus(binary: str, config: Path, tmp_path: Path, port: int) -> subprocess.Popen[bytes]:
    with (tmp_path / "prometheus.log").open("wb") as log:
        return subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
async def prometheus(tmp_path: Path) -> AsyncIterator[tuple[Prometheus, RunningUp, FakeLlm]]:
    binary, _promtool = prometheus_paths()
    data = tmp_path / "data"
    async with FakeLlm() as llm:
        up = await asyncio.to_thread(start_up, data, env={"MEMORYD_GATEWAY_UPSTREAM_URL": llm.base_url})
        proc: subprocess.Popen[bytes] | None = None
        try:
            config = tmp_path / "prometheus.yml"
            config.write_text(yaml.safe_dump(prometheus_config(data)))
            port = free_port()
            proc = await asyncio.to_thread(start_prometheus, binary, config, tmp_path, port)
            async with httpx.AsyncClient(timeout=10.0) as http:
                prom = Prometheus(f"http://127.0.0.1:{port}", http)

                async def ready() -> bool:
                    if proc is not None and proc.poll() is not None:
                        raise AssertionError(f"prometheus exited: {(tmp_path / 'prometheus.log').read_text()[-3000:]}")
                    try:
                        return (await http.get(f"{prom.url}/-/ready")).status_code == 200
                    except httpx.HTTPError:
                        return False

                await prom.until("ready", ready, timeout=30)
                yield prom, up, llm
        finally:
            if proc is not None:
                await asyncio.to_thread(stop_process, proc)
            await asyncio.to_thread(up.stop)


async def drive_traffic(up: RunningUp, llm: FakeLlm) -> None:
    """One of each kind of traffic the rules and panels look at."""
    env = clean_env(MEMORYD_DATA_DIR=str(up.data_dir))
    created = await asyncio.to_thread(memoryd_cli, "keys", "create", "--owner", "alice", env=env)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    # a reranked search without an LLM falls back (memoryd_retrieve_fallbacks_total{reason="rerank_no_llm"})
    rerank = await asyncio.to_thread(memoryd_cli, "settings", "set", "rerank", "true", "--owner", "alice", env=env)
    assert rerank.returncode == 0, rerank.stderr
    gateway = up.ready["gateway"]
    async with httpx.AsyncClient(base_url=gateway, headers={"authorization": f"Bearer {key}"}, timeout=30) as http:
        event = {"messages": [{"role": "user", "content": "I prefer green tea in the morning."}]}
        assert (await http.post("/v1/events", json=event)).status_code == 202
        for text in ("Alice keeps her bike in the garage.", "Alice rides her bike to work."):
            made = await http.post("/v1/memories", json={"content": text})
            assert made.status_code == 200, made.text
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = await http.post("/v1/search", json={"query": "bike"})
            assert found.status_code == 200, found.text
            if len(found.json()["memories"]) >= 2:
                break
            await asyncio.sleep(0.5)
        else:
            raise AssertionError("the memories never became searchable")
    llm.reply_text("Tea it is.")
    sdk = openai.AsyncOpenAI(base_url=f"{gateway}/v1", api_key=key, max_retries=0)
    raw = await sdk.chat.completions.with_raw_response.create(
        model="fake", messages=[{"role": "user", "content": "What do I drink in the morning?"}]
    )
    assert raw.parse().choices[0].message.content == "Tea it is."


async def test_every_alert_and_dashboard_query_names_series_a_running_memoryd_serves(
    prometheus: tuple[Prometheus, RunningUp, FakeLlm],
) -> None:
    prom, up, llm = prometheus

    async def targets_up() -> set[str] | None:
        active = (await prom.get("/api/v1/targets"))["activeTargets"]
        jobs = {t["labels"]["job"] for t in active if t["health"] == "up"}
        return jobs if jobs == JOBS and all(t["health"] == "up" for t in active) else None

    await prom.until("every service scraped", targets_up)
    await drive_traffic(up, llm)

    async def scraped(query: str) -> list[Any]:
        return list((await prom.get("/api/v1/query", query=query))["result"])

    # the traffic has been scraped: the proxy's call and the search's fallback
    await prom.until("the proxied call", lambda: scraped('memoryd_proxy_upstream_duration_seconds_count{status="200"}'))
    await prom.until("the rerank fallback", lambda: scraped('memoryd_retrieve_fallbacks_total{reason="rerank_no_llm"}'))
    await prom.until("the consumers' lag", lambda: scraped("memoryd_stream_max_age_seconds"))
    versions = await scraped("count by (service) (memoryd_build_info)")
    assert {r["metric"]["service"] for r in versions} == {j.removeprefix("memoryd-") for j in JOBS}
    searches = await scraped('sum(memoryd_http_requests_total{route="/v1/search", status="200"})')
    assert float(searches[0]["value"][1]) >= 1

    async def rules_evaluated() -> list[dict[str, Any]] | None:
        rules = [r for g in (await prom.get("/api/v1/rules"))["groups"] for r in g["rules"]]
        done = all(not r["lastEvaluation"].startswith("0001-") for r in rules)
        return rules if rules and done else None

    rules = await prom.until("every rule evaluated", rules_evaluated)
    assert sorted(r["name"] for r in rules) == sorted(r["alert"] for r in alert_rules())
    assert [(r["name"], r["lastError"]) for r in rules if r["health"] != "ok"] == []

    exprs = [r["expr"] for r in alert_rules()] + dashboard_queries()
    missing: dict[str, set[str]] = {}
    start = time.time() - 600
    for expr in exprs:
        await prom.get("/api/v1/query", query=expr)  # evaluates (a bad expression is a 400)
        for name in metric_names(expr):
            if not await prom.get("/api/v1/series", **{"match[]": name, "start": start}):
                missing.setdefault(name, set()).add(expr)
    assert missing == {}, f"series no running service serves: {missing}"
    # not vacuous: the names were found in the expressions
    assert {"up", "memoryd_proxy_memory_total", "memoryd_queue_lag_messages"} <= set().union(
        *(metric_names(e) for e in exprs)
    )
