"""``memoryd up`` as a user runs it, for end-to-end tests: a subprocess on free ports, its
ready line parsed, stopped with Ctrl-C and checked to leave no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from memoryd.local.process import free_port

MEMORYD = [sys.executable, "-m", "memoryd.cli.main"]


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any ``MEMORYD_*`` variable, plus ``extra``."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")} | extra


@dataclass
class RunningUp:
    """A running ``memoryd up``: its data dir, NATS port, process and ready-line fields."""

    data_dir: Path
    nats_port: int
    proc: subprocess.Popen[str]
    ready: dict[str, str] = field(default_factory=dict)
    children: list[psutil.Process] = field(default_factory=list)

    @property
    def credentials(self) -> Path:
        return Path(self.ready["credentials"])

    def stop(self) -> int:
        """Ctrl-C, wait, and check nothing it started is left."""
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        _gone, alive = psutil.wait_procs(self.children, timeout=10)
        for p in alive:
            p.kill()
        assert alive == [], f"left behind: {[p.pid for p in alive]}"
        return code


def start_up(
    data_dir: Path,
    *args: str,
    nats_port: int | None = None,
    timeout: float = 90.0,
    env: Mapping[str, str] | None = None,
    command: Sequence[str] = MEMORYD,
    cwd: Path | None = None,
) -> RunningUp:
    """Start ``memoryd up`` (a free NATS port unless given, free metrics ports unless ``args``
    name ``--metrics-port``; ``env`` added to its environment; ``command`` another install's
    ``memoryd``, run in ``cwd``) and wait for its ready line."""
    port = nats_port or free_port()
    if "--metrics-port" not in args:
        args = (*args, "--metrics-port", "0")
    proc = subprocess.Popen(
        [*command, "up", "--data-dir", str(data_dir), "--nats-port", str(port), "--gateway-port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(**(env or {})),
        cwd=cwd,
    )
    up = RunningUp(data_dir=data_dir, nats_port=port, proc=proc)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                err = proc.stderr.read() if proc.stderr else ""
                raise AssertionError(f"memoryd up exited ({proc.wait()}): {err[-3000:]}")
            if line.startswith("memoryd ready "):
                up.ready = dict(f.split("=", 1) for f in line.split()[2:])
                up.children = psutil.Process(proc.pid).children(recursive=True)
                return up
        raise AssertionError("memoryd up printed no ready line")
    except BaseException:
        proc.kill()
        proc.wait()
        raise


def memoryd_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MEMORYD, *args], capture_output=True, text=True, timeout=timeout, env=env or clean_env())
