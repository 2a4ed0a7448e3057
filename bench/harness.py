"""Running memoryd for a benchmark: embedded servers, the services, CPU accounting.

``embedded_servers(dir)``: an embedded NATS (JetStream) and PostgreSQL in a temp dir with a fresh,
migrated ``memoryd`` database. ``ServiceStack(nats_url, pg_dsn, services, mode=...)``: the
services as child processes (``mode="processes"``, under the ``Supervisor`` exactly as ``memoryd
up`` runs them, each with its own CPU readable from ``/proc``) or as asyncio tasks in this process
(``mode="inprocess"``: fast start for tests); ``restart(name, env)`` restarts one service with
extra environment. ``cpu_seconds()`` reads the CPU time of each service, of PostgreSQL with its
backends (reaped ones included), of nats-server and of this process, so a benchmark reports CPU
per query by differences.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import asyncpg
import nats
from nats.aio.client import Client

from memoryd.local.nats import SYNC_ALWAYS, EmbeddedNats
from memoryd.local.postgres import EmbeddedPostgres
from shared.db.pool import create_pool
from shared.settings.env import PgConfig

#: The services a retrieval benchmark needs (sleep is off by default and not needed).
BENCH_SERVICES: tuple[str, ...] = ("ingest", "extract", "embed", "retrieve")
Mode = Literal["processes", "inprocess"]
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Servers:
    nats_url: str
    pg_dsn: str
    data_dir: Path
    pg_data: Path | None = None
    nats_dir: Path | None = None


@contextlib.asynccontextmanager
async def embedded_servers(
    data_dir: Path | None = None, *, database: str = "memoryd", nats_sync: str = SYNC_ALWAYS
) -> AsyncIterator[Servers]:
    """Embedded NATS (JetStream fsync policy ``nats_sync``, "always" as ``memoryd up`` runs it)
    + PostgreSQL (fsync off: a benchmark's data is disposable) in a temp dir."""
    from memoryd.local.up import apply_migrations, ensure_database

    with contextlib.ExitStack() as cleanup:
        if data_dir is None:
            data_dir = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="memoryd-bench-")))
        nats_srv = EmbeddedNats(data_dir / "nats", sync_interval=nats_sync)
        pg_srv = EmbeddedPostgres(data_dir / "pg")
        nats_url = nats_srv.start()
        cleanup.callback(nats_srv.stop)
        admin = pg_srv.start(fsync=False)
        cleanup.callback(pg_srv.stop)
        await ensure_database(admin, database)
        dsn = pg_srv.dsn(database)
        await apply_migrations(dsn)
        yield Servers(
            nats_url=nats_url, pg_dsn=dsn, data_dir=data_dir, pg_data=pg_srv.pgdata, nats_dir=data_dir / "nats"
        )


# --- CPU accounting ---------------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()  # fields from 3 (state) on


def proc_cpu(pid: int, *, with_reaped_children: bool = False) -> float:
    """utime+stime of ``pid`` in seconds (plus its waited-for children's when asked); 0 if gone."""
    f = _stat_fields(pid)
    if f is None:
        return 0.0
    ticks = int(f[11]) + int(f[12])  # utime, stime (fields 14, 15)
    if with_reaped_children:
        ticks += int(f[13]) + int(f[14])  # cutime, cstime
    return ticks / _TICK


def children_of(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (f := _stat_fields(int(entry))) is not None and int(f[1]) == pid:
            out.append(int(entry))
    return out


def postmaster_pid(pg_data: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int((pg_data / "postmaster.pid").read_text().splitlines()[0])
    return None


def pids_with_arg(needle: str) -> list[int]:
    """Processes whose command line contains ``needle`` (e.g. a data directory path)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if needle.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    out.append(int(entry))
    return out


def self_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def servers_cpu(
    pg_data: Path | None, nats_dir: Path | None, *, nats_file: str | None = "nats.conf"
) -> dict[str, float]:
    """CPU seconds of PostgreSQL (the postmaster with all its backends, reaped ones included)
    and of nats-server (processes whose command line holds ``nats_dir / nats_file``, or
    ``nats_dir`` when ``nats_file`` is None); a key only for a server that is there."""
    out: dict[str, float] = {}
    pm = postmaster_pid(pg_data) if pg_data is not None else None
    if pm is not None:
        out["postgres"] = proc_cpu(pm, with_reaped_children=True) + sum(proc_cpu(c) for c in children_of(pm))
    if nats_dir is not None:
        needle = nats_dir / nats_file if nats_file is not None else nats_dir
        out["nats"] = sum(proc_cpu(p) for p in pids_with_arg(str(needle)))
    return out


def status_mb(status: str, field: str = "VmHWM") -> float | None:
    """A ``kB`` field of a ``/proc/<pid>/status`` text in MB (one decimal); None if absent
    (a zombie has no memory fields) or unreadable."""
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == field:
            parts = value.split()
            if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
                return round(int(parts[0]) / 1024, 1)
            return None
    return None


def peak_rss_mb(pid: int) -> float | None:
    """The process's peak resident memory so far (``VmHWM``) in MB; None if it is gone."""
    try:
        return status_mb(Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return None


def servers_peak_rss(
    pg_data: Path | None, nats_dir: Path | None, nats_file: str | None = "nats.conf"
) -> dict[str, float]:
    """Peak RSS in MB of the postmaster, of its largest backend (shared buffers count in each
    backend that touched them) and of nats-server; a key only for what is there."""
    out: dict[str, float] = {}
    pm = postmaster_pid(pg_data) if pg_data is not None else None
    if pm is not None:
        if (main := peak_rss_mb(pm)) is not None:
            out["postgres"] = main
        backends = [r for c in children_of(pm) if (r := peak_rss_mb(c)) is not None]
        if backends:
            out["postgres backend (largest)"] = max(backends)
    if nats_dir is not None:
        needle = nats_dir / nats_file if nats_file is not None else nats_dir
        found = [r for p in pids_with_arg(str(needle)) if (r := peak_rss_mb(p)) is not None]
        if found:
            out["nats"] = max(found)
    return out


# --- services ---------------------------------------------------------------------------------


@contextlib.contextmanager
def patched_environ(extra: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` with ``extra`` while a service's ``setup`` reads its settings."""
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@dataclass
class ServiceStack:
    """The services of a benchmark, started by ``async with``."""

    nats_url: str
    pg_dsn: str
    services: Sequence[str] = BENCH_SERVICES
    mode: Mode = "processes"
    env: dict[str, str] = field(default_factory=dict)
    log_dir: Path | None = None
    servers: Servers | None = None
    nc: Client = field(init=False)
    pool: asyncpg.Pool = field(init=False)
    _running: dict[str, contextlib.AsyncExitStack] = field(init=False, default_factory=dict)
    _pids: dict[str, int] = field(init=False, default_factory=dict)

    async def __aenter__(self) -> ServiceStack:
        if self.log_dir is None and self.servers is not None:
            self.log_dir = self.servers.data_dir / "logs"
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        self.nc = await nats.connect(self.nats_url, name="memoryd-bench", max_reconnect_attempts=-1)
        self.pool = await create_pool(PgConfig(dsn=self.pg_dsn, pool_min=1, pool_max=8))
        try:
            for name in self.services:
                await self.start(name)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        for name in reversed(list(self._running)):
            await self.stop(name)
        with contextlib.suppress(Exception):
            await self.pool.close()
        with contextlib.suppress(Exception):
            await self.nc.close()

    def _env(self, extra: Mapping[str, str]) -> dict[str, str]:
        return {
            "MEMORYD_NATS_URL": self.nats_url,
            "MEMORYD_PG_DSN": self.pg_dsn,
            "MEMORYD_METRICS_PORT": "0",
            "MEMORYD_LOG_LEVEL": "warning",
            **self.env,
            **extra,
        }

    async def start(self, name: str, extra_env: Mapping[str, str] | None = None) -> None:
        env = self._env(extra_env or {})
        stack = contextlib.AsyncExitStack()
        try:
            if self.mode == "processes":
                await self._start_process(stack, name, env)
            else:
                await self._start_inprocess(stack, name, env)
        except BaseException:
            await stack.aclose()
            raise
        self._running[name] = stack

    async def _start_process(self, stack: contextlib.AsyncExitStack, name: str, env: dict[str, str]) -> None:
        from memoryd.local.supervisor import Supervisor, child_env

        sup = Supervisor(child_env(env))
        log_path = self.log_dir / f"{name}.log" if self.log_dir else None
        child = sup.add(name, 0, log_path=log_path)
        stack.push_async_callback(sup.stop_all)
        await sup.start_all(timeout=120)
        assert child.proc is not None
        self._pids[name] = child.proc.pid

    async def _start_inprocess(self, stack: contextlib.AsyncExitStack, name: str, env: dict[str, str]) -> None:
        from tests.support.stack import run_services, service_config

        config = service_config(env["MEMORYD_NATS_URL"], env["MEMORYD_PG_DSN"], env)
        with patched_environ(env):
            await stack.enter_async_context(run_services([name], config, timeout=120))

    async def stop(self, name: str) -> None:
        stack = self._running.pop(name, None)
        self._pids.pop(name, None)
        if stack is not None:
            await stack.aclose()

    async def restart(self, name: str, extra_env: Mapping[str, str] | None = None) -> None:
        """Stop ``name`` and start it again with ``extra_env`` on top of the stack's env."""
        await self.stop(name)
        await self.start(name, extra_env)

    async def stop_embedding(self) -> None:
        """Stop the embed service and restart retrieve without its own query-vector cache (for
        the rest of the stack's life), so that no query finds a vector and hybrid runs on full
        text alone: the benchmarks' keyword-only strategy."""
        await self.stop("embed")
        self.env["MEMORYD_RETRIEVE_QUERY_CACHE_SIZE"] = "0"
        await self.restart("retrieve")

    def peak_rss_mb(self) -> dict[str, float]:
        """Peak resident memory (MB) so far per service process, of the servers and of this
        process (which holds the services in ``inprocess`` mode)."""
        out = {name: r for name, pid in self._pids.items() if (r := peak_rss_mb(pid)) is not None}
        if self.servers is not None:
            out |= servers_peak_rss(self.servers.pg_data, self.servers.nats_dir)
        out["bench"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        return out

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds used so far per service process, by PostgreSQL, nats-server and this process.

        In ``inprocess`` mode the services' CPU is part of ``bench`` (this process).
        """
        out = {name: proc_cpu(pid) for name, pid in self._pids.items()}
        if self.servers is not None:
            out |= servers_cpu(self.servers.pg_data, self.servers.nats_dir)
        out["bench"] = self_cpu()
        return out


def cpu_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    return {k: round(after.get(k, 0.0) - before.get(k, 0.0), 4) for k in after}


async def wait_until(check: Any, timeout: float, interval: float = 0.25, what: str = "condition") -> None:
    """Poll the async ``check()`` until it returns truthy; ``TimeoutError`` naming ``what``."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if await check():
            return
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{what} not reached within {timeout:.0f} s")
        await asyncio.sleep(interval)


@contextlib.asynccontextmanager
async def servers_and_stack(**stack: Any) -> AsyncIterator[tuple[Servers, ServiceStack]]:
    """``embedded_servers()`` and a ``ServiceStack`` on them (``stack``: its keyword fields,
    e.g. ``services``, ``mode``, ``log_dir``), stopped in reverse order."""
    async with (
        embedded_servers() as servers,
        ServiceStack(servers.nats_url, servers.pg_dsn, servers=servers, **stack) as running,
    ):
        yield servers, running
