"""Supervising service child processes: start, wait for ready, restart on crash, stop.

Each child is ``python -m services.<name>``; it prints
``memoryd service ready name=<name> metrics=<url>`` on stdout once it serves. Children
get SIGTERM if the supervisor dies (Linux parent-death signal), so nothing is orphaned.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.local.process import die_with_parent
from shared.observability.logging import get_logger

log = get_logger(__name__)
READY_PREFIX = "memoryd service ready "


@dataclass
class Child:
    name: str  # the service
    index: int  # replica number
    env: dict[str, str]
    log_path: Path | None = None
    proc: asyncio.subprocess.Process | None = None
    metrics_url: str = ""
    fields: dict[str, str] = field(default_factory=dict)  # every key=value of its ready line
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    restarts: int = 0
    started_at: float = 0.0
    ready_at: float = 0.0  # when its ready line came (monotonic)

    @property
    def label(self) -> str:
        return f"{self.name}-{self.index}"


def parse_ready(line: str) -> dict[str, str]:
    """``memoryd service ready name=x metrics=y`` -> ``{"name": "x", "metrics": "y"}``."""
    fields = line.removeprefix(READY_PREFIX).split()
    return dict(f.split("=", 1) for f in fields if "=" in f)


class Supervisor:
    """Runs children, restarts a child that exits on its own, stops them all on request."""

    def __init__(self, base_env: Mapping[str, str], on_ready: Callable[[Child], None] | None = None) -> None:
        self.base_env = dict(base_env)
        self.on_ready = on_ready  # told of each ready line (the first start's and every restart's)
        self.children: list[Child] = []
        self._stopping = False
        self._watchers: list[asyncio.Task[None]] = []

    def add(
        self, name: str, index: int = 0, env: Mapping[str, str] | None = None, log_path: Path | None = None
    ) -> Child:
        child = Child(name=name, index=index, env={**self.base_env, **(env or {})}, log_path=log_path)
        self.children.append(child)
        return child

    async def _spawn(self, child: Child) -> None:
        child.ready.clear()
        stderr = child.log_path.open("ab") if child.log_path else None
        child.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            f"services.{child.name}",
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=child.env,
            preexec_fn=die_with_parent(signal.SIGTERM),
            start_new_session=True,
        )
        if stderr:
            stderr.close()
        child.started_at = time.monotonic()
        self._watchers.append(asyncio.create_task(self._read_stdout(child, child.proc)))

    async def _read_stdout(self, child: Child, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            line = raw.decode(errors="replace").strip()
            if line.startswith(READY_PREFIX):
                child.fields = parse_ready(line)
                child.metrics_url = child.fields.get("metrics", "")
                child.ready_at = time.monotonic()
                child.ready.set()
                if self.on_ready is not None:
                    self.on_ready(child)

    async def start_all(self, timeout: float = 60.0) -> None:
        """Start every child; return once all printed their ready line."""
        for child in self.children:
            await self._spawn(child)
            self._watchers.append(asyncio.create_task(self._watch(child)))
        waits = [asyncio.create_task(c.ready.wait()) for c in self.children]
        _done, pending = await asyncio.wait(waits, timeout=timeout)
        if pending:
            for task in pending:
                task.cancel()
            late = [c.label for c in self.children if not c.ready.is_set()]
            raise RuntimeError(f"services not ready after {timeout:.0f} s: {', '.join(late)} (see their logs)")

    async def _watch(self, child: Child) -> None:
        """Restart a child that exits while we are not stopping (backoff up to 30 s)."""
        while True:
            assert child.proc is not None
            code = await child.proc.wait()
            if self._stopping:
                return
            child.restarts += 1
            uptime = time.monotonic() - child.started_at
            delay = 0.5 if uptime > 30 else min(30.0, 0.5 * 2 ** min(child.restarts, 6))
            log.warning("supervisor.child_exited", child=child.label, code=code, restart_in_s=delay)
            await asyncio.sleep(delay)
            if self._stopping:
                return
            await self._spawn(child)

    async def stop_all(self, timeout: float = 20.0) -> None:
        """SIGTERM every child, wait for them, SIGKILL stragglers."""
        self._stopping = True
        for child in self.children:
            if child.proc and child.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.proc.send_signal(signal.SIGTERM)
        procs = [c.proc for c in self.children if c.proc]
        waits = [asyncio.create_task(p.wait()) for p in procs]
        if waits:
            _done, pending = await asyncio.wait(waits, timeout=timeout)
            for proc in procs:
                if proc.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
            if pending:
                await asyncio.wait(pending, timeout=5)
        for watcher in self._watchers:
            watcher.cancel()


def child_env(extra: Mapping[str, str]) -> dict[str, str]:
    """This process's environment plus ``extra`` (children inherit PATH, HOME, ...)."""
    return {**os.environ, **extra}
