"""`memoryd up` as a user runs it: ready line, every service discoverable and healthy with a
metrics page on a stable port listed for Prometheus, clean Ctrl-C with no process left, a
second start on the same data keeping the NATS URL, the application's credentials and the
metrics ports, and bad configuration failing fast with the setting named."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from memoryd.local.process import free_port
from shared.service_names import BACKEND_SERVICES
from tests.support.ports import free_port_base

MEMORYD = [sys.executable, "-m", "memoryd.cli.main"]
SERVICES = BACKEND_SERVICES
pytestmark = pytest.mark.slow


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    return env | extra


def _start(data_dir: Path, port: int, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*MEMORYD, "up", "--data-dir", str(data_dir), "--nats-port", str(port), "--gateway-port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or _env(),
    )


def _ready_line(proc: subprocess.Popen[str], timeout: float = 60.0) -> dict[str, str]:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"memoryd up exited ({proc.wait()}): {err[-3000:]}")
        if line.startswith("memoryd ready "):
            return dict(f.split("=", 1) for f in line.split()[2:])
    raise AssertionError("no ready line")


def runtime_gateway(data: Path) -> str:
    return str(json.loads((data / "runtime.json").read_text())["gateway_url"])


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _stop(proc: subprocess.Popen[str], children: list[psutil.Process]) -> int:
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=60)
    _gone, alive = psutil.wait_procs(children, timeout=10)
    assert alive == [], f"left behind: {[p.cmdline() for p in alive]}"
    return code


async def _check_services(nats_url: str) -> None:
    import nats

    from memoryd.rpc import call
    from memoryd.schemas import HEALTH_OP
    from memoryd.schemas.ops import HealthRequest

    nc = await nats.connect(nats_url)
    try:
        for name in SERVICES:
            ping = json.loads((await nc.request(f"$SRV.PING.memoryd-{name}", b"", timeout=5)).data)
            assert ping["name"] == f"memoryd-{name}"
            health = await call(nc, HEALTH_OP, HealthRequest(), subject=f"mem.v1.rpc.health.{name}", timeout=5)
            assert health.service == name
            assert health.status == "ok", health.checks
            assert health.checks["nats"] == "ok" and health.checks["postgres"] == "ok"
    finally:
        await nc.close()


async def _check_client_permissions(client_url: str, bare_url: str) -> None:
    """The client credential may publish events and call client RPCs, nothing else."""
    import asyncio

    import nats

    from memoryd.connect import connect
    from shared.settings.env import NatsConfig

    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    with pytest.raises(Exception):  # noqa: B017 - no credentials: authorization violation
        await nats.connect(bare_url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=2)
    nc = await connect(NatsConfig(url=client_url), "perm-check", on_error=on_error)  # inbox from the URL's user
    try:
        ack = await nc.jetstream().publish(
            "mem.v1.events.chat", b'{"type":"mem.v1.chat_event"}', headers={"Nats-Msg-Id": "perm-check"}
        )
        assert ack.stream == "MEM_EVENTS"
        await nc.subscribe("mem.v1.jobs.>")
        await nc.flush()
        await nc.publish("$JS.API.CONSUMER.CREATE.MEM_JOBS", b"{}")
        await nc.publish("mem.v1.rpc.sleep.run", b"{}")
        await nc.flush()
        await asyncio.sleep(0.5)
    finally:
        await nc.close()
    joined = " | ".join(errors).lower()
    assert 'permissions violation for subscription to "mem.v1.jobs.>"' in joined, errors
    assert 'permissions violation for publish to "$js.api.consumer.create.mem_jobs"' in joined, errors
    assert 'permissions violation for publish to "mem.v1.rpc.sleep.run"' in joined, errors


async def _check_bound_client(data: Path) -> None:
    """`memoryd credentials add-client` on a running `memoryd up`: the new user works at once,
    for its owner only."""
    import asyncio

    def credentials(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*MEMORYD, "credentials", *args, "--data-dir", str(data)], capture_output=True, text=True, env=_env()
        )

    added = credentials("add-client", "app1", "--owner", "alice")
    assert added.returncode == 0, added.stderr
    assert "applied to the running nats-server" in added.stderr
    url = added.stdout.strip()
    assert url.startswith("nats://app1:")
    assert credentials("list").stdout.strip() == "app1\talice"
    refused = credentials("add-client", "app2", "--owner", "a.b")
    assert refused.returncode == 2 and "cannot be bound" in refused.stderr

    from memoryd import Forbidden, MemoryClient

    await asyncio.sleep(0.5)  # the reload is asynchronous in nats-server
    async with await MemoryClient.connect(url) as memory:
        own = await memory.retrieve("alice", "x")
        assert own.memories == [] and memory.access.role == "owner-bound"
        with pytest.raises(Forbidden, match=r"may not publish to mem\.v1\.rpc\.retrieve\.bob"):
            await memory.retrieve("bob", "x")
    assert credentials("remove-client", "app1").returncode == 0
    assert credentials("list").stdout.strip() == ""


def test_up_ready_healthy_and_clean_stop(tmp_path: Path) -> None:
    import asyncio

    data = tmp_path / "data"
    port = free_port()
    base = free_port_base(len(SERVICES) + 1)
    proc = _start(data, port, "--metrics-port", str(base))
    try:
        ready = _ready_line(proc)  # within its 60 s bound; start-up time is a benchmark, not a test
        assert ready["nats"] == f"nats://127.0.0.1:{port}"
        assert ready["credentials"] == str((data / "client.json").resolve())
        app_credentials = (data / "client.json").read_text()
        assert ready["postgres"].startswith("postgresql://postgres@127.0.0.1:")
        metrics = ready["metrics"].split(",")
        assert metrics == [f"http://127.0.0.1:{base + i}/metrics" for i in range(len(SERVICES) + 1)]  # + gateway
        assert runtime_gateway(data) == ready["gateway"] and ready["gateway"].startswith("http://127.0.0.1:")
        assert json.loads(urllib.request.urlopen(ready["gateway"] + "/healthz", timeout=5).read()) == {"status": "ok"}
        readyz = json.loads(urllib.request.urlopen(ready["gateway"] + "/readyz", timeout=30).read())
        assert readyz == {"status": "ready"}, readyz
        for url in metrics:
            body = urllib.request.urlopen(url, timeout=5).read().decode()
            assert "memoryd_up{" in body and "process_cpu_seconds_total" in body
        targets = json.loads((data / "prometheus-targets.json").read_text())
        assert targets == [
            {"targets": [f"127.0.0.1:{base + i}"], "labels": {"job": f"memoryd-{name}", "service": name}}
            for i, name in enumerate((*SERVICES, "gateway"))
        ]
        runtime = json.loads((data / "runtime.json").read_text())
        assert oct((data / "runtime.json").stat().st_mode & 0o777) == "0o600"
        assert oct((data / "credentials.json").stat().st_mode & 0o777) == "0o600"
        assert runtime["nats_url"].endswith("@" + ready["nats"].removeprefix("nats://"))
        asyncio.run(_check_services(runtime["nats_url"]))
        asyncio.run(_check_client_permissions(runtime["client_nats_url"], ready["nats"]))
        asyncio.run(_check_bound_client(data))
        children = _descendants(proc.pid)
        assert len(children) >= 7  # nats, postgres (+ its workers), five services
    except BaseException:
        proc.kill()
        raise
    assert _stop(proc, children) == 0
    assert not (data / "runtime.json").exists()
    steps = _steps(proc)
    assert steps["initdb"] == "new cluster" and re.fullmatch(r"\d+ applied", steps["migrations"]), steps
    assert steps["nats"] == ready["nats"] and steps["model"].endswith(".onnx"), steps
    model = steps["model"]
    assert {"postgres", "services", "discovery", "ready"} <= set(steps), steps

    # a second start on the same data dir keeps the data, the NATS URL, the application's
    # credentials and the metrics ports
    proc = _start(data, port, "--metrics-port", str(base))
    try:
        ready2 = _ready_line(proc)
        children = _descendants(proc.pid)
        assert ready2["nats"] == ready["nats"]
        assert (data / "client.json").read_text() == app_credentials
        asyncio.run(_check_application_after_restart(data / "client.json"))
    except BaseException:
        proc.kill()
        raise
    assert ready2["postgres"].endswith("/memoryd")
    assert ready2["metrics"] == ready["metrics"]
    assert _stop(proc, children) == 0
    steps = _steps(proc)
    assert (steps["initdb"], steps["migrations"], steps["model"]) == ("cluster exists", "up to date", model)


def _steps(proc: subprocess.Popen[str]) -> dict[str, str]:
    """The start steps ``memoryd up`` printed on stderr, each with its time: ``{step: detail}``."""
    assert proc.stderr is not None
    err = proc.stderr.read()
    done = dict(re.findall(r"^memoryd up: (\w+) done in \d+\.\d s(?: \((.*)\))?$", err, flags=re.M))
    services = re.findall(r"^memoryd up: service (\w+)-0 ready in \d+\.\d s$", err, flags=re.M)
    assert sorted(services) == sorted((*SERVICES, "gateway")), err
    assert re.search(r"^memoryd up: ready in \d+\.\d s$", err, flags=re.M), err
    return done | {"ready": "yes"}


async def _check_application_after_restart(credentials: Path) -> None:
    from memoryd import MemoryClient

    async with await MemoryClient.connect(credentials=credentials) as memory:
        assert (await memory.health()).status == "ok"
        assert (await memory.list("nobody")).total == 0


def test_port_in_use_fails_fast_naming_the_setting(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = subprocess.run(  # a taken port is an error naming the flag, never another port
            [
                *MEMORYD,
                "up",
                "--data-dir",
                str(tmp_path),
                "--nats-port",
                str(port),
                "--metrics-port",
                "0",
                "--gateway-port",
                "0",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=_env(),
        )
    assert result.returncode == 2
    assert "--nats-port" in result.stderr and "already in use" in result.stderr
    assert "Traceback" not in result.stderr


def test_metrics_port_in_use_fails_fast_naming_the_flag(tmp_path: Path) -> None:
    base = free_port_base(len(SERVICES) + 1)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", base + 2))  # embed's port
        sock.listen()
        result = subprocess.run(
            [
                *MEMORYD,
                "up",
                "--data-dir",
                str(tmp_path),
                "--nats-port",
                str(free_port()),
                "--metrics-port",
                str(base),
                "--gateway-port",
                "0",
            ],
            capture_output=True,
            text=True,
            timeout=90,
            env=_env(),
        )
    assert result.returncode == 2
    assert "--metrics-port" in result.stderr and f"port {base + 2}" in result.stderr and "embed-0" in result.stderr
    assert "already in use" in result.stderr and "Traceback" not in result.stderr


def test_unreachable_nats_fails_fast_naming_the_setting(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead_port = sock.getsockname()[1]
    env = _env(MEMORYD_NATS_URL=f"nats://127.0.0.1:{dead_port}", MEMORYD_PG_DSN="postgresql://x@127.0.0.1:1/x")
    result = subprocess.run(  # the timeout bounds "fast": it exits instead of retrying forever
        [sys.executable, "-m", "services.ingest"], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 2
    assert "MEMORYD_NATS_URL" in result.stderr and "Traceback" not in result.stderr


def test_unknown_setting_value_fails_fast(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "services.retrieve"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(MEMORYD_LOG_LEVEL="loud"),
    )
    assert result.returncode == 2
    assert "MEMORYD_LOG_LEVEL" in result.stderr and "Traceback" not in result.stderr


def test_unreachable_postgres_fails_fast_naming_the_setting() -> None:
    result = subprocess.run(
        [*MEMORYD, "migrate", "--dsn", "postgresql://x@127.0.0.1:1/x"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert result.returncode == 2
    assert "MEMORYD_PG_DSN" in result.stderr and "Traceback" not in result.stderr
