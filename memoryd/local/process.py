"""Child processes that die with their parent, waiting for a TCP port, starting on a free one."""

from __future__ import annotations

import contextlib
import ctypes
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` asking Linux to send ``sig`` to the child when its parent dies."""

    def _set() -> None:
        with contextlib.suppress(OSError):  # not Linux: the supervisor's own shutdown still stops children
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)

    return _set


def spawn(argv: list[str], *, death_signal: int = signal.SIGTERM, **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start a child in its own session that gets ``death_signal`` if its parent dies first.

    Its own session keeps a terminal's Ctrl-C (sent to the whole foreground group) away
    from it, so the supervisor stops things in order. Call from the main thread: Linux
    sends the parent-death signal when the *thread* that forked exits.
    """
    return subprocess.Popen(argv, preexec_fn=die_with_parent(death_signal), start_new_session=True, **kwargs)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_in_use(host: str, port: int) -> bool:
    """True when something listens on ``host:port`` (a port in TIME_WAIT after a restart is free,
    as for the servers, which listen with SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def wait_for_port(host: str, port: int, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> bool:
    """Poll until ``host:port`` accepts TCP (False on timeout or if ``proc`` exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.01)
    return False


def stop_process(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 10.0) -> int | None:
    """Signal ``proc``, wait, kill if it lingers; return its exit code."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return proc.returncode


def start_on_free_port(start_once: Callable[[], bool], *, fixed_port: bool, attempts: int = 3) -> bool:
    """Call ``start_once`` until it reports a started server: up to ``attempts`` times, since a
    port found free can be taken before the server binds it (each call picks a new one), or
    once for a port the user asked for. False when no attempt started it."""
    # imported here: tenacity comes with the ``server`` extra, and the client-only install's
    # command line imports this module (``port_in_use``)
    from tenacity import Retrying, retry_if_result, stop_after_attempt

    retrying = Retrying(
        stop=stop_after_attempt(1 if fixed_port else attempts),
        retry=retry_if_result(lambda started: not started),
        retry_error_callback=lambda _state: False,
    )
    return bool(retrying(start_once))
